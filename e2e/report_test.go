package e2e

import (
	"slices"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// TestSelectedSpecs: the JUnit file keeps what ran and what skipped
// itself, and drops what this run's filters left out.
func TestSelectedSpecs(t *testing.T) {
	spec := func(text string, state types.SpecState, failure string) types.SpecReport {
		r := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state}
		if failure != "" {
			r.Failure = types.Failure{Message: failure, FailureNodeType: types.NodeTypeIt}
		}
		return r
	}
	tests := []struct {
		name  string
		specs []types.SpecReport
		want  []string
	}{
		{name: "passed and failed stay",
			specs: []types.SpecReport{spec("a", types.SpecStatePassed, ""), spec("b", types.SpecStateFailed, "boom")},
			want:  []string{"a", "b"}},
		{name: "Skip() at run time stays, a real skip",
			specs: []types.SpecReport{spec("gate", types.SpecStateSkipped, "driver ext: featureGates.VolumeSnapshotTopology is true in this cluster")},
			want:  []string{"gate"}},
		{name: "not selected by label filter, focus or file is dropped",
			specs: []types.SpecReport{spec("filtered", types.SpecStateSkipped, ""), spec("ran", types.SpecStatePassed, "")},
			want:  []string{"ran"}},
		{name: "pending stays",
			specs: []types.SpecReport{spec("later", types.SpecStatePending, "")},
			want:  []string{"later"}},
		{name: "suite nodes stay",
			specs: []types.SpecReport{{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed}},
			want:  []string{""}},
		{name: "nothing selected", specs: []types.SpecReport{spec("filtered", types.SpecStateSkipped, "")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := selectedSpecs(ginkgo.Report{SpecReports: tc.specs, PreRunStats: types.PreRunStats{TotalSpecs: len(tc.specs)}})
			var got []string
			for _, s := range r.SpecReports {
				got = append(got, s.LeafNodeText)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			if its := len(r.SpecReports.WithLeafNodeType(types.NodeTypeIt)); r.PreRunStats.TotalSpecs != its {
				t.Errorf("PreRunStats.TotalSpecs = %d, want the %d specs kept", r.PreRunStats.TotalSpecs, its)
			}
		})
	}
}
