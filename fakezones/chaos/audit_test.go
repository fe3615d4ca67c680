package chaos

import (
	"cmp"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func seg(region, zone string) map[string]string {
	return map[string]string{v1.LabelTopologyRegion: region, v1.LabelTopologyZone: zone}
}

var backend = Backend{
	Volumes: []BackendVolume{
		{ID: "vol-src", Segment: seg("region-1", "zone-a")},
		{ID: "vol-restored", Segment: seg("region-1", "zone-c"), SourceSnapshot: "snap-1"},
	},
	Snapshots: []BackendSnapshot{{ID: "snap-1", SourceVolume: "vol-src", Segments: []map[string]string{seg("region-1", "zone-a")}}},
}

func apiObjects() []Object {
	return []Object{
		{Kind: "PersistentVolume", Name: "pv-src", Handle: "vol-src", Bound: true},
		{Kind: "PersistentVolume", Name: "pv-restored", Handle: "vol-restored", Bound: true},
		{Kind: "VolumeSnapshotContent", Name: "content-1", Handle: "snap-1", Bound: true},
	}
}

var origins = Origins{"vol-src": "c001-zonal-wffc", "snap-1": "c001-zonal-wffc"}

// Each case breaks one side of the audit; the control case breaks none.
func TestOrphansAndMissing(t *testing.T) {
	for _, tc := range []struct {
		name             string
		backend          Backend
		objs             func([]Object) []Object
		orphans, missing []string
		cycles           []string
	}{
		{name: "control: every object has its other end", backend: backend, objs: func(o []Object) []Object { return o }},
		{
			name:    "a snapshot cut after a lost reply, its content never got the handle",
			backend: backend,
			objs: func(o []Object) []Object {
				o[2].Handle, o[2].Bound = "", false
				return o
			},
			orphans: []string{"backend snapshot snap-1"}, cycles: []string{"c001-zonal-wffc"},
		},
		{
			name:    "a restored volume whose claim went away without DeleteVolume",
			backend: backend,
			objs:    func(o []Object) []Object { return o[:1:1] },
			// The content is gone too: its snapshot is an orphan as well.
			orphans: []string{"backend volume vol-restored", "backend snapshot snap-1"},
			// Traced through the volume's source snapshot.
			cycles: []string{"c001-zonal-wffc", "c001-zonal-wffc"},
		},
		{
			name:    "a bound PV whose volume the driver lost",
			backend: Backend{Volumes: backend.Volumes[:1], Snapshots: backend.Snapshots},
			objs:    func(o []Object) []Object { return o },
			missing: []string{"PersistentVolume pv-restored"},
		},
		{
			name:    "a released PV without its volume is not bound: not missing",
			backend: Backend{Volumes: backend.Volumes[:1], Snapshots: backend.Snapshots},
			objs: func(o []Object) []Object {
				o[1].Bound = false
				return o
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.objs(apiObjects())
			orphans := Orphans(tc.backend, objs, origins)
			if got := whats(orphans); strings.Join(got, ",") != strings.Join(tc.orphans, ",") {
				t.Errorf("orphans = %v, want %v", orphans, tc.orphans)
			}
			for i, c := range tc.cycles {
				if i < len(orphans) && orphans[i].Cycle != c {
					t.Errorf("orphan %s attributed to cycle %q, want %q", orphans[i].What, orphans[i].Cycle, c)
				}
			}
			if got := whats(Missing(tc.backend, objs, origins)); strings.Join(got, ",") != strings.Join(tc.missing, ",") {
				t.Errorf("missing = %v, want %v", got, tc.missing)
			}
		})
	}
}

func whats(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.What)
	}
	return out
}

func TestStuckSaysWhatHoldsIt(t *testing.T) {
	for _, tc := range []struct {
		obj  Object
		rule string // RuleStuck when empty
		want []string
	}{
		{
			obj: Object{Kind: "VolumeSnapshotContent", Name: "snapcontent-1", Handle: "snap-1", Deleting: true,
				Finalizers:  []string{"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"},
				Annotations: map[string]string{"snapshot.storage.kubernetes.io/volumesnapshot-being-created": "yes", "other": "x"}},
			want: []string{"finalizers snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection",
				"annotations snapshot.storage.kubernetes.io/volumesnapshot-being-created", "backend object snap-1"},
		},
		{
			obj: Object{Kind: "VolumeSnapshotContent", Name: "snapcontent-2", Handle: "snap-2", Deleting: true,
				Finalizers: []string{"snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"}},
			rule: RuleUpstream,
			want: []string{"deleted without the snapshot.storage.kubernetes.io/volumesnapshot-being-deleted annotation", "pull request 1446"},
		},
		{
			obj:  Object{Kind: "PersistentVolumeClaim", Namespace: "chaos", Name: "restore-3"},
			want: []string{"no deletion requested"},
		},
		{
			obj:  Object{Kind: "Pod", Namespace: "chaos", Name: "pod-3", Deleting: true},
			want: []string{"deletion requested, nothing holds it"},
		},
	} {
		rule := cmp.Or(tc.rule, RuleStuck)
		f := Stuck([]Object{tc.obj}, nil)
		if len(f) != 1 || f[0].Rule != rule || f[0].What != tc.obj.String() {
			t.Fatalf("Stuck(%s) = %v", tc.obj, f)
		}
		for _, w := range tc.want {
			if !strings.Contains(f[0].Why, w) {
				t.Errorf("Stuck(%s) says %q, want it to say %q", tc.obj, f[0].Why, w)
			}
		}
		if strings.Contains(f[0].Why, "other") {
			t.Errorf("Stuck(%s) names an annotation that marks nothing: %q", tc.obj, f[0].Why)
		}
	}
	if f := Stuck(nil, nil); len(f) != 0 {
		t.Fatalf("Stuck(nothing) = %v", f)
	}
}

