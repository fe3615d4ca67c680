package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/zonepath/zonepath/driver/world"
)

const minimal = `kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
  extraMounts:
  - hostPath: _output/kind/data
    containerPath: /var/lib/zonepath
  - hostPath: /abs
    containerPath: /abs
`

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"unknown key", strings.Replace(minimal, "extraMounts", "extraMount", 1), `unknown field "extraMount"`},
		{"wrong kind", strings.Replace(minimal, "kind: Cluster", "kind: Clusters", 1), `want kind Cluster`},
		{"wrong apiVersion", strings.Replace(minimal, "v1alpha4", "v1alpha3", 1), `apiVersion "kind.x-k8s.io/v1alpha3"`},
		{"no nodes", "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n", "nodes: at least one node"},
		{"not yaml", "nodes: [", "c.yaml: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "c.yaml: ") {
				t.Fatalf("Parse() error = %v, want one starting with c.yaml: and containing %q", err, tc.want)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	const wrapper = "/usr/local/libexec/zonepath/runc-drop-missing-caps"
	for _, tc := range []struct {
		name           string
		w              Workarounds
		wantMounts     []v1alpha4.Mount
		wantContainerd []string
		wantKubeadm    []string
		wantNoCNI      bool
	}{
		{
			name: "no workarounds: only absolute paths",
			wantMounts: []v1alpha4.Mount{
				{HostPath: "/repo/_output/kind/data", ContainerPath: "/var/lib/zonepath"},
				{HostPath: "/abs", ContainerPath: "/abs"},
			},
		},
		{
			name: "all workarounds",
			w:    Workarounds{RuncWrapper: wrapper, RestrictOOMScoreAdj: true, AllowCgroupV1: true, SimpleCNI: true},
			wantMounts: []v1alpha4.Mount{
				{HostPath: "/repo/_output/kind/data", ContainerPath: "/var/lib/zonepath"},
				{HostPath: "/abs", ContainerPath: "/abs"},
				{HostPath: wrapper, ContainerPath: nodeRuncPath, Readonly: true},
			},
			wantContainerd: []string{
				"[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n  BinaryName = \"" + nodeRuncPath + "\"\n",
				"[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true\n",
			},
			wantKubeadm: []string{"kind: KubeletConfiguration\nfailCgroupV1: false\n"},
			wantNoCNI:   true,
		},
		{
			name: "cgroup v1 only",
			w:    Workarounds{AllowCgroupV1: true},
			wantMounts: []v1alpha4.Mount{
				{HostPath: "/repo/_output/kind/data", ContainerPath: "/var/lib/zonepath"},
				{HostPath: "/abs", ContainerPath: "/abs"},
			},
			wantKubeadm: []string{"kind: KubeletConfiguration\nfailCgroupV1: false\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("c.yaml", []byte(minimal))
			if err != nil {
				t.Fatal(err)
			}
			Generate(c, "/repo", tc.w)
			if diff := cmp.Diff(tc.wantMounts, c.Nodes[0].ExtraMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantContainerd, c.ContainerdConfigPatches); diff != "" {
				t.Errorf("containerdConfigPatches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantKubeadm, c.KubeadmConfigPatches); diff != "" {
				t.Errorf("kubeadmConfigPatches (-want +got):\n%s", diff)
			}
			if c.Networking.DisableDefaultCNI != tc.wantNoCNI {
				t.Errorf("disableDefaultCNI = %v, want %v", c.Networking.DisableDefaultCNI, tc.wantNoCNI)
			}
			if _, err := Marshal(c, "c.yaml"); err != nil {
				t.Errorf("Marshal: %v", err)
			}
		})
	}
}

// TestCommittedConfig checks kind/cluster.yaml against the driver's
// topology in deploy/overlays/kind/topology.yaml: each worker, named as
// kind names it for the cluster name zonepath, is a node there in the zone
// of its labels, and no node there is missing from the config; every node
// mounts the shared data dir.
func TestCommittedConfig(t *testing.T) {
	path := filepath.Join("..", "..", "..", "kind", "cluster.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := world.Load(filepath.Join("..", "..", "..", "deploy", "overlays", "kind", "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	controlPlanes, workers := 0, 0
	for i, n := range c.Nodes {
		if len(n.ExtraMounts) != 1 || n.ExtraMounts[0].HostPath != "_output/kind/data" ||
			n.ExtraMounts[0].ContainerPath != "/var/lib/zonepath" {
			t.Errorf("nodes[%d].extraMounts = %+v, want _output/kind/data at /var/lib/zonepath", i, n.ExtraMounts)
		}
		if n.Role == v1alpha4.ControlPlaneRole {
			controlPlanes++
			continue
		}
		workers++
		name := kindWorkerName("zonepath", workers)
		info, ok := topo.Node(name)
		if !ok {
			t.Errorf("worker %d (%s) is not a node of the kind topology", workers, name)
			continue
		}
		got := n.Labels["topology.kubernetes.io/region"] + "/" + n.Labels["topology.kubernetes.io/zone"]
		if want := topo.Zones[info.Zone].ID(); got != want {
			t.Errorf("worker %s is labelled %s, the kind topology puts it in %s", name, got, want)
		}
	}
	if controlPlanes != 1 {
		t.Errorf("%d control planes, want 1", controlPlanes)
	}
	if _, ok := topo.Node(kindWorkerName("zonepath", workers+1)); ok {
		t.Errorf("the kind topology names %s, which kind/cluster.yaml does not create", kindWorkerName("zonepath", workers+1))
	}
}

// kindWorkerName is the name kind gives the i-th worker (from 1) of
// cluster: <cluster>-worker, <cluster>-worker2, ...
func kindWorkerName(cluster string, i int) string {
	if i == 1 {
		return cluster + "-worker"
	}
	return fmt.Sprintf("%s-worker%d", cluster, i)
}
