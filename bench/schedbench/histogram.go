package schedbench

import (
	"fmt"
	"io"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The scheduler histograms the benchmark reads latency from. Neither
// counts the time a pod waited in the queue, which with a backlog of a
// thousand pods says more about the backlog than about the scheduler.
const (
	// algorithmMetric times the scheduling algorithm of one pod:
	// PreFilter, Filter and Score, where SnapshotTopology does its work.
	algorithmMetric = "scheduler_scheduling_algorithm_duration_seconds"
	// attemptMetric times a whole attempt up to the pod's binding, which
	// for a pod with a WaitForFirstConsumer claim includes VolumeBinding's
	// PreBind wait for the volume (a one-second poll), the same with and
	// without the plugin.
	attemptMetric = "scheduler_scheduling_attempt_duration_seconds"
)

// histogram is a Prometheus histogram: cumulative counts per upper
// bound, the +Inf bucket being Count.
type histogram struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
}

// parseMetrics reads Prometheus text format.
func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return families, nil
}

// readHistogram is the sum of the series of the histogram name whose labels
// include match.
func readHistogram(families map[string]*dto.MetricFamily, name string, match map[string]string) (histogram, error) {
	family, ok := families[name]
	if !ok || family.GetType() != dto.MetricType_HISTOGRAM {
		return histogram{}, fmt.Errorf("no histogram %s in the metrics", name)
	}
	var sum histogram
	for _, m := range family.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		var err error
		if sum, err = sum.add(fromProto(m.GetHistogram())); err != nil {
			return histogram{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return sum, nil
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(match)
}

func fromProto(h *dto.Histogram) histogram {
	var out histogram
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.Bounds = append(out.Bounds, b.GetUpperBound())
		out.Counts = append(out.Counts, b.GetCumulativeCount())
	}
	out.Count = h.GetSampleCount()
	return out
}

// add is the histogram of both samples; an empty histogram adds to
// anything, others need the same bounds.
func (h histogram) add(o histogram) (histogram, error) {
	switch {
	case len(o.Bounds) == 0 && o.Count == 0:
		return h, nil
	case len(h.Bounds) == 0 && h.Count == 0:
		return o, nil
	case !slices.Equal(h.Bounds, o.Bounds):
		return histogram{}, fmt.Errorf("histograms with different buckets: %v and %v", h.Bounds, o.Bounds)
	}
	sum := histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts)), Count: h.Count + o.Count}
	for i := range h.Counts {
		sum.Counts[i] = h.Counts[i] + o.Counts[i]
	}
	return sum, nil
}

// quantile estimates the q-quantile (0 < q <= 1) the way Prometheus'
// histogram_quantile does: linear interpolation inside the bucket that
// holds it, the first bucket starting at 0. A quantile in the +Inf bucket
// is the highest finite bound (a lower limit); no samples give NaN.
func (h histogram) quantile(q float64) float64 {
	if h.Count == 0 {
		return math.NaN()
	}
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for i, bound := range h.Bounds {
		if float64(h.Counts[i]) >= rank {
			in := h.Counts[i] - below
			if in == 0 {
				return bound
			}
			return lower + (bound-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = bound, h.Counts[i]
	}
	if len(h.Bounds) == 0 {
		return math.NaN()
	}
	return h.Bounds[len(h.Bounds)-1]
}
