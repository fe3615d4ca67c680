package sanity

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The outage of the volume health tests. Which condition a volume shows
// while the storage of the node's segment is down is the driver's to say:
// a volume with no other copy is INACCESSIBLE ("The volume is not
// accessible"), one still served from another segment (a regional volume,
// a replicated array) is DEGRADED ("The volume is usable but is not
// operating optimally"), and a newer spec's type is just as valid (csi.proto
// VolumeHealth.health_statuses: "A future version of the CSI spec MAY
// introduce additional VolumeHealthErrorType values"). Any entry is an
// adverse condition ("An empty list means no adverse health condition is
// known by the Plugin"), but not every one is the outage's: a volume may
// carry one from the start (a degraded pool; ControllerGetVolumeHealth only
// SHOULD answer a healthy volume with empty health_statuses). So the
// conditions of each volume are read before the outage command, the outage
// is seen when the controller reports a (status, reason) the volume did not
// have then, and recovery when those are gone again ("Adverse health
// conditions should only be removed from reporting when the corresponding
// health problem is no longer happening").

// condition is one (status, reason) pair: what VolumeHealthEntry.reason
// makes unique ("The Plugin MUST NOT return multiple VolumeHealthEntry
// messages for the same volume with the same (status, reason)
// combination").
type condition struct {
	status csi.VolumeHealthErrorType
	reason string
}

func (c condition) String() string { return c.status.String() + "/" + c.reason }

// conditionsOf lists the conditions h reports, in its order.
func conditionsOf(h *csi.VolumeHealth) []condition {
	var out []condition
	for _, e := range h.GetHealthStatuses() {
		out = append(out, condition{e.GetStatus(), e.GetReason()})
	}
	return out
}

// added are the conditions h reports that are not in before.
func added(h *csi.VolumeHealth, before []condition) []condition {
	return slices.DeleteFunc(conditionsOf(h), func(c condition) bool { return slices.Contains(before, c) })
}

// healthOutage is one outage of the node's segment: the volumes it takes
// down, the conditions the controller reported for each before it, and
// those it reported during it that were not there before.
type healthOutage struct {
	cfg    Config
	ids    []string
	before map[string][]condition
	during map[string][]condition
}

// beforeOutage reads the controller's conditions of ids, none of which
// can be the outage's yet.
func (s *suite) beforeOutage(cfg Config, ids ...string) *healthOutage {
	GinkgoHelper()
	o := &healthOutage{cfg: cfg, ids: ids, before: map[string][]condition{}, during: map[string][]condition{}}
	for _, id := range ids {
		o.before[id] = conditionsOf(s.controllerHealth(id))
	}
	return o
}

// outage runs the outage command and waits until the controller reports
// each volume with a condition it did not have before. A condition other
// than INACCESSIBLE is reported as the driver's choice: the volume is
// still usable from elsewhere, or the driver says so with its own type.
func (s *suite) outage(o *healthOutage) {
	GinkgoHelper()
	out, err := exec.Command("sh", "-c", o.cfg.OutageCommand).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "outage command %q: %s", o.cfg.OutageCommand, out)
	var other []string
	for _, id := range o.ids {
		Eventually(func() []condition {
			o.during[id] = added(s.controllerHealth(id), o.before[id])
			return o.during[id]
		}).WithTimeout(o.cfg.outageTimeout()).WithPolling(100*time.Millisecond).
			Should(Not(BeEmpty()), "after the outage command, ControllerGetVolumeHealth must report volume %s, in the node's segment, with an adverse condition it did not have before (it had %v)", id, o.before[id])
		if !o.reports(id, csi.VolumeHealthErrorType_INACCESSIBLE) {
			other = append(other, fmt.Sprintf("volume %s %v", id, o.during[id]))
		}
	}
	if len(other) > 0 {
		warn(choiceMade, "condition during the outage", fmt.Sprintf("after the outage command the controller reports %s, not INACCESSIBLE: accepted, as any new condition is (a volume still served from another segment is DEGRADED, \"usable but is not operating optimally\"; a newer spec MAY add types)", strings.Join(other, "; ")))
	}
}

// reports says whether the controller reported volume id with status
// during the outage, and not before it.
func (o *healthOutage) reports(id string, status csi.VolumeHealthErrorType) bool {
	return slices.ContainsFunc(o.during[id], func(c condition) bool { return c.status == status })
}

// recover runs the recover command and waits, as long as outage may,
// until the controller reports no condition the volumes did not have
// before the outage, so that cleanup can delete what the test made. It
// runs deferred, also after a failure (then the outage's conditions may
// not have been seen yet), so it reports trouble in the log and does not
// fail the test.
func (s *suite) recover(o *healthOutage) {
	out, err := exec.Command("sh", "-c", o.cfg.RecoverCommand).CombinedOutput()
	if err != nil {
		fmt.Fprintf(GinkgoWriter, "recover command %q failed: %v: %s\n", o.cfg.RecoverCommand, err, out)
		return
	}
	deadline := time.Now().Add(o.cfg.outageTimeout())
	for _, id := range o.ids {
		for time.Now().Before(deadline) && !s.recovered(id, o.before[id]) {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// recovered says whether the controller answers for volume id with no
// condition but those it had before the outage.
func (s *suite) recovered(id string, before []condition) bool {
	resp, err := s.r.ControllerGetVolumeHealth(context.Background(), &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	return err == nil && len(added(resp.GetVolumeHealth(), before)) == 0
}
