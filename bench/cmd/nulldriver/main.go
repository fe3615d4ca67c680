// Command nulldriver is the baseline driver of make bench (package
// bench/nulldriver): it serves until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zonepath/zonepath/bench/nulldriver"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix:///path/to/socket to serve on")
	volumes := flag.Int("volumes", 1000, "volumes to list")
	snapshots := flag.Int("snapshots", 1000, "snapshots to list")
	pageSize := flag.Int("page-size", 100, "the one max_entries the list calls serve (0: all in one page)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := nulldriver.New(*volumes, *snapshots, *pageSize).Serve(ctx, *endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "nulldriver:", err)
		os.Exit(1)
	}
}
