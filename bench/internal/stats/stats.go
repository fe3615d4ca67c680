// Package stats holds the arithmetic the benchmarks share, so that
// csibench and schedbench report their rounds alike.
package stats

import (
	"math"
	"slices"
)

// Median of xs, the mean of the middle two for an even count; NaN for
// none. The benchmarks report the median round so that a burst of load
// from elsewhere on the machine, which slows one round, does not move it.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
