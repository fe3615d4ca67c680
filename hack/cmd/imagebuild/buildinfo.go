package main

import (
	"debug/buildinfo"
	"fmt"
	"regexp"
)

// ownModule is this repository's module.
const ownModule = "github.com/zonepath/zonepath"

// origin is where a binary's main package came from, read from the build
// information Go embeds in every binary: the versions an image is tagged
// with are those the binary was really built from, not literals here.
// Go records the module holding the main package as the main module, also
// when the package was built from a dependency (make components).
type origin struct {
	module  string // module holding the main package
	version string // its version; "(devel)" for this repository's own
	own     bool   // built from this repository
}

func readOrigin(binary string) (origin, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return origin{}, fmt.Errorf("reading Go build information of %s: %w", binary, err)
	}
	o := origin{module: bi.Main.Path, version: bi.Main.Version, own: bi.Main.Path == ownModule}
	if o.module == "" || (!o.own && !semver.MatchString(o.version)) {
		return origin{}, fmt.Errorf("%s: main package %s has no module version in its build information (module %q, version %q)",
			binary, bi.Path, o.module, o.version)
	}
	return o, nil
}

// semver matches a module version usable as an image tag (v8.7.0, v1.2.3-rc.1).
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.-]*$`)

var majorSuffix = regexp.MustCompile(`/v[0-9]+$`)

// sourceURL turns a module path into its repository's address, for the
// org.opencontainers.image.source label: github.com/x/y/v8 → https://github.com/x/y.
func sourceURL(module string) string {
	return "https://" + majorSuffix.ReplaceAllString(module, "")
}
