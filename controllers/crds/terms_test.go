package crds

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/zonepath/zonepath/controllers/topology"
)

// admit runs on obj what the API server runs on a create of a custom
// resource: the OpenAPI schema validation (minItems, maxLength, pattern
// ...) and then the CEL rules, and returns every error.
func admit(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, obj map[string]any) field.ErrorList {
	t.Helper()
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	errs := apiservervalidation.ValidateCustomResource(nil, obj, schemaValidator)
	s := structural(t, crd, crd.Spec.Versions[0].Name)
	if v := cel.NewValidator(s, true, celconfig.PerCallLimit); v != nil {
		celErrs, _ := v.Validate(context.Background(), nil, s, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// termCase is a term list and the message the API server must give for
// it; "" means it must be accepted.
type termCase struct {
	name    string
	terms   []any
	wantErr string
}

func exprOf(key string, values ...any) map[string]any {
	return map[string]any{"key": key, "values": values}
}

func termOf(exprs ...any) map[string]any {
	return map[string]any{"matchLabelExpressions": exprs}
}

const zoneKey, regionKey = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"

// termCases are the shapes Kubernetes validates in StorageClass
// allowedTopologies (pkg/apis/core/validation ValidateTopologySelectorTerm
// and validateTopologySelectorLabelRequirement, called by pkg/apis/storage/
// validation validateAllowedTopologies): values must not be empty, a key
// may appear once per term, and keys are label keys. To these the CRDs add
// what every zonepath component refuses to use: a term without
// expressions, values that are not non-empty label values (CSI segment
// values), and the bounds of controllers/topology.
var termCases = []termCase{
	{"one zone", []any{termOf(exprOf(zoneKey, "a"))}, ""},
	{"region and zones", []any{termOf(exprOf(regionKey, "r1"), exprOf(zoneKey, "a", "b"))}, ""},
	{"same key in two terms", []any{termOf(exprOf(zoneKey, "a")), termOf(exprOf(zoneKey, "b"))}, ""},
	// Kubernetes rejects these two in StorageClass; here they are harmless
	// (values and terms are sets everywhere) and stay accepted.
	{"duplicate value", []any{termOf(exprOf(zoneKey, "a", "a"))}, ""},
	{"duplicate term", []any{termOf(exprOf(zoneKey, "a")), termOf(exprOf(zoneKey, "a"))}, ""},
	{"values: []", []any{termOf(exprOf(regionKey, "r1"), exprOf(zoneKey))},
		"[0].matchLabelExpressions[1].values: Invalid value: 0"},
	{"values missing", []any{termOf(map[string]any{"key": zoneKey})},
		`[0].matchLabelExpressions[0].values: Required value`},
	{"key twice in a term", []any{termOf(exprOf(zoneKey, "a"), exprOf(regionKey, "r1"), exprOf(zoneKey, "b"))},
		"[0].matchLabelExpressions: Invalid value: each key may appear in one expression of a term"},
	{"empty term", []any{termOf(exprOf(zoneKey, "a")), termOf()},
		"[1].matchLabelExpressions: Invalid value: 0"},
	{"term without expressions", []any{map[string]any{}},
		"[0].matchLabelExpressions: Required value"},
	{"key not a label key", []any{termOf(exprOf("Bad Key", "a"))},
		`[0].matchLabelExpressions[0].key: Invalid value: "Bad Key": `},
	{"key with two slashes", []any{termOf(exprOf("a/b/c", "a"))},
		`[0].matchLabelExpressions[0].key: Invalid value: "a/b/c": `},
	{"key name of 64 characters", []any{termOf(exprOf("example.com/"+strings.Repeat("k", 64), "a"))},
		"[0].matchLabelExpressions[0].key: Invalid value: "},
	{"key prefix of 253 characters", []any{termOf(exprOf(strings.Repeat("p", 253)+"/zone", "a"))}, ""},
	{"key prefix of 254 characters", []any{termOf(exprOf(strings.Repeat("p", 254)+"/zone", "a"))},
		`[0].matchLabelExpressions[0].key: Invalid value: "` + strings.Repeat("p", 254) + `/zone": the prefix of a label key, before the /, must be a DNS subdomain of at most 253 characters`},
	{"empty value", []any{termOf(exprOf(zoneKey, ""))},
		"[0].matchLabelExpressions[0].values[0]: Invalid value: \"\""},
	{"value not a label value", []any{termOf(exprOf(zoneKey, "a", "-b"))},
		"[0].matchLabelExpressions[0].values[1]: Invalid value: \"-b\""},
	{"value too long", []any{termOf(exprOf(zoneKey, strings.Repeat("x", 64)))},
		"[0].matchLabelExpressions[0].values[0]: Too long"},
	{"MaxKeysPerTerm keys", []any{termOf(manyKeys(topology.MaxKeysPerTerm)...)}, ""},
	{"MaxKeysPerTerm+1 keys", []any{termOf(manyKeys(topology.MaxKeysPerTerm + 1)...)},
		fmt.Sprintf("[0].matchLabelExpressions: Too many: %d: must have at most %d items", topology.MaxKeysPerTerm+1, topology.MaxKeysPerTerm)},
	{"MaxSegments values", []any{termOf(exprOf(zoneKey, manyValues(topology.MaxSegments)...))}, ""},
	{"MaxSegments+1 values", []any{termOf(exprOf(zoneKey, manyValues(topology.MaxSegments+1)...))},
		fmt.Sprintf("[0].matchLabelExpressions[0].values: Too many: %d: must have at most %d items", topology.MaxSegments+1, topology.MaxSegments)},
	{"MaxSegments terms", manyTerms(topology.MaxSegments), ""},
	{"MaxSegments+1 terms", manyTerms(topology.MaxSegments + 1),
		fmt.Sprintf(": Too many: %d: must have at most %d items", topology.MaxSegments+1, topology.MaxSegments)},
}

func manyKeys(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = exprOf(fmt.Sprintf("example.com/k%d", i), "v")
	}
	return out
}

func manyValues(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprint("z", i)
	}
	return out
}

func manyTerms(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = termOf(exprOf(zoneKey, fmt.Sprint("z", i)))
	}
	return out
}

