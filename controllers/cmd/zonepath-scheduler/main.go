// Command zonepath-scheduler is kube-scheduler with the SnapshotTopology
// plugin of KEP-5943 registered. It takes kube-scheduler's flags; enable
// the plugin in a KubeSchedulerConfiguration (see
// controllers/scheduler/README.md) and turn the feature on with
// --feature-gates=VolumeSnapshotTopology=true.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, as kube-scheduler
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Registers VolumeSnapshotTopology in the gate --feature-gates parses.
	_ "github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/scheduler/snapshottopology"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(snapshottopology.Name, snapshottopology.New))
	cmd.Use = "zonepath-scheduler"
	os.Exit(cli.Run(cmd))
}
