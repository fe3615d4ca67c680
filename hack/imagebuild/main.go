package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	binDir     string
	outDir     string
	debsDir    string
	version    string
	busyboxRef string
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "", "directory holding the built binaries (make build components)")
	flag.StringVar(&o.outDir, "out-dir", "", "directory for the tarballs and images.txt")
	flag.StringVar(&o.debsDir, "debs-dir", "", "cache of Debian packages (default <out-dir>/debs)")
	flag.StringVar(&o.version, "version", "", "tag of zonepath's own images (the Makefile's VERSION)")
	flag.StringVar(&o.busyboxRef, "busybox-ref", "", "name:tag of the e2e framework's BusyBox image, which the busybox stand-in takes")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	for _, f := range []struct{ flag, value string }{
		{"--bin-dir", o.binDir}, {"--out-dir", o.outDir}, {"--version", o.version}, {"--busybox-ref", o.busyboxRef},
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
	start := time.Now()
	b, err := newBuilder(o, logf)
	if err != nil {
		return err
	}
	var list strings.Builder
	for _, s := range specs() {
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
	logf("%d images listed in %s in %.1fs", len(specs()), index, time.Since(start).Seconds())
	return nil
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
