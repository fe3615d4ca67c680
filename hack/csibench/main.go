// Command csibench is make bench's driver benchmark over the CSI socket.
// It runs bin/zonepath and the null driver (hack/nulldriver, the same
// RPCs answered from memory: what gRPC and the socket cost here) as
// processes, fills zonepath with N volumes and N snapshots, and times
// CreateVolume, DeleteVolume, CreateSnapshot, DeleteSnapshot and complete
// paged ListVolumes and ListSnapshots at each N and concurrency, through
// one client connection per driver shared by every caller, as a CO
// calls. The two drivers are timed in alternating rounds, so a change of
// load on the machine touches both. It prints the table, checks the
// targets (report.go) and exits 1 when one is missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// pageSize is max_entries of every list call.
const pageSize = 100

// populateConcurrency fills the driver: more callers, larger group commits.
const populateConcurrency = 32

// sourceVolumes is how many volumes the snapshots are spread over.
const sourceVolumes = 100

type config struct {
	driver, null string
	objects      []int
	concurrency  []int
	rounds       int
	createOps    int
	listTime     time.Duration
	cpuProfile   string
	driverArgs   []string
}

func main() {
	var c config
	var objects, conc, driverArgs string
	flag.StringVar(&c.driver, "driver", "bin/zonepath", "the zonepath binary")
	flag.StringVar(&c.null, "null-driver", "", "the null driver binary (go build ./hack/nulldriver)")
	flag.StringVar(&objects, "objects", "1000,10000", "volumes and snapshots present, each")
	flag.StringVar(&conc, "concurrency", "1,8", "concurrent callers")
	flag.IntVar(&c.rounds, "rounds", 5, "alternating rounds per measurement and driver")
	flag.IntVar(&c.createOps, "create-ops", 1500, "creates (and as many deletes) per measurement and driver, over all rounds")
	flag.DurationVar(&c.listTime, "list-time", 2*time.Second, "time spent listing per measurement and driver, over all rounds")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write the client's CPU profile here")
	flag.StringVar(&driverArgs, "driver-args", "", "more zonepath flags, space-separated")
	flag.Parse()
	var err error
	if c.objects, err = ints(objects); err == nil {
		c.concurrency, err = ints(conc)
	}
	c.driverArgs = strings.Fields(driverArgs)
	if err == nil && (c.null == "" || c.rounds < 1) {
		err = fmt.Errorf("--null-driver is required and --rounds must be at least 1")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "csibench:", err)
		os.Exit(2)
	}
	res, err := c.run(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "csibench:", err)
		os.Exit(1)
	}
	if !report(os.Stdout, res, c.objects, c.concurrency) {
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want a comma-separated list of positive numbers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func (c config) run(ctx context.Context) (results, error) {
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	dir, err := os.MkdirTemp("", "csibench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var fleets []fleet
	defer func() {
		for _, f := range fleets {
			f.stop()
		}
	}()
	for _, n := range c.objects {
		f, err := c.startFleet(ctx, filepath.Join(dir, strconv.Itoa(n)), n)
		fleets = append(fleets, f)
		if err != nil {
			return nil, fmt.Errorf("%d objects: %w", n, err)
		}
	}
	res := results{}
	for _, conc := range c.concurrency {
		if err := c.measure(ctx, fleets, conc, res); err != nil {
			return nil, fmt.Errorf("concurrency %d: %w", conc, err)
		}
		progress("concurrency %d: measured", conc)
	}
	return res, nil
}

// fleet is the two drivers holding n volumes and n snapshots each.
type fleet struct {
	n       int
	targets []target
}

func (f fleet) stop() {
	for _, t := range f.targets {
		t.p.stop()
	}
}

// startFleet starts both drivers in dir and fills zonepath with n
// volumes and n snapshots; what started is returned also on an error.
func (c config) startFleet(ctx context.Context, dir string, n int) (fleet, error) {
	f := fleet{n: n}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return f, err
	}
	drivers, err := c.startDrivers(dir, n)
	for _, d := range drivers {
		f.targets = append(f.targets, target{p: d})
	}
	if err != nil {
		return f, err
	}
	null, zp := drivers[0], drivers[1]
	start := time.Now()
	sources, err := populate(ctx, zp, n)
	if err != nil {
		return f, err
	}
	progress("zonepath: %d volumes and %d snapshots made in %v", n, n, time.Since(start).Round(time.Millisecond))
	f.targets[0].sources, f.targets[1].sources = nullSources(), sources
	return f, sameShapes(ctx, null, zp, n)
}

// measure runs every measurement at conc callers. All drivers of every
// size are up, and each round visits each in turn, so that a change of
// load on the machine touches every number the checks compare.
func (c config) measure(ctx context.Context, fleets []fleet, conc int, res results) error {
	for _, m := range c.measurements() {
		for round := range c.rounds {
			for _, f := range fleets {
				for _, t := range f.targets {
					if err := m(ctx, t, f.n, conc, round, res); err != nil {
						return fmt.Errorf("%s at %d objects: %w", t.p.name, f.n, err)
					}
				}
			}
		}
	}
	return nil
}

// startDrivers starts the null driver and zonepath, each in its own
// directory under dir; what started is returned also on an error.
func (c config) startDrivers(dir string, n int) ([]*process, error) {
	var out []*process
	for _, d := range []struct {
		name, bin string
		args      []string
	}{
		{nullName, c.null, []string{"--volumes", strconv.Itoa(n), "--snapshots", strconv.Itoa(n), "--page-size", strconv.Itoa(pageSize)}},
		{zonepathName, c.driver, append([]string{"--controller", "--node=false", "--state-dir", filepath.Join(dir, zonepathName, "state")}, c.driverArgs...)},
	} {
		sub := filepath.Join(dir, d.name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			return out, err
		}
		p, err := start(d.name, d.bin, sub, d.args...)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "csibench: "+format+"\n", args...)
}
