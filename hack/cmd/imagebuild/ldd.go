package main

import (
	"archive/tar"
	"fmt"
	"path"
	"slices"
	"strings"
)

// sharedLibraries lists the libraries ldd resolves for binary, as absolute
// paths; none for a static binary.
func sharedLibraries(binary string) ([]string, error) {
	out, err := output("ldd", binary)
	if err != nil {
		if strings.Contains(err.Error(), "not a dynamic executable") {
			return nil, nil
		}
		return nil, err
	}
	return parseLdd(out)
}

// parseLdd reads ldd's lines: "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)",
// "/lib64/ld-linux-x86-64.so.2 (0x…)" and the kernel's "linux-vdso.so.1 (0x…)",
// which is no file. A "not found" library is an error: the binary would not
// start anywhere, in an image or not.
func parseLdd(out string) ([]string, error) {
	var libs []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.Contains(line, "statically linked") {
			continue
		}
		if strings.Contains(line, "=> not found") {
			return nil, fmt.Errorf("ldd: %s", line)
		}
		lib := line
		if _, after, ok := strings.Cut(line, "=>"); ok {
			lib = strings.TrimSpace(after)
		}
		lib, _, _ = strings.Cut(lib, " (")
		if strings.HasPrefix(lib, "/") {
			libs = append(libs, lib)
		} else if !strings.HasPrefix(lib, "linux-vdso") && !strings.HasPrefix(lib, "linux-gate") {
			return nil, fmt.Errorf("ldd: unexpected line %q", line)
		}
	}
	return libs, nil
}

// files are a layer's entries by path ("lib/x86_64-linux-gnu/libc.so.6").
type files map[string]*tar.Header

// missingIn returns the libraries the layer lacks, following symbolic
// links inside it the way the loader would inside the image
// (/lib64/ld-linux-x86-64.so.2 is an absolute link in libc6). It checks
// the layer as built, not the unpacked package: what the layer leaves out
// is missing.
func missingIn(layer files, libs []string) []string {
	var missing []string
	for _, lib := range libs {
		if !slices.ContainsFunc(searched(lib), func(p string) bool { return regularIn(layer, p) }) {
			missing = append(missing, lib)
		}
	}
	return missing
}

func regularIn(layer files, p string) bool {
	resolved, err := resolveIn(layer, p)
	return err == nil && layer[resolved].Typeflag == tar.TypeReg
}

// searched are the paths in the image where the loader finds the library
// ldd found at lib on the host. A host with merged /usr reports
// /lib/x86_64-linux-gnu/libpcre2-8.so.0 where the package put it in
// /usr/lib/x86_64-linux-gnu, and Debian's loader searches both multiarch
// directories by name; the interpreter (/lib64/ld-linux-x86-64.so.2) is
// named by its path and must be there.
func searched(lib string) []string {
	dir, base := path.Split(lib)
	dir = path.Clean(dir)
	if !strings.HasSuffix(path.Base(dir), "-linux-gnu") {
		return []string{lib}
	}
	triplet := path.Base(dir)
	return []string{path.Join("/lib", triplet, base), path.Join("/usr/lib", triplet, base)}
}

// resolveIn follows p inside the layer one component at a time, symbolic
// links included (absolute ones relative to the layer's root).
func resolveIn(layer files, p string) (string, error) {
	parts := split(p)
	cur, hops := "", 0
	for len(parts) > 0 {
		next := path.Join(cur, parts[0])
		parts = parts[1:]
		h, ok := layer[next]
		if !ok {
			return "", fmt.Errorf("%s: no /%s in the layer", p, next)
		}
		if h.Typeflag != tar.TypeSymlink {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target := h.Linkname
		if !path.IsAbs(target) {
			target = path.Join("/", cur, target)
		}
		parts, cur = append(split(target), parts...), ""
	}
	return cur, nil
}

// split turns an absolute path into its components.
func split(p string) []string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
