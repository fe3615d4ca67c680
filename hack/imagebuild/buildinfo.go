package main

import (
	"debug/buildinfo"
	"fmt"
	"regexp"
	"strings"
)

// origin is where a binary's main package came from, read from the build
// information Go embeds in every binary: the versions an image is tagged
// with are those the binary was really built from, not literals here.
type origin struct {
	module   string // module holding the main package
	version  string // that module's version ("" for this repository's own)
	revision string // vcs.revision, when go build stamped it
	own      bool   // the main package is in the main module (this repository)
}

func readOrigin(binary string) (origin, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return origin{}, fmt.Errorf("reading Go build information of %s: %w", binary, err)
	}
	var o origin
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			o.revision = s.Value
		}
	}
	if within(bi.Path, bi.Main.Path) {
		o.module, o.own = bi.Main.Path, true
		return o, nil
	}
	for _, d := range bi.Deps {
		if within(bi.Path, d.Path) && len(d.Path) > len(o.module) {
			o.module, o.version = d.Path, d.Version
			if d.Replace != nil && d.Replace.Version != "" {
				o.version = d.Replace.Version
			}
		}
	}
	if o.module == "" {
		return origin{}, fmt.Errorf("%s: no module in its build information holds its main package %s", binary, bi.Path)
	}
	return o, nil
}

// within reports whether package pkg belongs to module mod by path.
func within(pkg, mod string) bool {
	return mod != "" && (pkg == mod || strings.HasPrefix(pkg, mod+"/"))
}

var majorSuffix = regexp.MustCompile(`/v[0-9]+$`)

// sourceURL turns a module path into its repository's address, for the
// org.opencontainers.image.source label: github.com/x/y/v8 → https://github.com/x/y.
func sourceURL(module string) string {
	return "https://" + majorSuffix.ReplaceAllString(module, "")
}
