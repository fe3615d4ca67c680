package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"
)

type options struct {
	binDir    string
	outDir    string
	debsDir   string
	version   string
	e2eImages string // "ID=name:tag ..." as hack/cmd/e2eimage prints them
	with      string // optional images to build too, separated by commas or spaces
	standIns  bool   // build the stand-ins for upstream images
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "", "directory holding the built binaries (make build components)")
	flag.StringVar(&o.outDir, "out-dir", "", "directory for the tarballs and images.txt")
	flag.StringVar(&o.debsDir, "debs-dir", "", "cache of Debian packages (default <out-dir>/debs)")
	flag.StringVar(&o.version, "version", "", "tag of zonepath's own images (the Makefile's VERSION)")
	flag.StringVar(&o.e2eImages, "e2e-images", "", "the e2e framework's image names the stand-ins take, as `ID=name:tag` pairs separated by spaces or newlines (go run ./hack/cmd/e2eimage)")
	flag.StringVar(&o.with, "with", "", "optional images to build as well, separated by commas or spaces (csi-provisioner)")
	flag.BoolVar(&o.standIns, "stand-ins", true, "build the offline stand-ins under upstream names; false builds zonepath's own images only (make images KIND_PULL_UPSTREAM_IMAGES=1, whose clusters pull upstream's)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	for _, f := range []struct{ flag, value string }{
		{"--bin-dir", o.binDir}, {"--out-dir", o.outDir}, {"--version", o.version}, {"--e2e-images", o.e2eImages},
	} {
		if strings.TrimSpace(f.value) == "" {
			return fmt.Errorf("%s is required", f.flag)
		}
	}
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every input is a flag", flag.Args())
	}
	return nil
}

func run(o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.debsDir == "" {
		o.debsDir = filepath.Join(o.outDir, "debs")
	}
	refs, err := parseE2EImages(o.e2eImages)
	if err != nil {
		return err
	}
	build, err := selected(splitList(o.with), o.standIns)
	if err != nil {
		return err
	}
	start := time.Now()
	b, err := newBuilder(o, refs, logf)
	if err != nil {
		return err
	}
	var list strings.Builder
	for _, s := range build {
		line, err := b.build(s)
		if err != nil {
			return err
		}
		list.WriteString(line + "\n")
	}
	index := filepath.Join(o.outDir, "images.txt")
	if err := writeFileAtomic(index, []byte(list.String())); err != nil {
		return err
	}
	logf("%d images listed in %s in %.1fs", len(build), index, time.Since(start).Seconds())
	return nil
}

// parseE2EImages reads "ID=name:tag" pairs; every ID a stand-in takes its
// name from must be there, each once, with a valid tag.
func parseE2EImages(list string) (map[string]name.Tag, error) {
	refs := map[string]name.Tag{}
	for _, pair := range strings.Fields(list) {
		id, ref, ok := strings.Cut(pair, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("--e2e-images: %q is not ID=name:tag", pair)
		}
		if _, dup := refs[id]; dup {
			return nil, fmt.Errorf("--e2e-images: %s given twice", id)
		}
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("--e2e-images: %s: %w", id, err)
		}
		refs[id] = tag
	}
	for _, id := range e2eIDs() {
		if _, ok := refs[id]; !ok {
			return nil, fmt.Errorf("--e2e-images lacks %s (go run ./hack/cmd/e2eimage prints every ID the stand-ins need)", id)
		}
	}
	return refs, nil
}

// splitList splits a flag value at commas and white space.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

func logf(format string, args ...any) {
	fmt.Printf("images: "+format+"\n", args...)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
