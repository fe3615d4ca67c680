package crds

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// upstreamDir is the CRD directory of the client/v8 module pinned in go.mod.
// go mod download, not go list -m: on a fresh module cache go list names a
// directory it has not downloaded, as make crds once found.
func upstreamDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/kubernetes-csi/external-snapshotter/client/v8").Output()
	if err != nil {
		t.Fatalf("go mod download the client/v8 module: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: no directory in %q (%v)", out, err)
	}
	return filepath.Join(mod.Dir, "config", "crd")
}

func extended(t *testing.T) map[string]File {
	t.Helper()
	files, err := Extend(upstreamDir(t))
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	byCRD := map[string]File{}
	for _, f := range files {
		byCRD[f.CRD] = f
	}
	return byCRD
}

func decodeCRD(t *testing.T, data []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatalf("decoding CRD: %v", err)
	}
	return &crd
}

func readUpstream(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(upstreamDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return decodeCRD(t, data)
}

// structural returns the structural schema of version of crd, as the API
// server builds it to prune and validate objects.
func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, version string) *structuralschema.Structural {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatalf("converting schema: %v", err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatalf("structural schema of %s %s: %v", crd.Name, version, err)
		}
		return s
	}
	t.Fatalf("%s has no version %s", crd.Name, version)
	return nil
}

func TestExtendWritesAllSixAndCopiesTheOthers(t *testing.T) {
	from, out := upstreamDir(t), t.TempDir()
	if _, err := Generate(from, out); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	changed := map[string]bool{}
	for _, f := range mustExtend(t, from) {
		in, err := os.ReadFile(filepath.Join(from, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil {
			t.Fatalf("output %s: %v", f.Name, err)
		}
		if same := string(in) == string(got); same == f.Changed {
			t.Errorf("%s: output identical to input = %v, changed = %v", f.Name, same, f.Changed)
		}
		changed[f.CRD] = f.Changed
	}
	want := map[string]bool{}
	for _, n := range Required {
		want[n] = n == ContentsCRD || n == ClassesCRD
	}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Errorf("changed CRDs (-want +got):\n%s", diff)
	}
}

func mustExtend(t *testing.T, dir string) []File {
	t.Helper()
	files, err := Extend(dir)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	return files
}

// TestExtendedCRDsAreValid runs the API server's own CRD validation, which
// includes the structural-schema rules and CEL cost limits, on both
// extended CRDs, and checks that served versions got the field and
// unserved ones were left alone.
func TestExtendedCRDsAreValid(t *testing.T) {
	files := extended(t)
	for _, tc := range []struct{ crd, upstreamFile string }{
		{ContentsCRD, "snapshot.storage.k8s.io_volumesnapshotcontents.yaml"},
		{ClassesCRD, "snapshot.storage.k8s.io_volumesnapshotclasses.yaml"},
	} {
		t.Run(tc.crd, func(t *testing.T) {
			crd := decodeCRD(t, files[tc.crd].Data)
			var internal apiextensions.CustomResourceDefinition
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
				t.Fatal(err)
			}
			internal.Status.StoredVersions = []string{"v1"}
			if errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
				t.Errorf("CRD validation: %v", errs.ToAggregate())
			}
			up := readUpstream(t, tc.upstreamFile)
			for i, v := range crd.Spec.Versions {
				if errs := structuralschema.ValidateStructural(field.NewPath(v.Name), structural(t, crd, v.Name)); len(errs) > 0 {
					t.Errorf("version %s not structural: %v", v.Name, errs.ToAggregate())
				}
				unchanged := reflect.DeepEqual(v, up.Spec.Versions[i])
				if unchanged == v.Served {
					t.Errorf("version %s: served = %v but unchanged = %v", v.Name, v.Served, unchanged)
				}
			}
		})
	}
}

func TestPruning(t *testing.T) {
	files := extended(t)
	terms := []any{
		map[string]any{"matchLabelExpressions": []any{
			map[string]any{"key": "topology.kubernetes.io/region", "values": []any{"r1"}},
			map[string]any{"key": "topology.kubernetes.io/zone", "values": []any{"a"}},
		}},
		map[string]any{"matchLabelExpressions": []any{
			map[string]any{"key": "topology.kubernetes.io/zone", "values": []any{"b"}},
		}},
	}
	for _, tc := range []struct {
		name, crd, upstreamFile string
		obj                     map[string]any
		path                    []string
	}{
		{"content nodeAffinity", ContentsCRD, "snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
			map[string]any{"spec": map[string]any{"driver": "d", "nodeAffinity": terms}}, []string{"spec", "nodeAffinity"}},
		{"class allowedTopologies", ClassesCRD, "snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
			map[string]any{"driver": "d", "allowedTopologies": terms}, []string{"allowedTopologies"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := pruned(t, structural(t, readUpstream(t, tc.upstreamFile), "v1"), tc.obj)
			if _, found := nested(up, tc.path); found {
				t.Errorf("upstream schema kept %v; the test would not tell the schemas apart", tc.path)
			}
			ours := pruned(t, structural(t, decodeCRD(t, files[tc.crd].Data), "v1"), tc.obj)
			got, found := nested(ours, tc.path)
			if diff := cmp.Diff(terms, got); !found || diff != "" {
				t.Errorf("extended schema: %v (found %v) (-want +got):\n%s", tc.path, found, diff)
			}
		})
	}
}

// TestPruningDropsUnknownTermFields checks that the term schema is exact,
// not a preserve-unknown-fields hole: a field TopologySelectorTerm does not
// have is dropped.
func TestPruningDropsUnknownTermFields(t *testing.T) {
	s := structural(t, decodeCRD(t, extended(t)[ClassesCRD].Data), "v1")
	obj := map[string]any{"allowedTopologies": []any{map[string]any{
		"matchFields":           []any{"x"},
		"matchLabelExpressions": []any{map[string]any{"key": "k", "values": []any{"v"}, "operator": "In"}},
	}}}
	got := pruned(t, s, obj)
	want := []any{map[string]any{"matchLabelExpressions": []any{map[string]any{"key": "k", "values": []any{"v"}}}}}
	if v, _ := nested(got, []string{"allowedTopologies"}); !cmp.Equal(want, v) {
		t.Errorf("pruned allowedTopologies (-want +got):\n%s", cmp.Diff(want, v))
	}
}

func pruned(t *testing.T, s *structuralschema.Structural, obj map[string]any) map[string]any {
	t.Helper()
	cp := runtime.DeepCopyJSON(obj)
	pruning.Prune(cp, s, true)
	return cp
}

func nested(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}
