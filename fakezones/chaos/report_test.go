package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A finding counts for the components killed during its cycle, an
// operation for those killed while it was in flight; the totals count
// each once, and a finding of no known cycle only there.
func TestRowsAttribution(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := Snapshot{
		Kills: []Kill{
			{Component: "etcd", At: at(5), Back: 2 * time.Second},
			{Component: "snapshotter", At: at(12), Back: time.Second},
			{Component: "etcd", At: at(40), Back: 3 * time.Second},
		},
		Exits: []Exit{{Component: "snapshotter", At: at(13)}},
		Ops: []Op{
			{Cycle: "c1", What: "snapshot ready", Start: at(4), End: at(6)},  // etcd's first kill
			{Cycle: "c1", What: "restore bound", Start: at(10), End: at(20)}, // the snapshotter's kill
			{Cycle: "c2", What: "source bound", Start: at(21), End: at(22)},  // no kill
		},
		Cycles: []Cycle{
			{Name: "c1", Scenario: "edit-class", Start: at(0), End: at(30), Outcome: "failed: snapshot never ready"},
			{Name: "c2", Scenario: "zonal-wffc", Start: at(21), Outcome: ""}, // open: ends with the run
		},
	}
	findings := []Finding{
		{Rule: RuleOrphan, What: "backend snapshot snap-1", Cycle: "c1"},
		{Rule: RuleStuck, What: "PersistentVolumeClaim chaos/restore-2", Cycle: "c2"},
		{Rule: RuleStuck, What: "VolumeSnapshotContent x"},
		{Rule: RuleMissing, What: "PersistentVolume pv-1", Cycle: "c1"},
	}
	got := Rows([]string{"etcd", "snapshotter", "kube-apiserver"}, s, findings, at(50))
	want := []Row{
		{Component: "etcd", Kills: 2, Back: 3 * time.Second, Ops: 1, Orphans: 1, Stuck: 1},
		{Component: "snapshotter", Kills: 1, Back: time.Second, Exits: 1, Ops: 1, Orphans: 1},
		{Component: "kube-apiserver"},
		{Component: Total, Kills: 3, Back: 3 * time.Second, Exits: 1, Ops: 3, Orphans: 1, Stuck: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Rows (-want +got):\n%s", diff)
	}

	scen := Scenarios(s, findings)
	wantScen := []ScenarioRow{
		{Scenario: "edit-class", Cycles: 1, Failed: 1, Orphans: 1, Other: 1},
		{Scenario: "zonal-wffc", Cycles: 1, CutShort: 1, Stuck: 1},
	}
	if diff := cmp.Diff(wantScen, scen); diff != "" {
		t.Fatalf("Scenarios (-want +got):\n%s", diff)
	}

	var b strings.Builder
	WriteComponents(&b, got)
	WriteScenarios(&b, scen)
	WriteFindings(&b, s, findings)
	for _, line := range []string{
		"COMPONENT  KILLS  SLOWEST BACK  OTHER EXITS  OPS DURING KILLS  ORPHANS  STUCK",
		"     etcd      2            3s            0                 1        1      1",
		"    total      3            3s            1                 3        1      2",
		"orphan: backend snapshot snap-1",
		`cycle c1 (edit-class) ended "failed: snapshot never ready"`,
		"stuck: VolumeSnapshotContent x",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the report lacks %q:\n%s", line, b.String())
		}
	}
}
