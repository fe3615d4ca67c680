package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/fakezones/proc"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// userFaults is a fault file as a user writes one: comments, its own
// layout, and a rule meant for the first two CreateVolume calls only.
const userFaults = `# Fail the first two CreateVolume calls: the provisioner must retry.
rules:
  - name: first-two-creates   # not every one
    match: {rpc: CreateVolume, count: 2}
    action:
      code: Unavailable
`

// TestZoneDownUpLeavesUserFaultFile takes a zone down and up in a cluster
// started with the user's fault file, as e2e scenario 20 does, against a
// controller's fault injector fed exactly the --fault-rules the cluster
// gives the zonepath controller and logging its reloads where the
// controller does. The user's file must come back byte for byte (a tool
// does not edit its input) and its rule must keep its counters: it fired
// on the first two calls and must not fire again once the zone is back.
func TestZoneDownUpLeavesUserFaultFile(t *testing.T) {
	dir, user := t.TempDir(), filepath.Join(t.TempDir(), "my-faults.yaml")
	write(t, user, userFaults)
	u := &up{o: Options{WorkDir: dir, DriverFaultRules: user, Cluster: &spec.Cluster{}}, w: &workDir{dir: dir}}
	if err := u.w.reset(); err != nil {
		t.Fatal(err)
	}
	write(t, u.w.path("driver", "topology.yaml"), "regions:\n- name: region-1\n  zones: [{name: zone-a}, {name: zone-b}]\n")
	if err := u.faultFile(); err != nil {
		t.Fatal(err)
	}
	s := u.newState()
	// The test process stands in for the controller, which must run.
	s.Processes = []*proc.Process{{Name: "zonepath-controller", PID: os.Getpid()}}
	if err := u.w.writeState(s); err != nil {
		t.Fatal(err)
	}
	inj := startController(t, u)

	createVolume := func() codes.Code {
		_, err := inj.UnaryInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"},
			func(context.Context, any) (any, error) { return "ok", nil })
		return status.Code(err)
	}
	segB := map[string]string{"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-b"}
	setZone := func(down bool) {
		t.Helper()
		var out bytes.Buffer
		if _, _, err := setOutageRule(t.Context(), dir, "zone-b", down, &out); err != nil {
			t.Fatalf("zone-b down=%v: %v\n%s", down, err, out.String())
		}
		if inj.Down(segB) != down {
			t.Fatalf("after zone-b down=%v the controller sees it down=%v", down, !down)
		}
	}
	got := []codes.Code{createVolume(), createVolume()}
	setZone(true)
	got = append(got, createVolume())
	setZone(false)
	got = append(got, createVolume())

	want := []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK, codes.OK}
	if !slices.Equal(got, want) {
		t.Errorf("CreateVolume codes %v over zone-b down and up, want %v: the rule for the first two calls fired again", got, want)
	}
	after, err := os.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != userFaults {
		t.Errorf("zone down and up rewrote the user's fault file %s:\n%s\nwant it untouched:\n%s", user, after, userFaults)
	}
}

// startController loads the --fault-rules files of u's zonepath controller
// into an injector whose watch logs to the controller's log, as
// bin/zonepath does, until the test ends.
func startController(t *testing.T, u *up) *faults.Injector {
	t.Helper()
	var files []string
	for _, a := range u.driverController().args {
		if f, ok := strings.CutPrefix(a, "--fault-rules="); ok {
			files = append(files, f)
		}
	}
	inj, err := faults.NewFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(u.w.log("zonepath-controller"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log)))))
	done := make(chan struct{})
	go func() { defer close(done); inj.Watch(ctx, 20*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done; log.Close() })
	return inj
}

// TestOutageRulesOfOlderClusters: a cluster started by this version has
// its outage file; one started before it read outage rules from its one
// fault file, which zone down still writes when it is the work
// directory's own and refuses to when it is the user's.
func TestOutageRulesOfOlderClusters(t *testing.T) {
	const dir = "/work/c"
	for _, tc := range []struct {
		name    string
		s       *State
		want    string
		wantErr string
	}{
		{name: "this version", s: &State{DriverFaultRules: "/home/me/faults.yaml", OutageRules: dir + "/driver/outage-rules.yaml"}, want: dir + "/driver/outage-rules.yaml"},
		{name: "older, its own fault file", s: &State{DriverFaultRules: dir + "/driver/fault-rules.yaml"}, want: dir + "/driver/fault-rules.yaml"},
		{name: "older, the user's fault file", s: &State{DriverFaultRules: "/home/me/faults.yaml"},
			wantErr: "the cluster in /work/c was started by an older zonepath-cluster, whose controller reads outage rules only from your fault file /home/me/faults.yaml, which zone down does not edit; start the cluster again"},
		{name: "older still, no fault file", s: &State{}, wantErr: "was started without a driver fault file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.WorkDir = dir
			got, err := outageRules(tc.s)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) || got != tc.want {
				t.Errorf("outageRules = %q, %v; want %q, error containing %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
