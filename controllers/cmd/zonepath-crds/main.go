// Command zonepath-crds writes the snapshot CRDs of KEP-5943: the six
// external-snapshotter CRDs from --from, with VolumeSnapshotContent
// spec.nodeAffinity and VolumeSnapshotClass allowedTopologies added, to --out.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zonepath/zonepath/controllers/crds"
)

func main() {
	from := flag.String("from", "", "upstream CRD directory: the config/crd directory of github.com/kubernetes-csi/external-snapshotter/client/v8 in the module cache (required)")
	out := flag.String("out", "", "output directory, created if missing (required)")
	flag.Parse()
	if err := run(*from, *out); err != nil {
		fmt.Fprintln(os.Stderr, "zonepath-crds:", err)
		os.Exit(1)
	}
}

func run(from, out string) error {
	if from == "" || out == "" {
		return fmt.Errorf("--from and --out are required")
	}
	files, err := crds.Generate(from, out)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d CRDs to %s: %s\n", len(files), out, strings.Join(crds.Names(files), ", "))
	return nil
}
