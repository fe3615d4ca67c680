package chaos

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
)

// cycle is one run of a scenario: the objects it made, in order, and
// what it learnt of them.
type cycle struct {
	w   *workload
	rec *Cycle
	// n is the cycle's number, which picks its zones round robin.
	n    int64
	refs []ref
	// bound are its PVs and contents as last seen bound, for the check
	// that their backend objects exist.
	bound []Object
}

func (c *cycle) name(suffix string) string { return c.rec.Name + "-" + suffix }

func (c *cycle) made(kind, name string) { c.refs = append(c.refs, ref{kind, name}) }

func (c *cycle) note(format string, args ...any) {
	c.w.ledger.Note(c.rec, fmt.Sprintf(format, args...))
}

// source provisions the cycle's source volume in zone w and returns its
// PV once the claim is Bound.
func (c *cycle) source(ctx context.Context, w where) (*v1.PersistentVolume, error) {
	name := c.name("src")
	return c.claim(ctx, claim(name, sourceClassName(w), ""), false, "source bound")
}

// claim creates pvc (and its consumer pod when wffc) and returns its PV
// once it is Bound.
func (c *cycle) claim(ctx context.Context, pvc *v1.PersistentVolumeClaim, wffc bool, op string) (*v1.PersistentVolume, error) {
	start := time.Now()
	if err := c.createClaim(ctx, pvc, wffc); err != nil {
		return nil, err
	}
	return c.bind(ctx, pvc.Name, op, start, nil)
}

func (c *cycle) createClaim(ctx context.Context, pvc *v1.PersistentVolumeClaim, wffc bool) error {
	c.made(kindClaim, pvc.Name)
	if err := create(ctx, "claim "+pvc.Name, func(ctx context.Context) error {
		_, err := c.w.api.kube.CoreV1().PersistentVolumeClaims(Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		return err
	}); err != nil || !wffc {
		return err
	}
	pod := consumer(pvc.Name+"-pod", pvc.Name)
	c.made(kindPod, pod.Name)
	return create(ctx, "pod "+pod.Name, func(ctx context.Context) error {
		_, err := c.w.api.kube.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// bind waits until the claim is Bound, records the operation op that
// started at start and returns the PV; stop as for api.boundPV.
func (c *cycle) bind(ctx context.Context, name, op string, start time.Time, stop func() error) (*v1.PersistentVolume, error) {
	pv, err := c.w.api.boundPV(ctx, name, stop)
	if err != nil {
		return nil, err
	}
	c.w.ledger.Done(c.rec.Name, op, start)
	c.w.ledger.Origin(pvHandle(pv), c.rec.Name)
	c.bound = append(c.bound, Object{Kind: kindPV, Name: pv.Name, Handle: pvHandle(pv), Bound: true})
	return pv, nil
}

func pvHandle(pv *v1.PersistentVolume) string {
	if pv.Spec.CSI == nil {
		return ""
	}
	return pv.Spec.CSI.VolumeHandle
}

// snapshot creates a VolumeSnapshot of the claim pvc in class and
// returns its content once it is ReadyToUse; stop as for readyContent.
func (c *cycle) snapshot(ctx context.Context, name, pvc, class string, stop func(*unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	start := time.Now()
	if err := c.createSnapshot(ctx, name, pvc, class); err != nil {
		return nil, err
	}
	return c.ready(ctx, name, "snapshot ready", start, stop)
}

// ready waits until the VolumeSnapshot name is ReadyToUse (stop as for
// api.readyContent), records the operation op that started at start and
// returns its content.
func (c *cycle) ready(ctx context.Context, name, op string, start time.Time, stop func(*unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	content, err := c.w.api.readyContent(ctx, name, stop)
	if err != nil {
		return nil, err
	}
	c.w.ledger.Done(c.rec.Name, op, start)
	c.w.ledger.Origin(snapshotHandle(content), c.rec.Name)
	c.bound = append(c.bound, Object{Kind: kindContent, Name: content.GetName(), Handle: snapshotHandle(content), Bound: true})
	return content, nil
}

func (c *cycle) createSnapshot(ctx context.Context, name, pvc, class string) error {
	c.made(kindSnapshot, name)
	return create(ctx, "snapshot "+name, func(ctx context.Context) error {
		_, err := c.w.api.resource(kindSnapshot).Create(ctx, objects.VolumeSnapshot(Namespace, name, pvc, class), metav1.CreateOptions{})
		return err
	})
}

// restore restores the snapshot vs, whose content is content (with the
// nodeAffinity it had before any edit), into a claim of class, with a
// consumer pod when wffc; it records the restore and checks at once that
// it is inside the snapshot's topology.
func (c *cycle) restore(ctx context.Context, vs string, content *unstructured.Unstructured, class string, wffc bool) error {
	affinity, err := snapshotapi.NodeAffinity(content)
	if err != nil {
		return err
	}
	return c.restoreWith(ctx, vs, content.GetName(), affinity, class, wffc)
}

func (c *cycle) restoreWith(ctx context.Context, vs, content string, affinity []v1.TopologySelectorTerm, class string, wffc bool) error {
	start := time.Now()
	if err := c.createClaim(ctx, claim(c.name("restore"), class, vs), wffc); err != nil {
		return err
	}
	return c.restored(ctx, start, content, affinity, nil)
}

// restored waits for the cycle's restore claim to bind (stop as for
// api.boundPV), records the restore and checks at once that it is inside
// the topology affinity of content.
func (c *cycle) restored(ctx context.Context, start time.Time, content string, affinity []v1.TopologySelectorTerm, stop func() error) error {
	pv, err := c.bind(ctx, c.name("restore"), "restore bound", start, stop)
	if err != nil {
		return err
	}
	r := Restore{Cycle: c.rec.Name, Claim: Namespace + "/" + c.name("restore"), PV: pv.Name, PVAffinity: pv.Spec.NodeAffinity,
		Content: content, ContentAffinity: affinity}
	b, err := c.w.driver.list(ctx)
	if err != nil {
		return fmt.Errorf("listing the driver's volumes: %w", err)
	}
	for _, v := range b.Volumes {
		if v.ID == pvHandle(pv) {
			r.Volume = v.Segment
		}
	}
	c.w.ledger.Restore(r)
	if f := OutsideTopology(r, c.w.nodes); f != nil {
		c.w.ledger.Finding(*f)
	}
	return nil
}

// verify checks that every object of the cycle that was bound still has
// its backend object, before the cycle deletes them.
func (c *cycle) verify(ctx context.Context) error {
	b, err := c.w.driver.list(ctx)
	if err != nil {
		return fmt.Errorf("listing the backend: %w", err)
	}
	for _, f := range Missing(b, c.bound, Origins{}) {
		f.Cycle = c.rec.Name
		c.w.ledger.Finding(f)
	}
	return nil
}
