package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// TestLogging: --logging-format=json prints one JSON object per line with
// the message and the logger's name, -v reaches klog, text stays klog's
// text, and an unknown format stops the start naming the flag.
func TestLogging(t *testing.T) {
	tests := []struct {
		name    string
		gate    bool // a fresh gate, as utilfeature's: no logging features yet
		args    []string
		wantErr string
		check   func(t *testing.T, out string)
	}{
		{name: "json", args: []string{"--logging-format=json", "-v=2"}, check: func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				t.Fatalf("got %d lines, want 2 (Starting and V(2), not V(3)):\n%s", len(lines), out)
			}
			for _, l := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("line %q is not JSON: %v", l, err)
				}
				if m["logger"] != "test-component" || m["msg"] == nil {
					t.Errorf("line %q: want logger test-component and a msg", l)
				}
			}
		}},
		{name: "text", args: []string{"--v=0"}, check: func(t *testing.T, out string) {
			if !strings.Contains(out, `"Starting" logger="test-component" version="v1"`) || strings.Contains(out, "verbose") {
				t.Errorf("text output:\n%s", out)
			}
		}},
		{name: "with a gate", gate: true, args: []string{"--logging-format=json", "--feature-gates=ContextualLogging=true"}, check: func(t *testing.T, out string) {
			if !strings.HasPrefix(out, `{"ts":`) {
				t.Errorf("not JSON:\n%s", out)
			}
		}},
		{name: "unknown gate", gate: true, args: []string{"--feature-gates=NoSuchGate=true"}, wantErr: "unrecognized feature gate: NoSuchGate"},
		{name: "unknown format", args: []string{"--logging-format=yaml"}, wantErr: `logging flags: format: Invalid value: "yaml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { _ = logsapi.ResetForTest(nil) })
			var out bytes.Buffer
			var gate featuregate.MutableVersionedFeatureGate
			if tc.gate {
				gate = featuregate.NewFeatureGate()
			}
			c := NewCommand("test-component", "v1", gate)
			c.logOutput = &out
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			c.AddFlags(fs)
			// Parsing refuses unknown gates; Start, unknown formats.
			err := fs.Parse(tc.args)
			var ctx context.Context
			stop := func() {}
			if err == nil {
				ctx, stop, err = c.Start()
			}
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			defer stop()
			logger := klog.FromContext(ctx)
			logger.V(2).Info("verbose", "n", 2)
			logger.V(3).Info("too verbose")
			klog.Flush()
			tc.check(t, out.String())
		})
	}
}
