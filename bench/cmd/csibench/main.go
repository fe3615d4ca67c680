// Command csibench is make bench's driver benchmark over the CSI socket
// (package bench/csibench). It exits 1 when a target is missed, 2 on a
// bad flag.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zonepath/zonepath/bench/csibench"
)

func main() {
	var c csibench.Config
	var objects, conc, driverArgs string
	flag.StringVar(&c.Driver, "driver", "bin/zonepath", "the zonepath binary")
	flag.StringVar(&c.NullDriver, "null-driver", "", "the null driver binary (go build ./bench/cmd/nulldriver)")
	flag.StringVar(&objects, "objects", "1000,10000", "volumes and snapshots present, each")
	flag.StringVar(&conc, "concurrency", "1,8", "concurrent callers")
	flag.IntVar(&c.Rounds, "rounds", 5, "alternating rounds per measurement and driver")
	flag.IntVar(&c.CreateOps, "create-ops", 1500, "creates (and as many deletes) per measurement and driver, over all rounds")
	flag.DurationVar(&c.ListTime, "list-time", 2*time.Second, "time spent listing per measurement and driver, over all rounds")
	flag.StringVar(&c.CPUProfile, "cpuprofile", "", "write the client's CPU profile here")
	flag.StringVar(&driverArgs, "driver-args", "", "more zonepath flags, space-separated")
	flag.Parse()
	var err error
	if c.Objects, err = ints(objects); err == nil {
		c.Concurrency, err = ints(conc)
	}
	c.DriverArgs = strings.Fields(driverArgs)
	if err == nil && (c.NullDriver == "" || c.Rounds < 1) {
		err = fmt.Errorf("--null-driver is required and --rounds must be at least 1")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "csibench:", err)
		os.Exit(2)
	}
	passed, err := csibench.Run(context.Background(), c, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "csibench:", err)
		os.Exit(1)
	}
	if !passed {
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
