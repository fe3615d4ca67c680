package chaos

import (
	"testing"
	"time"
)

// TestProvisionerLeaks: an orphan restored volume is put down to
// external-provisioner#486 only with all of its signature (never a PV the
// run saw, its cycle cut short by the run's end, the provisioner stopped
// during that cycle); lacking any one, it stays an orphan, which fails
// the run even with --tolerate-upstream-defects. Found by make chaos in
// .ci/run on 2026-12-06: the driver was killed (the provisioner exiting
// on the lost connection) 0.4 s after CreateVolume answered for a
// cut-short cycle's restore.
func TestProvisionerLeaks(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 19, 29, 0, 0, time.UTC)
	vol := BackendVolume{ID: "vol-leaked", Segment: seg("region-2", "zone-d"), SourceSnapshot: "snap-1"}
	orphan := Finding{Rule: RuleOrphan, What: "backend volume vol-leaked", Why: "no PersistentVolume has this volumeHandle", Cycle: "c031"}
	cutShort := Cycle{Name: "c031", Scenario: "exhausted", Start: t0, End: t0.Add(10 * time.Second), Outcome: OutcomeCutShort}
	exit := Exit{Component: "provisioner", At: t0.Add(5 * time.Second), Why: lostCSI}
	base := func() Snapshot {
		return Snapshot{Cycles: []Cycle{cutShort}, Exits: []Exit{exit}, Origins: Origins{"snap-1": "c031"}}
	}
	for _, tc := range []struct {
		name   string
		edit   func(*Snapshot)
		orphan Finding
		want   string
	}{
		{"the signature: exit on a lost CSI connection", func(*Snapshot) {}, orphan, RuleUpstream},
		{"the signature: provisioner killed", func(s *Snapshot) {
			s.Exits, s.Kills = nil, []Kill{{Component: "provisioner", At: t0.Add(time.Second)}}
		}, orphan, RuleUpstream},
		{"cycle still running at the audit", func(s *Snapshot) { s.Cycles[0].End = time.Time{} }, orphan, RuleUpstream},
		{"its PV was seen bound", func(s *Snapshot) { s.Origins["vol-leaked"] = "c031" }, orphan, RuleOrphan},
		{"the cycle ran to its end", func(s *Snapshot) { s.Cycles[0].Outcome = OutcomeOK }, orphan, RuleOrphan},
		{"the cycle failed", func(s *Snapshot) { s.Cycles[0].Outcome = "timed out" }, orphan, RuleOrphan},
		{"the provisioner never stopped", func(s *Snapshot) { s.Exits = nil }, orphan, RuleOrphan},
		{"another component stopped", func(s *Snapshot) { s.Exits[0].Component = "snapshotter" }, orphan, RuleOrphan},
		{"the provisioner stopped before the cycle", func(s *Snapshot) { s.Exits[0].At = t0.Add(-time.Second) }, orphan, RuleOrphan},
		{"the provisioner stopped after the cycle", func(s *Snapshot) { s.Exits[0].At = t0.Add(11 * time.Second) }, orphan, RuleOrphan},
		{"a volume of no known cycle", func(s *Snapshot) { delete(s.Origins, "snap-1") }, orphan, RuleOrphan},
		{"an orphan snapshot is not the provisioner's", func(*Snapshot) {},
			Finding{Rule: RuleOrphan, What: "backend snapshot snap-1", Cycle: "c031"}, RuleOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			s.Cycles = append([]Cycle(nil), s.Cycles...)
			s.Exits = append([]Exit(nil), s.Exits...)
			tc.edit(&s)
			got := ProvisionerLeaks([]Finding{tc.orphan}, Backend{Volumes: []BackendVolume{vol}}, s)
			if len(got) != 1 || got[0].Rule != tc.want {
				t.Fatalf("rule %v, want %s", got, tc.want)
			}
			if err := Verdict(got, true); (err == nil) != (tc.want == RuleUpstream) {
				t.Errorf("Verdict tolerating upstream defects: %v", err)
			}
		})
	}
}
