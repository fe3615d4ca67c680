package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	imageutils "k8s.io/kubernetes/test/utils/image"
)

// known maps the names accepted on the command line to the framework's IDs:
// every image the storage suites pull that make images stands in for
// (hack/cmd/imagebuild/README.md lists which file pulls which). Add one here
// when another stand-in is needed.
var known = map[string]imageutils.ImageID{
	"Agnhost":         imageutils.Agnhost,
	"BusyBox":         imageutils.BusyBox,
	"GlibcDnsTesting": imageutils.GlibcDnsTesting,
	"Nginx":           imageutils.Nginx,
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "e2eimage:", err)
		os.Exit(2)
	}
}

// run prints the framework's name:tag of each image named in args, one a
// line; without arguments, ID=name:tag for every known image, the form
// hack/cmd/imagebuild's --e2e-images takes. It prints nothing unless every
// name resolves.
func run(args []string, w io.Writer) error {
	format := "%[2]s\n"
	if len(args) == 0 {
		args, format = slices.Sorted(maps.Keys(known)), "%[1]s=%[2]s\n"
	}
	var out strings.Builder
	for _, id := range args {
		ref, err := resolve(id)
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, format, id, ref)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// resolve returns the framework's name for id, checked to be a valid
// name:tag, the form stand-ins are tagged with.
func resolve(id string) (string, error) {
	imageID, ok := known[id]
	if !ok {
		return "", fmt.Errorf("unknown image %q (known: %s)", id, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
	}
	ref := imageutils.GetE2EImage(imageID)
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return "", fmt.Errorf("%s: the framework's name %q is no name:tag: %w", id, ref, err)
	}
	return ref, nil
}
