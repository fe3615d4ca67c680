package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// process is a CSI driver binary serving on a unix socket in its own
// directory, and one client connection to it shared by every caller, as
// a CO has.
type process struct {
	name string
	cmd  *exec.Cmd
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
}

// start runs bin with args plus --endpoint on dir/csi.sock, its log in
// dir/<name>.log, and returns once it answers GetPluginInfo.
func start(name, bin, dir string, args ...string) (*process, error) {
	sock := filepath.Join(dir, "csi.sock")
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, append(args, "--endpoint", "unix://"+sock)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{name: name, cmd: cmd}
	if err := p.connect(sock); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s (log %s): %w", name, log.Name(), err)
	}
	return p, nil
}

func (p *process) connect(sock string) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	p.conn, p.ctrl = conn, csi.NewControllerClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	return err
}

// stop ends the process with SIGTERM and waits for it.
func (p *process) stop() {
	if p.conn != nil {
		p.conn.Close()
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// cpu is the CPU time the process has used so far (user and system),
// from /proc: the driver's own share of a measurement, apart from the
// client's. Zero where /proc is missing.
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th of the whole line.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100
