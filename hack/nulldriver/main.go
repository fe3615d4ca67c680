// Command nulldriver is the baseline of make bench: a CSI controller that
// answers from memory with responses computed at start, so that timing it
// over its unix socket measures what gRPC, the socket and the client cost
// on this machine and nothing else. Its volumes and snapshots have the
// shapes zonepath's have with the default world (IDs, sizes, one
// {region, zone} segment each, a published-nodes status on volumes) and
// it pages them the same way (next_token "zp1:" and the next entry's ID),
// so the two listings carry the same bytes.
//
// It is not a driver: creates always return the same object and deletes
// do nothing, so the listed set never changes.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix:///path/to/socket to serve on")
	volumes := flag.Int("volumes", 1000, "volumes to list")
	snapshots := flag.Int("snapshots", 1000, "snapshots to list")
	pageSize := flag.Int("page-size", 100, "the one max_entries the list calls serve (0: all in one page)")
	flag.Parse()
	if err := run(*endpoint, newDriver(*volumes, *snapshots, *pageSize)); err != nil {
		fmt.Fprintln(os.Stderr, "nulldriver:", err)
		os.Exit(1)
	}
}

// run serves d on endpoint until SIGTERM or SIGINT.
func run(endpoint string, d *driver) error {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		return fmt.Errorf("--endpoint %q: want unix:///path", endpoint)
	}
	os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(lis)
}
