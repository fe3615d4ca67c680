package chaos

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/zonepath/zonepath/driver/faults"
)

// The rules of an edit scenario, loaded by the driver's own injector:
// the first CreateSnapshot of the source volume runs and loses its reply,
// the next three never reach the driver, the fifth does; another volume's
// snapshots are untouched. The controller log the injector writes is what
// faultFile reads back: the reload and each fault, by rule.
func TestLostReplyRules(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	log := &lockedWriter{w: &buf}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(log)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	f := &faultFile{path: filepath.Join(dir, "faults.yaml"), log: filepath.Join(dir, "controller.log")}
	if err := f.clear(); err != nil {
		t.Fatal(err)
	}
	inj, err := faults.New(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	go inj.Watch(ctx, 10*time.Millisecond)

	offset, err := f.set(lostReply("c007-edit-class", "CreateSnapshot", "vol-src", true))
	if err != nil {
		t.Fatal(err)
	}
	// The injector's watcher writes the log while the test reads it.
	flush := func() {
		log.mu.Lock()
		defer log.mu.Unlock()
		if err := os.WriteFile(f.log, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.reloaded(ctx, offset, func() bool { flush(); return false }); err != nil {
		t.Fatalf("the reload was never seen in the log: %v\n%s", err, f.logText())
	}

	calls := 0
	handler := func(context.Context, any) (any, error) { calls++; return &csi.CreateSnapshotResponse{}, nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateSnapshot"}
	call := func(source string) codes.Code {
		_, err := inj.UnaryInterceptor()(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: source}, info, handler)
		return status.Code(err)
	}
	want := []struct {
		code  codes.Code
		calls int
	}{
		{codes.DeadlineExceeded, 1},                                            // ran, reply lost
		{codes.Unavailable, 1}, {codes.Unavailable, 1}, {codes.Unavailable, 1}, // held
		{codes.OK, 2}, // the retry after the edit
	}
	for i, w := range want {
		if got := call("vol-src"); got != w.code || calls != w.calls {
			t.Fatalf("call %d: %v with %d handler calls, want %v with %d", i+1, got, calls, w.code, w.calls)
		}
	}
	if got := call("vol-other"); got != codes.OK || calls != 3 {
		t.Fatalf("another volume's CreateSnapshot: %v (handler calls %d): the rules must name their object", got, calls)
	}
	flush()
	if n := f.fired(offset, "c007-edit-class-lose-reply"); n != 1 {
		t.Errorf("fired(lose-reply) = %d, want 1; log:\n%s", n, f.logText())
	}
	if n := f.fired(offset, "c007-edit-class-hold-retries"); n != holdRetries {
		t.Errorf("fired(hold-retries) = %d, want %d", n, holdRetries)
	}
	if n := f.fired(fileSize(f.log), "c007-edit-class-lose-reply"); n != 0 {
		t.Errorf("fired after the end of the log = %d", n)
	}
}

func TestLostReplyWithoutHold(t *testing.T) {
	rs := lostReply("c001-lost-volume-reply", "CreateVolume", "snap-1", false)
	if len(rs.Rules) != 1 || rs.Rules[0].Action.When != faults.WhenAfter || rs.Rules[0].Match.Count != 1 {
		t.Fatalf("rules = %+v, want one lost reply", rs.Rules)
	}
}

func (f *faultFile) logText() string {
	data, _ := os.ReadFile(f.log)
	return string(data)
}
