package csibench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zonepath/zonepath/fakezones/proc"
)

// process is a CSI driver binary serving on a unix socket in its own
// directory, and one client connection to it shared by every caller, as
// a CO has.
type process struct {
	name string
	proc *proc.Process
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
}

// start runs bin with args plus --endpoint on dir/csi.sock, its log in
// dir/<name>.log, and returns once it answers GetPluginInfo.
func start(name, bin, dir string, args ...string) (*process, error) {
	sock := filepath.Join(dir, "csi.sock")
	pr, err := proc.Start(proc.Spec{Name: name, Path: bin, Args: append(args, "--endpoint", "unix://"+sock),
		Log: filepath.Join(dir, name+".log")})
	if err != nil {
		return nil, err
	}
	p := &process{name: name, proc: pr}
	if err := p.connect(sock); err != nil {
		p.stop()
		select {
		case <-pr.Exited():
			return nil, pr.ExitError() // how it ended, with its log's tail
		default:
			return nil, fmt.Errorf("%s: %w\nlast lines of %s:\n%s", name, err, pr.Log, proc.Tail(pr.Log, 15))
		}
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
	go func() {
		// A driver that exits at start fails the wait at once.
		select {
		case <-p.proc.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	return err
}

// stop closes the connection and ends the process: SIGTERM, SIGKILL
// after 10 s.
func (p *process) stop() {
	if p.conn != nil {
		p.conn.Close()
	}
	if err := p.proc.Stop(context.Background(), 10*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "csibench:", err)
	}
}

// cpu is the CPU time the process has used so far (user and system),
// from /proc: the driver's own share of a measurement, apart from the
// client's. Zero where /proc is missing.
func (p *process) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.proc.PID))
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
