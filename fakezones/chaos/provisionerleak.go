package chaos

import (
	"time"
)

// provisionerLeak names the upstream defect ProvisionerLeaks recognises.
const provisionerLeak = "kubernetes-csi/external-provisioner#486 (open): CreateVolume answered, the provisioner " +
	"stopped before it saved the PersistentVolume, and the claim was deleted before it started again, so nothing " +
	"remembers the volume; zonepath-provisioner runs upstream's provisioning library unchanged"

// ProvisionerLeaks re-rules as RuleUpstream the orphan volumes that
// kubernetes-csi/external-provisioner#486 leaks, and only those: a volume
// no PersistentVolume of the run ever named (the workload never saw its
// handle bound), made for a cycle the run's end cut short (its claims
// deleted before they bound), while the provisioner stopped at least once
// between the cycle's start and its end (killed, or exited on a lost CSI
// connection, as upstream sidecars do). A volume whose PV was seen, or of
// a cycle that ran to its end, or with the provisioner up throughout,
// stays an orphan: then the leak is the stack's own.
func ProvisionerLeaks(orphans []Finding, b Backend, s Snapshot) []Finding {
	cycles := map[string]Cycle{}
	for _, c := range s.Cycles {
		cycles[c.Name] = c
	}
	stops := provisionerStops(s)
	out := make([]Finding, 0, len(orphans))
	for _, f := range orphans {
		for _, v := range b.Volumes {
			if f.Rule == RuleOrphan && f.What == "backend volume "+v.ID && leakedByProvisioner(v, s.Origins, cycles, stops) {
				f.Rule, f.Why = RuleUpstream, f.Why+"; "+provisionerLeak
			}
		}
		out = append(out, f)
	}
	return out
}

// provisionerStops are the times the provisioner stopped serving.
func provisionerStops(s Snapshot) []time.Time {
	var out []time.Time
	for _, k := range s.Kills {
		if k.Component == "provisioner" {
			out = append(out, k.At)
		}
	}
	for _, e := range s.Exits {
		if e.Component == "provisioner" {
			out = append(out, e.At)
		}
	}
	return out
}

func leakedByProvisioner(v BackendVolume, origins Origins, cycles map[string]Cycle, stops []time.Time) bool {
	if _, seen := origins[v.ID]; seen {
		return false
	}
	c, ok := cycles[origins.of(v.SourceSnapshot, v.SourceVolume)]
	if !ok || c.Outcome != OutcomeCutShort {
		return false
	}
	for _, t := range stops {
		if !t.Before(c.Start) && (c.End.IsZero() || !t.After(c.End)) {
			return true
		}
	}
	return false
}