func zoneTerms(region string, zones ...string) []v1.TopologySelectorTerm {
	var out []v1.TopologySelectorTerm
	for _, z := range zones {
		out = append(out, v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: v1.LabelTopologyRegion, Values: []string{region}}, {Key: v1.LabelTopologyZone, Values: []string{z}}}})
	}
	return out
}

func pvAffinity(zones ...string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: v1.NodeSelectorOpIn, Values: zones}}}}}}
}

func TestOutsideTopology(t *testing.T) {
	var nodes []map[string]string
	for _, n := range []struct{ name, region, zone string }{
		{"node-a-1", "region-1", "zone-a"}, {"node-b-1", "region-2", "zone-b"}, {"node-c-1", "region-1", "zone-c"},
	} {
		l := seg(n.region, n.zone)
		l[v1.LabelHostname] = n.name
		nodes = append(nodes, l)
	}
	region1 := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: v1.LabelTopologyRegion, Values: []string{"region-1"}}}}}
	for _, tc := range []struct {
		name string
		r    Restore
		want string // empty: inside
	}{
		{name: "control: zonal snapshot, PV in its zone",
			r: Restore{PVAffinity: pvAffinity("zone-a"), Volume: seg("region-1", "zone-a"), ContentAffinity: zoneTerms("region-1", "zone-a")}},
		{name: "control: region snapshot, PV in another zone of the region",
			r: Restore{PVAffinity: pvAffinity("zone-c"), Volume: seg("region-1", "zone-c"), ContentAffinity: region1}},
		{name: "the driver put the volume in another zone",
			r:    Restore{PVAffinity: pvAffinity("zone-a"), Volume: seg("region-2", "zone-b"), ContentAffinity: zoneTerms("region-1", "zone-a")},
			want: "the driver placed volume of PV  in region-2/zone-b"},
		{name: "the PV admits a zone of another region",
			r:    Restore{PVAffinity: pvAffinity("zone-a", "zone-b"), Volume: seg("region-1", "zone-a"), ContentAffinity: region1},
			want: "admits node node-b-1 (region-2/zone-b)"},
		{name: "a PV without nodeAffinity admits everything",
			r: Restore{Volume: seg("region-1", "zone-a"), ContentAffinity: region1}, want: "has no nodeAffinity"},
		{name: "a content without nodeAffinity cannot be checked",
			r: Restore{PVAffinity: pvAffinity("zone-a"), Volume: seg("region-1", "zone-a")}, want: "had no nodeAffinity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OutsideTopology(tc.r, nodes)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("inside the topology, but: %s", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Why, tc.want)):
				t.Fatalf("OutsideTopology = %v, want a finding saying %q", got, tc.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	stuck := Finding{Rule: RuleStuck, What: "PersistentVolumeClaim chaos/c1"}
	upstream := Finding{Rule: RuleUpstream, What: "VolumeSnapshotContent snapcontent-1"}
	for _, tc := range []struct {
		name     string
		findings []Finding
		tolerate bool
		wantErr  bool
	}{
		{name: "none", findings: nil, wantErr: false},
		{name: "an upstream defect fails by default", findings: []Finding{upstream}, wantErr: true},
		{name: "an upstream defect tolerated", findings: []Finding{upstream}, tolerate: true, wantErr: false},
		{name: "a stuck object is never tolerated", findings: []Finding{upstream, stuck}, tolerate: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verdict(tc.findings, tc.tolerate)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrFindings)) {
				t.Errorf("Verdict(%v, %v) = %v, want an error: %v", tc.findings, tc.tolerate, err, tc.wantErr)
			}
		})
	}
}

// TestFailedCycles: a cycle that ended with an error is a finding even
// when it left nothing behind; one that succeeded, or that the run's end
// cut short, is not.
func TestFailedCycles(t *testing.T) {
	cycles := []Cycle{
		{Name: "c001", Scenario: "zonal-immediate", Outcome: OutcomeOK},
		{Name: "c002", Scenario: "region-wffc", Outcome: OutcomeCutShort},
		{Name: "c003", Scenario: "zonal-immediate", Outcome: `claim c003-restore not bound: context deadline exceeded`},
		{Name: "c004", Scenario: "edit-class", Outcome: ""},
	}
	got := Failed(cycles)
	if len(got) != 1 || got[0].Rule != RuleFailed || got[0].Cycle != "c003" || !strings.Contains(got[0].What, "zonal-immediate") {
		t.Fatalf("Failed = %v, want one failed-cycle finding for c003 (zonal-immediate)", got)
	}
	if err := Verdict(got, true); !errors.Is(err, ErrFindings) {
		t.Errorf("Verdict of a failed cycle, upstream defects tolerated = %v, want %v", err, ErrFindings)
	}
}
