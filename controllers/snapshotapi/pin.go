package snapshotapi

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zonepath/zonepath/controllers/topology"
)

// PinAnnotation records the allowedTopologies that the first CSI create
// call for an object was built from: on a VolumeSnapshotContent, the
// class's allowedTopologies CreateSnapshot's requirement came from
// (zonepath-snapshotter); on a PersistentVolumeClaim, the StorageClass
// allowedTopologies handed to upstream's provisioner for CreateVolume
// (zonepath-provisioner). It is written before that call and removed once
// the object is done, and every retry in between is built from it, not
// from the live objects: a retry after a lost reply must repeat the call
// (CSI spec, "Timeout errors"), or an admin's edit in between turns the
// object the first call created into ALREADY_EXISTS and a backend object
// nobody deletes. "[]" pins "no allowedTopologies".
const PinAnnotation = "zonepath.csi.dev/pinned-topology"

// Pin returns obj's pinned allowedTopologies, and whether it has a pin. A
// pin that does not decode, or holds invalid terms, is an error naming the
// annotation: it was edited by hand, and only a person can say what the
// first call sent.
func Pin(obj metav1.Object) ([]v1.TopologySelectorTerm, bool, error) {
	value, ok := obj.GetAnnotations()[PinAnnotation]
	if !ok {
		return nil, false, nil
	}
	var terms []v1.TopologySelectorTerm
	err := json.Unmarshal([]byte(value), &terms)
	if err == nil && len(terms) > 0 {
		err = topology.Validate(terms)
	}
	if err != nil {
		return nil, true, fmt.Errorf("annotation %s %q: %w (remove the annotation once no CSI call for this object can still run)", PinAnnotation, value, err)
	}
	if len(terms) == 0 {
		terms = nil
	}
	return terms, true, nil
}

// PinValue is the annotation's value for terms; nil or empty pins "none".
func PinValue(terms []v1.TopologySelectorTerm) (string, error) {
	if terms == nil {
		terms = []v1.TopologySelectorTerm{}
	}
	raw, err := json.Marshal(terms)
	return string(raw), err
}

// PinPatch is the JSON merge patch that sets the pin to value, or removes
// it when value is nil, and touches nothing else. With a resourceVersion
// the API server applies it only to that version of the object, so a pin
// is never written or removed on the strength of a stale read.
func PinPatch(value *string, resourceVersion string) ([]byte, error) {
	meta := map[string]any{"annotations": map[string]any{PinAnnotation: value}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return json.Marshal(map[string]any{"metadata": meta})
}
