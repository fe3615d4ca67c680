package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/registration/kubelettest"
)

// TestKubeletRegistration runs bin/zonepath with --kubelet-registration-path
// beside kubelet's plugin manager, whose CSI handler calls NodeGetInfo on
// the endpoint it is given as kubelet's does: the driver must be
// registered with its live socket and stay up, or exit 1 with kubelet's
// error when kubelet refuses it, and leave no registration socket behind.
func TestKubeletRegistration(t *testing.T) {
	tests := []struct {
		name string
		// endpoint is what the driver tells kubelet, relative to the
		// test's directory.
		endpoint string
		wantExit int
		wantLog  string
	}{
		{name: "registered", endpoint: "csi.sock", wantLog: `"Registered with kubelet"`},
		{name: "wrong host path", endpoint: "elsewhere.sock", wantExit: 1,
			wantLog: "kubelet did not register driver zonepath.csi.dev"},
	}
	bin := driverBinary(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := drivertest.ShortTempDir(t)
			regDir := filepath.Join(dir, "plugins_registry")
			h := &kubelettest.CSIHandler{NodeGetInfo: true}
			kubelettest.Start(t, regDir, h)
			kubelettest.WaitFor(t, "the plugin watcher's directory", func() bool { _, err := os.Stat(regDir); return err == nil })

			logPath := filepath.Join(dir, "driver.log")
			cmd := exec.Command(bin, "--endpoint", "unix://"+filepath.Join(dir, "csi.sock"), "--nodeid", "n1", "--node-zone", "zone-a",
				"--controller=false", "--state-dir", filepath.Join(dir, "state"), "--mount", "none",
				"--kubelet-registration-path", filepath.Join(dir, tc.endpoint), "--plugin-registration-path", regDir)
			cmd.Stderr = driverLog(t, logPath)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })

			if tc.wantExit == 0 {
				kubelettest.WaitFor(t, "NodeGetInfo through kubelet", func() bool { return len(h.NodeIDs()) > 0 })
				if ids := h.NodeIDs(); ids[0] != "n1" {
					t.Errorf("NodeGetInfo through the registered endpoint = %q, want n1", ids[0])
				}
				cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				if code := cmd.ProcessState.ExitCode(); code != tc.wantExit {
					t.Errorf("driver exited %d (%v), want %d", code, err, tc.wantExit)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("driver did not exit")
			}
			if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), tc.wantLog) {
				t.Errorf("driver log lacks %q", tc.wantLog)
			}
			if entries, _ := os.ReadDir(regDir); len(entries) != 0 {
				t.Errorf("registration directory holds %v after the driver exited, want nothing", entries)
			}
		})
	}
}
