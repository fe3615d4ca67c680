package csibench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"
)

// pageSize is max_entries of every list call.
const pageSize = 100

// populateConcurrency fills the driver: more callers, larger group commits.
const populateConcurrency = 32

// sourceVolumes is how many volumes the snapshots are spread over.
const sourceVolumes = 100

// Config is one run of the benchmark; cmd/csibench's flags set it.
type Config struct {
	// Driver is the zonepath binary, NullDriver the baseline's.
	Driver, NullDriver string
	// Objects are the volumes and snapshots present, each, by run.
	Objects []int
	// Concurrency are the numbers of concurrent callers measured.
	Concurrency []int
	// Rounds is the alternating rounds per measurement and driver.
	Rounds int
	// CreateOps are the creates (and as many deletes) per measurement
	// and driver, over all rounds; ListTime the time spent listing.
	CreateOps int
	ListTime  time.Duration
	// CPUProfile, when set, gets the client's CPU profile.
	CPUProfile string
	// DriverArgs are more zonepath flags.
	DriverArgs []string
}

// Run measures both drivers, writes the table and the checks to out and
// says whether every target was met; an error is a run that could not
// measure.
func Run(ctx context.Context, c Config, out io.Writer) (bool, error) {
	if c.NullDriver == "" || c.Rounds < 1 || len(c.Objects) == 0 || len(c.Concurrency) == 0 {
		return false, fmt.Errorf("a null driver, objects, concurrency and at least one round are required")
	}
	res, err := c.run(ctx)
	if err != nil {
		return false, err
	}
	return report(out, res, c.Objects, c.Concurrency), nil
}

func (c Config) run(ctx context.Context) (results, error) {
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
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
	for _, n := range c.Objects {
		f, err := c.startFleet(ctx, filepath.Join(dir, strconv.Itoa(n)), n)
		fleets = append(fleets, f)
		if err != nil {
			return nil, fmt.Errorf("%d objects: %w", n, err)
		}
	}
	res := results{}
	for _, conc := range c.Concurrency {
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
func (c Config) startFleet(ctx context.Context, dir string, n int) (fleet, error) {
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
func (c Config) measure(ctx context.Context, fleets []fleet, conc int, res results) error {
	for _, m := range c.measurements() {
		for round := range c.Rounds {
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
func (c Config) startDrivers(dir string, n int) ([]*process, error) {
	var out []*process
	for _, d := range []struct {
		name, bin string
		args      []string
	}{
		{nullName, c.NullDriver, []string{"--volumes", strconv.Itoa(n), "--snapshots", strconv.Itoa(n), "--page-size", strconv.Itoa(pageSize)}},
		{zonepathName, c.Driver, append([]string{"--controller", "--node=false", "--state-dir", filepath.Join(dir, zonepathName, "state")}, c.DriverArgs...)},
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
