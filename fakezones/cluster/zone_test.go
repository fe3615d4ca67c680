package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/faults"
)

// TestEditOutageRules: zone down adds one outage rule per zone and keeps
// the user's rules; zone up removes only its own; either is a no-op when
// the zone is already in that state; the file always loads.
func TestEditOutageRules(t *testing.T) {
	const userRule = "rules:\n- {name: mine, match: {rpc: CreateVolume}, action: {code: Unavailable}}\n"
	segB := map[string]string{"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-b"}
	segC := map[string]string{"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-c"}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(userRule), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		zone        string
		seg         map[string]string
		down        bool
		wantChanged bool
		wantRules   []string
		wantDown    []string // zones the driver would see down
	}{
		{"region-1/zone-b", segB, true, true, []string{"mine", "zonepath-cluster-zone-down-region-1-zone-b"}, []string{"zone-b"}},
		{"region-1/zone-b", segB, true, false, []string{"mine", "zonepath-cluster-zone-down-region-1-zone-b"}, []string{"zone-b"}},
		{"region-1/zone-c", segC, true, true, []string{"mine", "zonepath-cluster-zone-down-region-1-zone-b", "zonepath-cluster-zone-down-region-1-zone-c"}, []string{"zone-b", "zone-c"}},
		{"region-1/zone-b", segB, false, true, []string{"mine", "zonepath-cluster-zone-down-region-1-zone-c"}, []string{"zone-c"}},
		{"region-1/zone-b", segB, false, false, []string{"mine", "zonepath-cluster-zone-down-region-1-zone-c"}, []string{"zone-c"}},
		{"region-1/zone-c", segC, false, true, []string{"mine"}, nil},
	}
	for i, st := range steps {
		changed, err := editOutageRules(path, st.zone, st.seg, st.down)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		inj, err := faults.New(path, nil)
		if err != nil {
			t.Fatalf("step %d: the rewritten file does not load: %v", i, err)
		}
		var names []string
		for _, s := range inj.Stats() {
			names = append(names, s.Name)
		}
		var down []string
		for _, seg := range []map[string]string{segB, segC} {
			if inj.Down(seg) {
				down = append(down, seg["topology.kubernetes.io/zone"])
			}
		}
		if changed != st.wantChanged || strings.Join(names, ",") != strings.Join(st.wantRules, ",") || strings.Join(down, ",") != strings.Join(st.wantDown, ",") {
			t.Errorf("step %d (%s down=%v): changed %v, rules %v, down %v; want %v, %v, %v", i, st.zone, st.down, changed, names, down, st.wantChanged, st.wantRules, st.wantDown)
		}
	}
}

// TestSetZoneErrors: clear errors for a directory without a running
// cluster; the zone is only resolved once a cluster runs.
func TestSetZoneErrors(t *testing.T) {
	dir := t.TempDir()
	err := SetZone(t.Context(), dir, "zone-b", true, os.Stdout)
	if err == nil || !strings.Contains(err.Error(), "no cluster is running in "+dir) {
		t.Errorf("SetZone without a cluster: %v, want it to say no cluster runs there", err)
	}
}

// TestFindZone resolves names as the driver does and lists the zones of
// the topology for a name it does not know.
func TestFindZone(t *testing.T) {
	dir := t.TempDir()
	w := &workDir{dir: dir}
	if err := os.MkdirAll(w.path("driver"), 0o755); err != nil {
		t.Fatal(err)
	}
	topo := "regions:\n- name: region-1\n  zones: [{name: zone-a}, {name: zone-b}]\n"
	if err := os.WriteFile(w.path("driver", "topology.yaml"), []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, wantID, wantErr string }{
		{"zone-b", "region-1/zone-b", ""},
		{"region-1/zone-a", "region-1/zone-a", ""},
		{"zone-x", "", `zone "zone-x" is not in the topology (zones: region-1/zone-a, region-1/zone-b)`},
	} {
		z, seg, err := findZone(dir, tc.name)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("findZone(%q) error %v, want %q", tc.name, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || z.ID() != tc.wantID || seg["topology.kubernetes.io/zone"] != z.Name):
			t.Errorf("findZone(%q) = %v, %v, %v; want %s", tc.name, z.ID(), seg, err, tc.wantID)
		}
	}
}
