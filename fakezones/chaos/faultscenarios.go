package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
)

// faultScenarios are the cycles with a lost reply, two of them with an
// admin edit between the lost reply and its retry; the edits first, so
// that a short run has them too.
func faultScenarios(l layout) []scenario {
	return []scenario{
		{name: "edit-class", run: func(ctx context.Context, c *cycle) error { return c.editClass(ctx, l) }},
		{name: "lost-snapshot-reply", run: func(ctx context.Context, c *cycle) error { return c.lostSnapshotReply(ctx, l) }},
		{name: "edit-affinity", run: func(ctx context.Context, c *cycle) error { return c.editAffinity(ctx, l) }},
		{name: "lost-volume-reply", run: func(ctx context.Context, c *cycle) error { return c.lostVolumeReply(ctx, l) }},
	}
}

// armed is a lost-reply fault in place.
type armed struct {
	scenario string
	offset   int64
}

// arm loses the reply of the first rpc naming object (and holds the
// retries when hold), once the controller has the rules.
func (c *cycle) arm(ctx context.Context, rpc, object string, hold bool) (armed, error) {
	a := armed{scenario: c.rec.Name}
	written := time.Now()
	offset, err := c.w.faults.set(lostReply(a.scenario, rpc, object, hold))
	if err != nil {
		return a, err
	}
	a.offset = offset
	err = c.w.faults.reloaded(ctx, offset, func() bool { return c.w.controllerStarted(written) })
	if err != nil {
		return a, fmt.Errorf("the zonepath controller never loaded the fault rules: %w", err)
	}
	return a, nil
}

// disarm takes the rules away and records what they did.
func (c *cycle) disarm(a armed) {
	if err := c.w.faults.clear(); err != nil {
		c.note("clearing the fault rules failed: %v", err)
	}
	lost, held := c.w.faults.fired(a.offset, a.scenario+"-lose-reply"), c.w.faults.fired(a.offset, a.scenario+"-hold-retries")
	c.w.ledger.LostReply(lost)
	if lost == 0 {
		c.note("no reply was lost: the fault never fired")
		return
	}
	c.note("%d replies lost (DEADLINE_EXCEEDED after the driver acted), %d retries held (UNAVAILABLE)", lost, held)
}

// held says whether a held retry is still to come, so that the retry
// that reaches the driver is built after now.
func (c *cycle) held(a armed) bool {
	return c.w.faults.fired(a.offset, a.scenario+"-hold-retries") < holdRetries
}

// lostSnapshotReply loses CreateSnapshot's reply: the retry must find
// the snapshot cut and the content must get its handle.
func (c *cycle) lostSnapshotReply(ctx context.Context, l layout) error {
	src, err := c.source(ctx, l.sources[c.n%int64(len(l.sources))])
	if err != nil {
		return err
	}
	a, err := c.arm(ctx, "CreateSnapshot", pvHandle(src), false)
	if err != nil {
		return err
	}
	defer c.disarm(a)
	content, err := c.snapshot(ctx, c.name("snap"), c.name("src"), snapshotClassZonal, nil)
	if err != nil {
		return err
	}
	return c.restore(ctx, c.name("snap"), content, classWFFC, true)
}

// lostVolumeReply loses a restore's CreateVolume reply: the retry must
// find the volume and bind the claim to it.
func (c *cycle) lostVolumeReply(ctx context.Context, l layout) error {
	if _, err := c.source(ctx, l.sources[c.n%int64(len(l.sources))]); err != nil {
		return err
	}
	content, err := c.snapshot(ctx, c.name("snap"), c.name("src"), snapshotClassZonal, nil)
	if err != nil {
		return err
	}
	a, err := c.arm(ctx, "CreateVolume", snapshotHandle(content), false)
	if err != nil {
		return err
	}
	defer c.disarm(a)
	return c.restore(ctx, c.name("snap"), content, classImmediate, false)
}