// TestTopologyTermsValidation runs every termCase through the API server's
// validation of both extended CRDs: malformed terms are rejected with a
// message naming the field and the rule, valid ones accepted.
func TestTopologyTermsValidation(t *testing.T) {
	files := extended(t)
	for _, kind := range []struct {
		name, crd string
		path      string
		obj       func(terms []any) map[string]any
	}{
		{"VolumeSnapshotContent", ContentsCRD, "spec.nodeAffinity", func(terms []any) map[string]any { return content("vol-1", terms) }},
		{"VolumeSnapshotClass", ClassesCRD, "allowedTopologies", class},
	} {
		crd := decodeCRD(t, files[kind.crd].Data)
		for _, tc := range termCases {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				errs := admit(t, crd, kind.obj(tc.terms))
				if tc.wantErr == "" {
					if len(errs) > 0 {
						t.Fatalf("rejected: %v", errs.ToAggregate())
					}
					return
				}
				want := kind.path + tc.wantErr
				if got := fmt.Sprint(errs); !strings.Contains(got, want) {
					t.Fatalf("errors = %s, want one containing %q", got, want)
				}
			})
		}
	}
}

// TestEmptyTermListsAreValid: an empty list means "no constraint" for
// every consumer, and a writer that has nothing to record writes [] (the
// snapshotter's merge patch), so [] must stay valid.
func TestEmptyTermListsAreValid(t *testing.T) {
	files := extended(t)
	if errs := admit(t, decodeCRD(t, files[ContentsCRD].Data), content("vol-1", []any{})); len(errs) > 0 {
		t.Errorf("nodeAffinity: [] rejected: %v", errs.ToAggregate())
	}
	if errs := admit(t, decodeCRD(t, files[ClassesCRD].Data), class([]any{})); len(errs) > 0 {
		t.Errorf("allowedTopologies: [] rejected: %v", errs.ToAggregate())
	}
}

// TestSchemaAgreesWithTopologyValidate holds the CRDs and
// controllers/topology to one meaning: a term list the API server admits
// is one every controller can use (topology.Validate, then Expand for the
// bounds), and one it rejects is one they refuse. A disagreement either
// way is a bug: admitted-but-refused objects fail far from the writer,
// refused-but-admitted ones block valid configurations.
func TestSchemaAgreesWithTopologyValidate(t *testing.T) {
	crd := decodeCRD(t, extended(t)[ClassesCRD].Data)
	for _, tc := range termCases {
		t.Run(tc.name, func(t *testing.T) {
			admitted := len(admit(t, crd, class(tc.terms))) == 0
			var typed []v1.TopologySelectorTerm
			if data, err := json.Marshal(tc.terms); err != nil || json.Unmarshal(data, &typed) != nil {
				t.Fatalf("converting %s: %v", tc.name, err)
			}
			err := topology.Validate(typed)
			if err == nil {
				_, err = topology.Expand(typed)
			}
			if admitted != (err == nil) {
				t.Fatalf("CRD admits: %v, but topology.Validate/Expand error: %v", admitted, err)
			}
		})
	}
}

// class is a VolumeSnapshotClass with allowedTopologies.
func class(terms []any) map[string]any {
	obj := map[string]any{
		"apiVersion":     "snapshot.storage.k8s.io/v1",
		"kind":           "VolumeSnapshotClass",
		"metadata":       map[string]any{"name": "class"},
		"driver":         "zonepath.csi.dev",
		"deletionPolicy": "Delete",
	}
	if terms != nil {
		obj["allowedTopologies"] = terms
	}
	return runtime.DeepCopyJSON(obj)
}
