package schedbench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// TestConfig loads each scheduler's config the way kube-scheduler loads
// --config: the two must differ only in SnapshotTopology.
func TestConfig(t *testing.T) {
	for _, s := range both {
		t.Run(s.Binary, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(s.configYAML("/kubeconfig")), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := options.LoadConfigFromFile(logger, path)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
				t.Fatalf("validating: %v", err)
			}
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != s.profileName() {
				t.Fatalf("profiles = %+v, want one named %s", cfg.Profiles, s.profileName())
			}
			enabled := slices.ContainsFunc(cfg.Profiles[0].Plugins.MultiPoint.Enabled,
				func(p config.Plugin) bool { return p.Name == "SnapshotTopology" })
			if enabled != s.Plugin {
				t.Errorf("SnapshotTopology enabled = %v, want %v", enabled, s.Plugin)
			}
			if c := cfg.ClientConnection; c.QPS != 5000 || c.Burst != 5000 || c.Kubeconfig != "/kubeconfig" {
				t.Errorf("client connection = %+v", c)
			}
		})
	}
}
