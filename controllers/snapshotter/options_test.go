package snapshotter

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	good := Options{DriverName: "d", Timeout: time.Second, SnapshotNamePrefix: "snapshot", SnapshotNameUUIDLength: -1,
		Workers: 1, RetryIntervalStart: time.Second, RetryIntervalMax: time.Minute}
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"uuid length 8", func(o *Options) { o.SnapshotNameUUIDLength = 8 }, ""},
		{"empty prefix", func(o *Options) { o.SnapshotNamePrefix = "" }, "--snapshot-name-prefix"},
		{"uuid length 0", func(o *Options) { o.SnapshotNameUUIDLength = 0 }, "--snapshot-name-uuid-length"},
		{"uuid length 33", func(o *Options) { o.SnapshotNameUUIDLength = 33 }, "--snapshot-name-uuid-length"},
		{"no workers", func(o *Options) { o.Workers = 0 }, "--worker-threads"},
		{"max below start", func(o *Options) { o.RetryIntervalMax = time.Millisecond }, "--retry-interval-max"},
		{"no driver", func(o *Options) { o.DriverName = "" }, "driver name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.change(&o)
			err := o.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}
