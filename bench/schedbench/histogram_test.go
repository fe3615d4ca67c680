package schedbench

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// exposition is a scheduler's /metrics: two series of the attempt
// histogram, which sum to 12 samples, and a gauge.
var exposition = "# TYPE " + attemptMetric + " histogram\n" +
	attemptSeries("scheduled", 1, 3, 10, 0.02) + attemptSeries("unschedulable", 0, 0, 2, 0.006) +
	"# TYPE scheduler_pending_pods gauge\nscheduler_pending_pods{queue=\"active\"} 0\n"

// attemptSeries is one series of attemptMetric of profile "bench" with
// cumulative counts under the bounds 0.001, 0.002 and 0.004, all of
// them under +Inf.
func attemptSeries(result string, c1, c2, c4 uint64, sum float64) string {
	labels := `profile="bench",result="` + result + `"`
	var b strings.Builder
	for i, le := range []string{"0.001", "0.002", "0.004", "+Inf"} {
		fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", attemptMetric, labels, le, []uint64{c1, c2, c4, c4}[i])
	}
	fmt.Fprintf(&b, "%s_sum{%s} %v\n%s_count{%s} %d\n", attemptMetric, labels, sum, attemptMetric, labels, c4)
	return b.String()
}

func TestHistogram(t *testing.T) {
	bounds := []float64{0.001, 0.002, 0.004}
	for _, tc := range []struct {
		name    string
		metric  string
		match   map[string]string
		want    histogram
		wantErr string
	}{
		{"one series", attemptMetric, map[string]string{"result": "scheduled"},
			histogram{Bounds: bounds, Counts: []uint64{1, 3, 10}, Count: 10}, ""},
		{"series summed", attemptMetric, map[string]string{"profile": "bench"},
			histogram{Bounds: bounds, Counts: []uint64{1, 3, 12}, Count: 12}, ""},
		{"no series matches", attemptMetric, map[string]string{"profile": "other"}, histogram{}, ""},
		{"label absent from the series", attemptMetric, map[string]string{"node": "x"}, histogram{}, ""},
		{"not a histogram", "scheduler_pending_pods", nil, histogram{}, "no histogram scheduler_pending_pods"},
		{"missing", "nope", nil, histogram{}, "no histogram nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			families, err := parseMetrics(strings.NewReader(exposition))
			if err != nil {
				t.Fatal(err)
			}
			got, err := readHistogram(families, tc.metric, tc.match)
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("histogram (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMetricsBadText(t *testing.T) {
	if _, err := parseMetrics(strings.NewReader("not metrics {")); err == nil {
		t.Error("no error for text that is not the Prometheus format")
	}
}

func TestHistogramAdd(t *testing.T) {
	a := histogram{Bounds: []float64{1, 2}, Counts: []uint64{1, 2}, Count: 3}
	for _, tc := range []struct {
		name    string
		h, o    histogram
		want    histogram
		wantErr bool
	}{
		{"empty plus a", histogram{}, a, a, false},
		{"a plus empty", a, histogram{}, a, false},
		{"a plus a", a, a, histogram{Bounds: []float64{1, 2}, Counts: []uint64{2, 4}, Count: 6}, false},
		{"other buckets", a, histogram{Bounds: []float64{1, 3}, Counts: []uint64{0, 0}, Count: 1}, histogram{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.h.add(tc.o)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Errorf("sum (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	// 10 samples: 1 in (0,1], 1 in (1,2], 8 in (2,4].
	h := histogram{Bounds: []float64{1, 2, 4}, Counts: []uint64{1, 2, 10}, Count: 10}
	for _, tc := range []struct {
		name string
		h    histogram
		q    float64
		want float64
	}{
		{"inside the first bucket", h, 0.05, 0.5},
		{"at a bucket's top", h, 0.2, 2},
		{"interpolated in the last bucket", h, 0.6, 3},
		{"p99", h, 0.99, 3.975},
		{"empty buckets before", histogram{Bounds: []float64{1, 2}, Counts: []uint64{0, 4}, Count: 4}, 0.5, 1.5},
		{"in +Inf: the highest bound", histogram{Bounds: []float64{1, 2}, Counts: []uint64{1, 1}, Count: 4}, 0.99, 2},
		{"no samples", histogram{Bounds: []float64{1}, Counts: []uint64{0}}, 0.99, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.h.quantile(tc.q)
			if !(math.Abs(got-tc.want) < 1e-9 || math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}
