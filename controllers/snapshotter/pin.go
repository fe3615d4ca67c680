package snapshotter

import (
	"context"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zonepath/zonepath/controllers/csicode"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// pinnedRequirement is the requirement of this attempt
// (controllers/README.md, "Pinned requirements: no orphan on retry"). A
// content with a pin repeats the attempt that wrote it, unless this
// process saw that attempt's CreateSnapshot end in a final error, or in
// RESOURCE_EXHAUSTED under a pin it wrote itself and whose every attempt
// it saw answered (settle): then nothing of it exists or can still be
// created, and the class's allowedTopologies, which an admin may have
// corrected, count again. A pin is written only when it changes, with a
// patch guarded by the resourceVersion just read, so that a pin written in
// between (a conflict, which the caller retries) is read again, never
// overwritten.
func (s *Snapshotter) pinnedRequirement(ctx context.Context, content *unstructured.Unstructured, snapshotName string) (*csi.TopologyRequirement, string, error) {
	terms, pinned, err := snapshotapi.Pin(content)
	if err != nil {
		return nil, "", err
	}
	value := content.GetAnnotations()[snapshotapi.PinAnnotation]
	if pinned && !s.finals.ended(content.GetName(), value) {
		req, err := topology.Requirement(terms, snapshotName)
		return req, value, err
	}
	fresh, err := s.classTopology(ctx, content)
	if err != nil {
		return nil, "", err
	}
	req, err := topology.Requirement(fresh, snapshotName)
	if err != nil {
		return nil, "", fmt.Errorf("allowedTopologies of the class: %w", err)
	}
	if pinned && equality.Semantic.DeepEqual(fresh, terms) {
		return req, value, nil
	}
	if value, err = snapshotapi.PinValue(fresh); err != nil {
		return nil, "", err
	}
	patch, err := snapshotapi.PinPatch(&value, content.GetResourceVersion())
	if err != nil {
		return nil, "", err
	}
	_, err = s.client.Resource(snapshotapi.VolumeSnapshotContents).Patch(ctx, content.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		s.finals.wrote(content.GetName(), value)
	case !apierrors.IsConflict(err):
		err = fmt.Errorf("pinning the requirement in annotation %s: %w", snapshotapi.PinAnnotation, err)
	}
	return req, value, err
}

// isFinal is upstream's isCSIFinalError (pkg/sidecar-controller, not
// exported; csicode.InProgress is its negation): the gRPC codes after
// which "creating snapshot either did not even start or failed. It is for
// sure not in progress". Upstream removes the being-created annotation on
// exactly these, so the pin follows the same rule.
func isFinal(err error) bool {
	return !csicode.InProgress(err)
}

// finals remembers, per content, what this process knows of the
// attempts under its pin. It lives in memory on purpose: removing or
// rewriting the pin on the API after every final error would be a change
// upstream's content informer passes on (its filter ignores only the
// sidecar's own annotations), requeueing the content at once, so a
// content failing for good would loop without backoff. After a restart
// the pin is simply used once more, its final error recorded again.
type finals struct {
	mu sync.Mutex
	// value: the pin whose last CreateSnapshot ended in a final error.
	value map[string]string
	// sawAll: the pin this process wrote and whose every attempt it saw
	// answered, none with an unknown outcome (a timeout, UNAVAILABLE ...).
	sawAll map[string]string
}

// record notes that the last CreateSnapshot under pin ended final.
func (f *finals) record(content, pin string) { f.set(&f.value, content, pin) }

func (f *finals) ended(content, pin string) bool { return f.is(&f.value, content, pin) }

// wrote notes a pin this process has just written, before any attempt
// under it.
func (f *finals) wrote(content, pin string) { f.set(&f.sawAll, content, pin) }

// certain says whether this process wrote pin and saw every attempt under
// it answered.
func (f *finals) certain(content, pin string) bool { return f.is(&f.sawAll, content, pin) }

func (f *finals) set(m *map[string]string, content, pin string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[content] = pin
}

func (f *finals) is(m *map[string]string, content, pin string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := (*m)[content]
	return ok && v == pin
}

// unknown notes an attempt whose outcome is not known: a snapshot may
// exist under the pin from now on, whatever a later attempt answers.
func (f *finals) unknown(content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.value, content)
	delete(f.sawAll, content)
}

func (f *finals) forget(content string) {
	f.unknown(content)
}
