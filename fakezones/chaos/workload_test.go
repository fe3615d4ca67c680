package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zonepath/zonepath/fakezones/spec"
)

func TestPlanLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      spec.File
		sources   string
		pair      string
		exhausted string // "zone:quota", or "" for none
		wantErr   string
	}{
		{name: "the default cluster", file: DefaultCluster(),
			sources: "zone-a zone-b zone-c", pair: "zone-a zone-c", exhausted: "zone-d:1"},
		{name: "one region, a quota", file: spec.File{Zones: 3, SnapshotQuotas: map[string]int64{"zone-c": 2}},
			sources: "zone-a zone-b", pair: "zone-a zone-b", exhausted: "zone-c:2"},
		{name: "no quota: no exhausted zone", file: spec.File{Zones: 2},
			sources: "zone-a zone-b", pair: "zone-a zone-b"},
		{name: "a zero quota fills nothing", file: spec.File{Zones: 2, SnapshotQuotas: map[string]int64{"zone-b": 0}},
			sources: "zone-a zone-b", pair: "zone-a zone-b"},
		{name: "no two zones in one region", file: spec.File{Regions: 2, Zones: 2}, wantErr: "two zones in one region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := tc.file.Expand()
			if err != nil {
				t.Fatal(err)
			}
			l, err := planLayout(cl)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sources []string
			for _, w := range l.sources {
				sources = append(sources, w.zone)
			}
			exhausted := ""
			if l.exhausted != nil {
				exhausted = fmt.Sprintf("%s:%d", l.exhausted.zone, l.quota)
				if z := l.sourceZones(); !slices.Contains(z, *l.exhausted) {
					t.Fatalf("source zones %v lack the exhausted zone, where its cycles' volumes are made", z)
				}
			}
			got := [3]string{strings.Join(sources, " "), l.pair[0].zone + " " + l.pair[1].zone, exhausted}
			if want := [3]string{tc.sources, tc.pair, tc.exhausted}; got != want {
				t.Fatalf("layout (sources, pair, exhausted) = %q, want %q", got, want)
			}
			if l.pair[0].region != l.pair[1].region {
				t.Fatalf("pair %v spans regions: an edit to the other zone would leave a region-wide snapshot", l.pair)
			}
			if o := l.other(l.pair[0].zone); o != l.pair[1] {
				t.Fatalf("other(%s) = %v", l.pair[0].zone, o)
			}
		})
	}
}

func TestExitOf(t *testing.T) {
	lost := exitOf("snapshotter", `E1126 connection.go:116] "Lost connection to CSI driver, exiting"`)
	if lost.Why != lostCSI {
		t.Fatalf("a sidecar's exit on a lost connection is %q", lost.Why)
	}
	crash := exitOf("scheduler", "panic: runtime error")
	if crash.Why != "panic: runtime error" {
		t.Fatalf("an unexpected exit keeps its log: %q", crash.Why)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{OutputDir: "out", Duration: 3 * time.Minute, KillEvery: 3 * time.Second}
	if err := ok.validate(); err != nil {
		t.Fatalf("the CI setting is refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"too short for any chaos", func(o *Options) { o.Duration = time.Minute }, "leaves less than"},
		{"no kill interval", func(o *Options) { o.KillEvery = 0 }, "must be positive"},
		{"negative lanes", func(o *Options) { o.Lanes = -1 }, "negative"},
		{"no output directory", func(o *Options) { o.OutputDir = "" }, "no output directory"},
	} {
		o := ok
		tc.change(&o)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	for d, want := range map[time.Duration]time.Duration{
		10 * time.Minute: 75 * time.Second, // an eighth
		5 * time.Minute:  minSettle,        // CI's run: an eighth would leave too little after a late API server kill
		time.Hour:        90 * time.Second,
	} {
		if got := (&Options{Duration: d}).settle(); got != want {
			t.Errorf("settle of a %s run = %s, want %s", d, got, want)
		}
	}
}
