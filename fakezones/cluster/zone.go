package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// Zone outages. "zone down" takes a zone down the way a site fails: the
// driver controller gets an outage rule (driver/faults, action.outage) in
// its outage fault file, a second --fault-rules file in the work
// directory that the controller re-reads on its own, so the zone's
// volumes turn INACCESSIBLE and nothing is placed there; and the zone's
// kwok nodes turn NotReady: they get ZoneDownLabel, which kwok is told to
// leave the status of alone (--disregard-status-with-label-selector), and
// a Ready condition False, on which the node lifecycle controller taints
// them. "zone up" removes both: kwok's node-initialize stage then makes
// the nodes Ready again. The user's own fault file (--driver-fault-rules)
// is never written: a tool must not edit its input, and a rewrite would
// restart the nth/count windows of the user's rules.

// ZoneDownLabel marks a node of a zone that is down; kwok leaves the
// status of such nodes alone.
const ZoneDownLabel = "zonepath-cluster.zonepath.csi.dev/zone-down"

// ZoneDownReason is the reason of the Ready condition of a node whose
// zone is down.
const ZoneDownReason = "ZoneDown"

// outageRulePrefix names the fault rules zone down writes, one per zone,
// so that zone up removes only its zone's.
const outageRulePrefix = "zonepath-cluster-zone-down-"

// SetZone takes a zone of the running cluster in dir down (down) or
// brings it back up. Both are idempotent: a zone already in that state is
// said so and put in it again, which also repairs a half-done earlier
// call. It returns once the controller has re-read its rules and the
// nodes show the new state.
func SetZone(ctx context.Context, dir, zone string, down bool, out io.Writer) error {
	s, z, err := setOutageRule(ctx, dir, zone, down, out)
	if err != nil {
		return err
	}
	nodes, err := zoneNodes(dir, z)
	if err != nil {
		return err
	}
	kube, err := kubeClient(s.Kubeconfig)
	if err != nil {
		return err
	}
	if err := setNodes(ctx, kube, nodes, down); err != nil {
		return err
	}
	fmt.Fprintf(out, "zone %s: %d nodes %s\n", z.ID(), len(nodes), map[bool]string{true: "NotReady", false: "Ready"}[down])
	return nil
}

// setOutageRule is SetZone's part in the driver: it writes or removes the
// zone's outage rule in the cluster's outage file and waits for the
// controller to re-read it.
func setOutageRule(ctx context.Context, dir, zone string, down bool, out io.Writer) (*State, world.ZoneInfo, error) {
	s, err := runningState(dir)
	if err != nil {
		return nil, world.ZoneInfo{}, err
	}
	path, err := outageRules(s)
	if err != nil {
		return nil, world.ZoneInfo{}, err
	}
	z, seg, err := findZone(dir, zone)
	if err != nil {
		return nil, world.ZoneInfo{}, err
	}
	// Counted before the edit: a reload that comes between the edit and
	// the count would otherwise be missed, and the wait would time out.
	waitReload := reloadWaiter((&workDir{dir: dir}).log("zonepath-controller"), out)
	changed, err := editOutageRules(path, z.ID(), seg, down)
	if err != nil {
		return nil, world.ZoneInfo{}, err
	}
	word := map[bool]string{true: "down", false: "up"}[down]
	if !changed {
		fmt.Fprintf(out, "zone %s: already %s in the driver's outage rules\n", z.ID(), word)
		return s, z, nil
	}
	fmt.Fprintf(out, "zone %s: %s the outage rule in %s\n", z.ID(), map[bool]string{true: "wrote", false: "removed"}[down], path)
	return s, z, waitReload(ctx)
}

// runningState is the state of a running cluster whose controller runs.
func runningState(dir string) (*State, error) {
	s, err := ReadState(dir)
	if err != nil {
		return nil, err
	}
	if s == nil || len(s.Running()) == 0 {
		return nil, fmt.Errorf("no cluster is running in %s; start one with up", dir)
	}
	if p, err := s.Process("zonepath-controller"); err != nil || !p.Alive() {
		return nil, fmt.Errorf("the zonepath controller of the cluster in %s does not run", dir)
	}
	return s, nil
}

// legacyOutageRules is the fault file that up gave a controller before
// OutageRules, when --driver-fault-rules named none.
func legacyOutageRules(dir string) string {
	return (&workDir{dir: dir}).path("driver", "fault-rules.yaml")
}

// outageRules is the fault file of s's controller that SetZone writes:
// its outage file. A cluster started before there was one (no
// OutageRules in its state) read only DriverFaultRules: that file is still
// written when it is the work directory's own, never when it is the
// user's; such a cluster must be started again to take its zones down.
func outageRules(s *State) (string, error) {
	switch {
	case s.OutageRules != "":
		return s.OutageRules, nil
	case s.DriverFaultRules == legacyOutageRules(s.WorkDir):
		return s.DriverFaultRules, nil
	case s.DriverFaultRules != "":
		return "", fmt.Errorf("the cluster in %s was started by an older zonepath-cluster, whose controller reads outage rules only from your fault file %s, which zone down does not edit; start the cluster again with this version's up", s.WorkDir, s.DriverFaultRules)
	}
	return "", fmt.Errorf("the cluster in %s was started without a driver fault file, so its zones cannot go down; start it again with this version's up", s.WorkDir)
}