// editClass: CreateSnapshot with the class allowing both zones of the
// pair loses its reply after the driver cut the snapshot in one; an admin
// narrows the class's allowedTopologies to the other zone before the
// retry. Nothing may be left behind: the retry must not make the cut
// snapshot one nobody deletes.
func (c *cycle) editClass(ctx context.Context, l layout) error {
	class := prefix + c.rec.Name + "-edit"
	c.made(kindSnapshotClass, class)
	if err := create(ctx, "VolumeSnapshotClass "+class, func(ctx context.Context) error {
		_, err := c.w.api.resource(kindSnapshotClass).Create(ctx, snapshotClass(class, l.pair[0], l.pair[1]), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	src, err := c.source(ctx, l.pair[0])
	if err != nil {
		return err
	}
	a, err := c.arm(ctx, "CreateSnapshot", pvHandle(src), true)
	if err != nil {
		return err
	}
	defer c.disarm(a)
	start := time.Now()
	if err := c.createSnapshot(ctx, c.name("snap"), c.name("src"), class); err != nil {
		return err
	}
	zone, err := c.cutSnapshot(ctx, pvHandle(src))
	if err != nil {
		return err
	}
	to := l.other(zone)
	patch, _ := json.Marshal(map[string]any{"allowedTopologies": terms(to)})
	if err := c.edit(ctx, a, "VolumeSnapshotClass "+class, func(ctx context.Context) error {
		_, err := c.w.api.resource(kindSnapshotClass).Patch(ctx, class, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}, func(ctx context.Context) bool {
		content := c.w.api.contentOf(ctx, c.name("snap"))
		return content == nil || snapshotHandle(content) == ""
	}, fmt.Sprintf("the driver cut the snapshot in %s; allowedTopologies narrowed to %s", zone, to.zone)); err != nil {
		return err
	}
	content, err := c.ready(ctx, c.name("snap"), "snapshot ready after an edit", start, finalAnswer)
	if err != nil {
		return err
	}
	return c.restore(ctx, c.name("snap"), content, classImmediate, false)
}

// finalAnswer ends the wait for a snapshot the driver refused for good.
func finalAnswer(vs *unstructured.Unstructured) error {
	if msg := snapshotError(vs); hasWord([]string{msg}, "AlreadyExists") {
		return fmt.Errorf("the retry got a final error: %s", msg)
	}
	return nil
}

// cutSnapshot waits until the driver has cut a snapshot of volume (the
// lost reply's work) and returns its zone.
func (c *cycle) cutSnapshot(ctx context.Context, volume string) (string, error) {
	var zone string
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		snaps, err := c.w.driver.snapshotsOf(ctx, volume)
		if err != nil || len(snaps) == 0 || len(snaps[0].Segments) == 0 {
			return false, nil
		}
		zone = snaps[0].Segments[0][objects.ZoneLabel]
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("the driver never cut a snapshot of %s: %w", volume, err)
	}
	return zone, nil
}

// edit makes an admin's edit after a lost reply; pending says whether the
// object still waits for its retry's answer. It counts as an edit between
// attempts when it was and a held retry was still to come.
func (c *cycle) edit(ctx context.Context, a armed, what string, patch func(context.Context) error, pending func(context.Context) bool, why string) error {
	if err := create(ctx, "edit of "+what, patch); err != nil {
		return err
	}
	if !pending(ctx) || !c.held(a) {
		c.note("edited %s too late: the retry had gone (%s)", what, why)
		return nil
	}
	c.w.ledger.Edit()
	c.note("edited %s between the lost reply and its retry: %s", what, why)
	return nil
}

// editAffinity: a restore of a region-wide snapshot, Immediate, loses
// CreateVolume's reply after the driver made the volume in one zone of
// the region; an admin narrows the content's nodeAffinity to another zone
// before the retry. The restore is checked against the nodeAffinity the
// content had before the edit.
func (c *cycle) editAffinity(ctx context.Context, l layout) error {
	if _, err := c.source(ctx, l.pair[0]); err != nil {
		return err
	}
	content, err := c.snapshot(ctx, c.name("snap"), c.name("src"), snapshotClassWide, nil)
	if err != nil {
		return err
	}
	affinity, err := snapshotapi.NodeAffinity(content)
	if err != nil {
		return err
	}
	a, err := c.arm(ctx, "CreateVolume", snapshotHandle(content), true)
	if err != nil {
		return err
	}
	defer c.disarm(a)
	start := time.Now()
	if err := c.createClaim(ctx, claim(c.name("restore"), classImmediate, c.name("snap")), false); err != nil {
		return err
	}
	zone, err := c.madeVolume(ctx, snapshotHandle(content))
	if err != nil {
		return err
	}
	to := l.other(zone)
	patch, _ := snapshotapi.NodeAffinityPatch(terms(to), "")
	if err := c.edit(ctx, a, "VolumeSnapshotContent "+content.GetName(), func(ctx context.Context) error {
		_, err := c.w.api.resource(kindContent).Patch(ctx, content.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}, func(ctx context.Context) bool { return c.unbound(ctx, c.name("restore")) },
		fmt.Sprintf("the driver made the volume in %s; nodeAffinity narrowed to %s", zone, to.zone)); err != nil {
		return err
	}
	return c.restored(ctx, start, content.GetName(), affinity, func() error {
		if w := c.w.api.warnings(c.name("restore")); hasWord(w, "AlreadyExists") {
			return fmt.Errorf("the retry got a final error: %s", w[len(w)-1])
		}
		return nil
	})
}

// madeVolume waits until the driver has a volume restored from snapshot
// (the lost reply's work) and returns its zone.
func (c *cycle) madeVolume(ctx context.Context, snapshot string) (string, error) {
	var zone string
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		vols, err := c.w.driver.volumesFrom(ctx, snapshot)
		if err != nil || len(vols) == 0 {
			return false, nil
		}
		zone = vols[0].Segment[objects.ZoneLabel]
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("the driver never made a volume from snapshot %s: %w", snapshot, err)
	}
	return zone, nil
}

func (c *cycle) unbound(ctx context.Context, name string) bool {
	pvc, err := c.w.api.kube.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, name, metav1.GetOptions{})
	return err == nil && pvc.Spec.VolumeName == "" && pvc.Status.Phase != v1.ClaimBound
}
