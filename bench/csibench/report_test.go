package csibench

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// measured is a sample of ops/s per round (one second each).
func measured(rates ...float64) *sample {
	s := &sample{}
	for _, r := range rates {
		s.add(sample{ops: int(r), elapsed: time.Second})
	}
	return s
}

// passing is a run that meets every target: listings as fast as the
// null driver's and as cheap per entry at both sizes, creates above the
// rates.
func passing() results {
	res := results{}
	for _, c := range []int{1, 8} {
		for _, rpc := range listRPCs {
			res[key{rpc, smallN, c, zonepathName}] = measured(300)
			res[key{rpc, smallN, c, nullName}] = measured(300)
			res[key{rpc, largeN, c, zonepathName}] = measured(30)
			res[key{rpc, largeN, c, nullName}] = measured(30)
		}
		for _, rpc := range []string{"CreateVolume", "CreateSnapshot"} {
			res[key{rpc, largeN, c, zonepathName}] = measured(2000)
		}
	}
	return res
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name   string
		change func(results)
		failed []string
	}{
		{"all met", func(results) {}, nil},
		{"listing 1.6x the null driver's time", func(r results) {
			r[key{"ListVolumes", largeN, 8, zonepathName}] = measured(30 / 1.6)
		}, []string{"ListVolumes at 10000, conc 8: zonepath/null time", "ListVolumes conc 8: zonepath cost per entry 10000/1000"}},
		{"listing 1.4x the null driver's time, per entry flat", func(r results) {
			r[key{"ListSnapshots", largeN, 1, nullName}] = measured(42)
		}, nil},
		{"per-entry cost grows", func(r results) {
			r[key{"ListSnapshots", smallN, 1, zonepathName}] = measured(500)
		}, []string{"ListSnapshots conc 1: zonepath cost per entry 10000/1000"}},
		{"slow creates", func(r results) {
			r[key{"CreateSnapshot", largeN, 1, zonepathName}] = measured(699)
			r[key{"CreateVolume", largeN, 8, zonepathName}] = measured(1499)
		}, []string{"CreateVolume at 10000, conc 8: zonepath ops/s", "CreateSnapshot at 10000, conc 1: zonepath ops/s"}},
		{"a measurement missing fails its checks", func(r results) {
			delete(r, key{"ListVolumes", largeN, 1, nullName})
		}, []string{"ListVolumes at 10000, conc 1: zonepath/null time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := passing()
			tt.change(res)
			var failed []string
			for _, c := range checks(res, []int{1, 8}) {
				if !c.ok {
					failed = append(failed, c.name)
				}
			}
			if !slices.Equal(failed, tt.failed) {
				t.Errorf("failed checks %q, want %q", failed, tt.failed)
			}
			if ok := report(io.Discard, res, []int{smallN, largeN}, []int{1, 8}); ok != (len(tt.failed) == 0) {
				t.Errorf("report says passed = %v", ok)
			}
		})
	}
}

// TestRateIsTheMedianRound: one round slowed by other load does not move
// the rate, and a sample never measured has none.
func TestRateIsTheMedianRound(t *testing.T) {
	if got := measured(100, 10, 110).rate(); got != 100 {
		t.Errorf("rounds 100, 10, 110: rate %v, want 100", got)
	}
	if got := (*sample)(nil).rate(); got != 0 {
		t.Errorf("no sample: rate %v, want 0", got)
	}
}

// TestRunRefusesIncompleteConfig: a config that cannot measure fails
// before any driver starts.
func TestRunRefusesIncompleteConfig(t *testing.T) {
	full := Config{Driver: "zonepath", NullDriver: "nulldriver", Objects: []int{1}, Concurrency: []int{1}, Rounds: 1}
	for name, change := range map[string]func(*Config){
		"no null driver": func(c *Config) { c.NullDriver = "" },
		"no rounds":      func(c *Config) { c.Rounds = 0 },
		"no objects":     func(c *Config) { c.Objects = nil },
		"no concurrency": func(c *Config) { c.Concurrency = nil },
	} {
		c := full
		change(&c)
		if _, err := Run(context.Background(), c, io.Discard); err == nil || !strings.Contains(err.Error(), "required") {
			t.Errorf("%s: error %v, want one saying what is required", name, err)
		}
	}
}
