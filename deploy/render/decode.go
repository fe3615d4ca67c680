package render

import (
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// SnapshotClass is a VolumeSnapshotClass with KEP-5943's allowedTopologies,
// which the typed snapshot API does not have yet (controllers/snapshotapi).
type SnapshotClass struct {
	snapshotv1.VolumeSnapshotClass `json:",inline"`
	AllowedTopologies              []corev1.TopologySelectorTerm `json:"allowedTopologies,omitempty"`
}

// scheme knows every built-in kind, the CRD kind and the snapshot kinds.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientscheme.AddToScheme, apiextensionsv1.AddToScheme, snapshotv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registration; cannot fail with these packages
		}
	}
	return s
}()

// decode decodes one object strictly into its type: an unknown or
// misspelt field, a duplicate key or a wrong type is an error naming it.
func decode(apiVersion, kind string, data []byte) (any, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	var obj any
	if gv.Group == snapshotv1.GroupName && kind == "VolumeSnapshotClass" {
		obj = &SnapshotClass{}
	} else {
		o, err := scheme.New(gv.WithKind(kind))
		if err != nil {
			return nil, fmt.Errorf("unknown kind %s %s", apiVersion, kind)
		}
		obj = o
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("strict decoding: %s", strings.Join(msgs, "; "))
	}
	return obj, nil
}