// findZone resolves a zone name ("zone-b" or "region-1/zone-b") in the
// driver's topology, and the segment its outage rule matches.
func findZone(dir, name string) (world.ZoneInfo, map[string]string, error) {
	topo, err := world.Load((&workDir{dir: dir}).path("driver", "topology.yaml"))
	if err != nil {
		return world.ZoneInfo{}, nil, err
	}
	i, err := topo.FindZone(name)
	if err != nil {
		var ids []string
		for _, z := range topo.Zones {
			ids = append(ids, z.ID())
		}
		return world.ZoneInfo{}, nil, fmt.Errorf("%w (zones: %s)", err, strings.Join(ids, ", "))
	}
	return topo.Zones[i], topo.Segment(i), nil
}

// editOutageRules adds or removes the outage rule of zone in the outage
// file, keeping the other zones' rules, and replaces the file atomically,
// as a driver's fault file must be. It reports whether the file changed.
// The file is the cluster's own: it is re-marshalled, so it must never be
// a file of the user's.
func editOutageRules(path, zoneID string, seg map[string]string, down bool) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("driver outage rules: %w", err)
	}
	rs, err := faults.Parse(data)
	if err != nil {
		return false, fmt.Errorf("driver outage rules %s: %w", path, err)
	}
	name := outageRulePrefix + strings.ReplaceAll(zoneID, "/", "-")
	at := slices.IndexFunc(rs.Rules, func(r faults.Rule) bool { return r.Name == name })
	switch {
	case down && at >= 0, !down && at < 0:
		return false, nil
	case down:
		rs.Rules = append(rs.Rules, faults.Rule{Name: name, Match: faults.Match{Segment: seg}, Action: faults.Action{Outage: true}})
	default:
		rs.Rules = slices.Delete(rs.Rules, at, at+1)
	}
	if rs.Rules == nil {
		rs.Rules = []faults.Rule{} // "rules: []": an empty file is refused
	}
	data, err = yaml.Marshal(struct {
		Rules []faults.Rule `json:"rules"`
	}{rs.Rules})
	if err != nil {
		return false, err
	}
	if _, err := faults.Parse(data); err != nil {
		return false, fmt.Errorf("the rewritten fault rules do not load: %w", err)
	}
	tmp := path + ".zonepath-cluster.tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// reloadLine is what the driver logs when it has re-read its fault file
// (faults.Injector.Watch).
const reloadLine = "Reloaded fault rules"

// ControllerLog is the log of the zonepath controller of the cluster in
// dir, where it logs each fault it injects (driver/faults) at -v=2.
func ControllerLog(dir string) string { return (&workDir{dir: dir}).log("zonepath-controller") }

// FaultReloadWaiter is reloadWaiter for the zonepath controller of the
// cluster in dir, for a tool that rewrites the cluster's
// --driver-fault-rules file (the conformance matrix).
func FaultReloadWaiter(dir string) func(context.Context) error {
	return reloadWaiter(ControllerLog(dir), io.Discard)
}

// reloadWaiter counts the reloads in the controller's log now and returns
// a wait until the log shows one more, so that the rules are in force
// when zone down returns.
func reloadWaiter(logPath string, out io.Writer) func(context.Context) error {
	count := func() int {
		data, _ := os.ReadFile(logPath)
		return strings.Count(string(data), reloadLine)
	}
	before := count()
	return func(ctx context.Context) error {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return count() > before, nil
		})
		if err != nil {
			return fmt.Errorf("the zonepath controller did not re-read its fault rules within 30s (see %s): %w", logPath, err)
		}
		fmt.Fprintln(out, "zonepath controller: re-read its fault rules")
		return nil
	}
}

// zoneNodes are the cluster's nodes in zone z.
func zoneNodes(dir string, z world.ZoneInfo) ([]string, error) {
	cl, err := spec.Load((&workDir{dir: dir}).path("cluster.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range cl.Nodes {
		if n.Zone == z.Name && n.Region == z.Region {
			out = append(out, n.Name)
		}
	}
	return out, nil
}

func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// setNodes labels the nodes and sets their Ready condition (down), or
// takes the label off and waits for kwok to make them Ready (up).
func setNodes(ctx context.Context, kube kubernetes.Interface, nodes []string, down bool) error {
	label := map[string]any{ZoneDownLabel: nil}
	if down {
		label[ZoneDownLabel] = "true"
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": label}})
	for _, n := range nodes {
		if _, err := kube.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
		if down {
			if err := setNotReady(ctx, kube, n); err != nil {
				return err
			}
		}
	}
	want := map[bool]v1.ConditionStatus{true: v1.ConditionFalse, false: v1.ConditionTrue}[down]
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node, err := kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || readyStatus(node) != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("nodes %s: Ready not %s within 60s: %w", strings.Join(nodes, ", "), want, err)
	}
	return nil
}

// setNotReady sets a node's Ready condition False, as a kubelet that
// lost its storage would report; the other conditions stay.
func setNotReady(ctx context.Context, kube kubernetes.Interface, name string) error {
	now := metav1.Now()
	cond := v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: ZoneDownReason,
		Message: "zonepath-cluster zone down: the node's zone is down", LastHeartbeatTime: now, LastTransitionTime: now,
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{cond}}})
	_, err := kube.CoreV1().Nodes().PatchStatus(ctx, name, patch)
	if err != nil {
		return fmt.Errorf("node %s: setting Ready False: %w", name, err)
	}
	return nil
}

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

// outageRules is the controller's outage file (zone.go).
func (u *up) outageRules() string { return u.w.path("driver", "outage-rules.yaml") }

// faultFile gives the controller its outage file, without rules, so that
// any cluster's zones can go down, whatever fault file the user gave.
func (u *up) faultFile() error {
	return os.WriteFile(u.outageRules(), []byte("rules: []\n"), 0o644)
}
