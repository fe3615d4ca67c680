package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/plugin"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// TestConfigDriverName: --drivername reaches plugin.Config.Name, and a name
// that is not a CSI driver name stops the start with an error naming the
// flag.
func TestConfigDriverName(t *testing.T) {
	tests := []struct {
		name, disable string
		wantErr       string
		wantSnapshot  bool // snapshot accessibility still advertised
	}{
		{name: plugin.DefaultName, wantSnapshot: true},
		{name: "nocap.zonepath.csi.dev", disable: "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"},
		{name: "", wantErr: "--drivername: a CSI driver name is required"},
		{name: "-zonepath.csi.dev", wantErr: "--drivername: CSI driver name \"-zonepath.csi.dev\" is not in domain name notation"},
		{name: "zone_path", wantErr: "not in domain name notation"},
		{name: strings.Repeat("z", 64), wantErr: "has 64 characters, more than 63"},
		{name: "zonepath.csi.dev", disable: "SNAPSHOTS", wantErr: `--disable-capabilities: unknown capability "SNAPSHOTS"`},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.disable, func(t *testing.T) {
			o := options{name: tc.name, disable: tc.disable, controller: true, stateDir: t.TempDir()}
			cfg, err := o.config(context.Background())
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if cfg.Name != tc.name {
				t.Errorf("Config.Name = %q, want %q", cfg.Name, tc.name)
			}
			if got := !cfg.DisableSnapshotAccessibility; got != tc.wantSnapshot {
				t.Errorf("snapshot accessibility advertised = %v, want %v", got, tc.wantSnapshot)
			}
		})
	}
}

// TestRegistrationFlags: registration is off unless
// --kubelet-registration-path is given, is only for the node plugin, and
// bad paths stop the start with an error naming the flag.
func TestRegistrationFlags(t *testing.T) {
	const host = "/var/lib/kubelet/plugins/zonepath.csi.dev/csi.sock"
	tests := []struct {
		name           string
		o              options
		wantRegistered bool
		wantErr        string
	}{
		{name: "off by default", o: options{node: true, pluginRegistrationPath: "/registration"}},
		{name: "on", o: options{node: true, kubeletRegistrationPath: host, pluginRegistrationPath: "/registration"}, wantRegistered: true},
		{name: "controller only", o: options{controller: true, kubeletRegistrationPath: host, pluginRegistrationPath: "/registration"},
			wantErr: "--kubelet-registration-path registers the node plugin with kubelet: it needs --node"},
		{name: "URL instead of path", o: options{node: true, kubeletRegistrationPath: "unix://" + host, pluginRegistrationPath: "/registration"},
			wantErr: "--kubelet-registration-path: the CSI socket's path on the host \"unix://"},
		{name: "relative registration dir", o: options{node: true, kubeletRegistrationPath: host, pluginRegistrationPath: "registration"},
			wantErr: "--plugin-registration-path: \"registration\" is not an absolute path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.name = plugin.DefaultName
			reg, err := tc.o.registration()
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if got := reg != nil; got != tc.wantRegistered {
				t.Errorf("registering = %v, want %v", got, tc.wantRegistered)
			}
		})
	}
}

// TestFaultRulesFlag: --fault-rules may be repeated, each file becoming a
// source of rules of its own in the order given; an empty value means no
// rules, as before; a file given twice stops the start naming the flag.
func TestFaultRulesFlag(t *testing.T) {
	dir := t.TempDir()
	user, outage := filepath.Join(dir, "user.yaml"), filepath.Join(dir, "outage.yaml")
	for _, p := range []string{user, outage} {
		if err := os.WriteFile(p, []byte("rules: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name      string
		args      []string
		wantFiles []string
		wantErr   string
	}{
		{name: "none"},
		{name: "empty", args: []string{"--fault-rules="}},
		{name: "one", args: []string{"--fault-rules=" + user}, wantFiles: []string{user}},
		{name: "repeated", args: []string{"--fault-rules", user, "--fault-rules=" + outage}, wantFiles: []string{user, outage}},
		{name: "twice the same", args: []string{"--fault-rules=" + user, "--fault-rules=" + user}, wantErr: "--fault-rules: fault file " + user + ": given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options{name: plugin.DefaultName, controller: true, stateDir: t.TempDir()}
			fs := flag.NewFlagSet("zonepath", flag.ContinueOnError)
			o.addFaultFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config(context.Background())
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if got := cfg.Faults.Files(); !slices.Equal(got, tc.wantFiles) {
				t.Errorf("fault files %v, want %v", got, tc.wantFiles)
			}
			if (cfg.Faults != nil) != (len(tc.wantFiles) > 0) {
				t.Errorf("Config.Faults = %v with files %v: want an injector exactly when there are files", cfg.Faults, tc.wantFiles)
			}
		})
	}
}
