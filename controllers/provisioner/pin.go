package provisioner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// pin is what the provisioner knows of a claim's pinned topology.
type pin struct {
	terms []v1.TopologySelectorTerm // the allowedTopologies handed upstream
	// inBackground: the last attempt left the claim "in background", so
	// the lib retries it, from its cached copy once the claim is deleted.
	inBackground bool
	// final: the last CSI call with these terms ended in a final error:
	// nothing was created and nothing runs, so the next attempt decides
	// afresh from the objects.
	final   bool
	deleted bool // the claim is gone from the API
	// attempting: the delegate is running an attempt with this pin.
	attempting bool
}

// pins are the pins of the claims this process provisions, by claim UID.
// They are the authority while the process lives: the lib may retry a
// claim whose pin annotation its informer has not seen yet, or a deleted
// claim it retries from its cached copy, which never will. The annotation
// (snapshotapi.PinAnnotation) carries the pin across a restart or a change
// of leader.
type pins struct {
	mu sync.Mutex
	m  map[types.UID]*pin
}

func (ps *pins) get(uid types.UID) (pin, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[uid]
	if !ok {
		return pin{}, false
	}
	return *p, true
}

func (ps *pins) set(uid types.UID, terms []v1.TopologySelectorTerm) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[types.UID]*pin{}
	}
	p, ok := ps.m[uid]
	if !ok {
		p = &pin{}
		ps.m[uid] = p
	}
	p.terms, p.final = terms, false
}

// begin marks an attempt with uid's pin as running: a deletion seen
// meanwhile must not forget the pin before the attempt's end is known.
func (ps *pins) begin(uid types.UID) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[uid]; ok {
		p.attempting = true
	}
}

// settle records how the delegate's attempt with uid's pin ended, in the
// lib's terms (its syncClaim): ProvisioningInBackground keeps the claim in
// progress, ProvisioningFinished ends it, ProvisioningNoChange changes
// nothing. Success ends the pin. A finished error with a gRPC status is a
// final CSI error (upstream's checkError: the operation "is for sure not
// in progress"); a finished error without one failed before any call.
func (ps *pins) settle(uid types.UID, state controller.ProvisioningState, err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[uid]
	if !ok {
		return
	}
	p.attempting = false
	switch state {
	case controller.ProvisioningInBackground:
		p.inBackground = true
	case controller.ProvisioningFinished:
		p.inBackground = false
		if _, isCSI := status.FromError(err); err == nil || isCSI {
			p.final = err != nil
		}
		if err == nil {
			delete(ps.m, uid)
			return
		}
	}
	if p.deleted && !p.inBackground {
		delete(ps.m, uid)
	}
}

// deleted forgets the pin of a deleted claim unless the lib still retries
// it, or an attempt runs whose outcome may make it retry (settle forgets
// it when that ends).
func (ps *pins) deleted(uid types.UID) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.m[uid]; ok {
		p.deleted = true
		if !p.inBackground && !p.attempting {
			delete(ps.m, uid)
		}
	}
}

// pinned returns the allowedTopologies to hand upstream for this attempt:
// the pin while an earlier call with it may have created the volume,
// otherwise what the snapshot and class allow now (intersection), pinned
// on the claim before upstream can call CreateVolume with it. The pin is
// read from memory first, then from the claim's annotation (after a
// restart). After a final CSI error the objects decide again, and an
// unchanged answer is not written again: every write of the annotation is
// a claim update the lib requeues at once, past its backoff.
func (p *Provisioner) pinned(ctx context.Context, options controller.ProvisionOptions) ([]v1.TopologySelectorTerm, error) {
	claim := options.PVC
	current, ok := p.pins.get(claim.UID)
	if !ok {
		terms, annotated, err := snapshotapi.Pin(claim)
		if err != nil {
			return nil, fmt.Errorf("PersistentVolumeClaim %q: %w", claim.Namespace+"/"+claim.Name, err)
		}
		current, ok = pin{terms: terms}, annotated
		if ok {
			p.pins.set(claim.UID, terms)
		}
	}
	if ok && !current.final {
		return current.terms, nil
	}
	fresh, err := p.intersection(ctx, options)
	if err != nil {
		return nil, err
	}
	if !ok || !sameTerms(fresh, current.terms) {
		if err := p.writePin(ctx, claim, fresh); err != nil {
			return nil, err
		}
	}
	p.pins.set(claim.UID, fresh)
	return fresh, nil
}

// writePin writes the pin annotation, guarded by the resourceVersion of
// the claim the lib handed over: a pin written since by another process
// (a former leader) conflicts, and the retry reads it.
func (p *Provisioner) writePin(ctx context.Context, claim *v1.PersistentVolumeClaim, terms []v1.TopologySelectorTerm) error {
	value, err := snapshotapi.PinValue(terms)
	if err == nil {
		var patch []byte
		if patch, err = snapshotapi.PinPatch(&value, claim.ResourceVersion); err == nil {
			_, err = p.claims.PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("PersistentVolumeClaim %q: pinning the topology handed to CreateVolume in annotation %s: %w",
			claim.Namespace+"/"+claim.Name, snapshotapi.PinAnnotation, err)
	}
	return nil
}

func sameTerms(a, b []v1.TopologySelectorTerm) bool {
	return len(a) == 0 && len(b) == 0 || equality.Semantic.DeepEqual(a, b)
}

// Watch removes pins that are done, from the claim informer the lib
// provisions from: the annotation once the claim is bound (its volume
// exists, the lib never provisions it again), the memory of a deleted
// claim once the lib no longer retries it. Bound, not "Provision
// returned": the lib saves the PV after Provision, in the background, and
// a process killed before the save provisions the claim again after its
// restart, from the pin.
func (p *Provisioner) Watch(claims cache.SharedIndexInformer) error {
	_, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.unpinBound,
		UpdateFunc: func(_, obj any) { p.unpinBound(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if claim, ok := obj.(*v1.PersistentVolumeClaim); ok {
				p.pins.deleted(claim.UID)
			}
		},
	})
	return err
}

// unpinTimeout bounds the removal, which runs in the informer's handler.
const unpinTimeout = 30 * time.Second

func (p *Provisioner) unpinBound(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok || claim.Spec.VolumeName == "" || !metav1.HasAnnotation(claim.ObjectMeta, snapshotapi.PinAnnotation) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), unpinTimeout)
	defer cancel()
	patch, err := snapshotapi.PinPatch(nil, "")
	if err == nil {
		_, err = p.claims.PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		// The next update or resync of the claim tries again; a pin left
		// on a bound claim is never read.
		klog.Background().V(2).Info("Removing the pinned topology of a bound claim failed", "claim", klog.KObj(claim), "err", err)
	}
}
