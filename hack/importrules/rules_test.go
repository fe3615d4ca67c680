package importrules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepository holds this repository to its rules.
func TestRepository(t *testing.T) {
	vs, err := Check("../..", Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestCheck shows each kind of violation caught, and what stays allowed,
// on small trees.
func TestCheck(t *testing.T) {
	imp := func(pkg string) string { return "package x\nimport _ \"" + Module + "/" + pkg + "\"\n" }
	tests := []struct {
		name  string
		files map[string]string
		want  []string // "file imports pkg", in order
	}{
		{"sanity code importing the driver", map[string]string{"sanity/config.go": imp("driver/world")},
			[]string{"sanity/config.go imports " + Module + "/driver/world"}},
		{"sanity tests may run the driver", map[string]string{"sanity/proof_test.go": imp("driver/plugin")}, nil},
		{"a prefix is a folder, not a string prefix", map[string]string{"deploy/render/r.go": imp("driver/worldly")},
			[]string{"deploy/render/r.go imports " + Module + "/driver/worldly"}},
		{"a subpackage of an allowed folder", map[string]string{"deploy/render/r.go": imp("driver/world/sub")}, nil},
		{"driver importing controllers", map[string]string{"driver/plugin/p.go": imp("controllers/topology")},
			[]string{"driver/plugin/p.go imports " + Module + "/controllers/topology"}},
		{"e2e tests importing the driver", map[string]string{"e2e/x_test.go": imp("driver/plugin")},
			[]string{"e2e/x_test.go imports " + Module + "/driver/plugin"}},
		{"the matrix putting a fault file in force", map[string]string{
			"e2e/cmd/matrix/faults.go": imp("driver/faults"), "e2e/cmd/matrix/wait.go": imp("fakezones/cluster"), "e2e/cmd/matrix/run.go": imp("e2e/junit")}, nil},
		{"the matrix importing the driver's plugin", map[string]string{"e2e/cmd/matrix/m.go": imp("driver/plugin")},
			[]string{"e2e/cmd/matrix/m.go imports " + Module + "/driver/plugin"}},
		{"the suite importing the fault files", map[string]string{"e2e/x_test.go": imp("driver/faults")},
			[]string{"e2e/x_test.go imports " + Module + "/driver/faults"}},
		{"internal importing anything else", map[string]string{"internal/bootstrap/b.go": imp("controllers/features")},
			[]string{"internal/bootstrap/b.go imports " + Module + "/controllers/features"}},
		{"a folder without a rule", map[string]string{"tools/t.go": imp("driver/world")},
			[]string{"tools/t.go imports " + Module + "/driver/world"}},
		{"kind's tools importing the driver", map[string]string{"kind/cmd/kindconfig/config.go": imp("driver/world")},
			[]string{"kind/cmd/kindconfig/config.go imports " + Module + "/driver/world"}},
		{"kind's tests may read the driver's topology", map[string]string{"kind/cmd/kindconfig/config_test.go": imp("driver/world")}, nil},
		{"fake zones importing a checker", map[string]string{"fakezones/cluster/rbac.go": imp("deploy/rbaccheck")},
			[]string{"fakezones/cluster/rbac.go imports " + Module + "/deploy/rbaccheck"}},
		{"bench linking the driver's plugin in", map[string]string{"bench/csibench/load.go": imp("driver/plugin")},
			[]string{"bench/csibench/load.go imports " + Module + "/driver/plugin"}},
		{"bench through drivertest and the harness", map[string]string{
			"bench/csibench/load.go": imp("driver/drivertest"), "bench/schedbench/x_test.go": imp("fakezones/clustertest")}, nil},
		{"fakezones importing bench", map[string]string{"fakezones/cluster/c.go": imp("bench/schedbench")},
			[]string{"fakezones/cluster/c.go imports " + Module + "/bench/schedbench"}},
		{"hack's tools importing the suite", map[string]string{"hack/cmd/x/x.go": imp("e2e/driverext")},
			[]string{"hack/cmd/x/x.go imports " + Module + "/e2e/driverext"}},
		{"hack importing bench", map[string]string{"hack/x/x.go": imp("bench/csibench")},
			[]string{"hack/x/x.go imports " + Module + "/bench/csibench"}},
		{"hack's tests may use internal's test helpers", map[string]string{"hack/x/x_test.go": imp("internal/wanterr")}, nil},
		{"itself", map[string]string{"controllers/a/a.go": imp("controllers/b")}, nil},
		{"other modules and testdata are skipped", map[string]string{
			"hack/components/etcd/go.mod":     "module etcd\n",
			"sanity/sub/go.mod":               "module sub\n",
			"sanity/sub/x.go":                 imp("driver/world"),
			"sanity/testdata/x.go":            imp("driver/world"),
			"sanity/cmd/zonepath-sanity/m.go": imp("sanity"),
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			vs, err := Check(root, Rules)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.File+" imports "+v.Import)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
