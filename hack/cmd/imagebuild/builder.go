package main

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// builder holds what the images share, built once per run.
type builder struct {
	opts    options
	e2e     map[string]name.Tag // the e2e framework's names, by image ID
	debs    debs
	logf    func(format string, args ...any)
	base    layer // users, groups, nsswitch.conf, /tmp: every image
	libc    layer // Debian's libc6: every image of a glibc-linked binary
	libcVer string
	busybox debPackage
	applets map[applets]layer
}

// libcSkipped are parts of libc6 no Go binary uses: iconv's conversion
// modules (8 MB; Go never calls iconv) and the package's documentation.
var libcSkipped = map[string]bool{
	"usr/lib/x86_64-linux-gnu/gconv": true,
	"usr/share":                      true,
}

func newBuilder(o options, e2e map[string]name.Tag, logf func(string, ...any)) (*builder, error) {
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return nil, err
	}
	d := debs{dir: o.debsDir, logf: logf, aptLists: "/var/lib/apt/lists"}
	libc, err := d.get("libc6")
	if err != nil {
		return nil, err
	}
	bb, err := d.get("busybox-static")
	if err != nil {
		return nil, err
	}
	b := &builder{opts: o, e2e: e2e, debs: d, logf: logf, libcVer: libc.version, busybox: bb, applets: map[applets]layer{}}
	if b.base, err = baseLayer(); err != nil {
		return nil, err
	}
	lb := newLayerBuilder()
	if err := lb.tree(libc.root, func(rel string) bool { return libcSkipped[rel] }); err != nil {
		return nil, err
	}
	if b.libc, err = lb.finish("libc6 " + libc.version); err != nil {
		return nil, err
	}
	for _, a := range []applets{mountApplets, allApplets} {
		if b.applets[a], err = appletLayer(bb, a); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// baseLayer has the users the images run as: root for the node plugin,
// 65532 (as in distroless) for the rest.
func baseLayer() (layer, error) {
	lb := newLayerBuilder()
	lb.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	lb.file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n"))
	// glibc's default without this file would ask DNS before /etc/hosts.
	lb.file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
	lb.dir("tmp", 0o1777, 0)
	lb.dir("root", 0o700, 0)
	lb.dir("home/nonroot", 0o700, 65532)
	return lb.finish("users and directories")
}

// mountAppletNames are what k8s.io/mount-utils runs for bind mounts
// (mount, umount) and a shell to debug them with.
var mountAppletNames = []string{"bin/mount", "bin/umount", "bin/sh"}

// appletLayer holds /bin/busybox and links for the chosen applets.
func appletLayer(bb debPackage, which applets) (layer, error) {
	binary := filepath.Join(bb.root, "bin", "busybox")
	listed, err := output(binary, "--list-full")
	if err != nil {
		return layer{}, fmt.Errorf("listing the applets of busybox-static %s: %w", bb.version, err)
	}
	all := strings.Fields(listed)
	links := all
	if which == mountApplets {
		links = mountAppletNames
		for _, want := range links {
			if !contains(all, want) {
				return layer{}, fmt.Errorf("busybox-static %s has no applet %s (it lists %d)", bb.version, want, len(all))
			}
		}
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return layer{}, err
	}
	lb := newLayerBuilder()
	lb.file("bin/busybox", 0o755, data)
	for _, l := range links {
		if l != "bin/busybox" {
			lb.symlink(l, "/bin/busybox")
		}
	}
	return lb.finish(fmt.Sprintf("busybox-static %s, %d applets", bb.version, len(links)))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// build writes one image's tarball and returns its images.txt line.
func (b *builder) build(s spec) (string, error) {
	start := time.Now()
	in, err := b.input(s)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", s.name, err)
	}
	out, err := filepath.Abs(filepath.Join(b.opts.outDir, s.name+".tar"))
	if err != nil {
		return "", err
	}
	wrote, err := in.write(out)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(out)
	if err != nil {
		return "", err
	}
	state := "up to date"
	if wrote {
		state = fmt.Sprintf("written in %.1fs", time.Since(start).Seconds())
	}
	b.logf("%s → %s (%.1f MB) %s", in.tag, out, float64(info.Size())/1e6, state)
	return in.tag.String() + " " + out, nil
}

// input gathers an image's layers, tag and config.
func (b *builder) input(s spec) (imageInput, error) {
	switch s.name {
	case busyboxName:
		return b.busyboxInput(s)
	case agnhostName:
		return b.agnhostInput(s)
	case nginxName:
		return b.nginxInput(s)
	case glibcName:
		return b.glibcInput(s)
	}
	return b.binaryInput(s)
}

// binaryInput is the image of bin/<name>, at /usr/local/bin/<name>.
func (b *builder) binaryInput(s spec) (imageInput, error) {
	binary, o, err := b.binary(s)
	if err != nil {
		return imageInput{}, err
	}
	version, source := b.opts.version, sourceURL(o.module)
	if !o.own {
		version = o.version
	}
	tag, err := name.NewTag(s.repository+":"+version, name.StrictValidation)
	if err != nil {
		return imageInput{}, fmt.Errorf("tag from version %q: %w", version, err)
	}
	bin, err := fileLayer(binary, "usr/local/bin/"+s.name)
	if err != nil {
		return imageInput{}, err
	}
	layers := []layer{b.base, b.libc}
	if s.applets != noApplets {
		layers = append(layers, b.applets[s.applets])
	}
	labels := map[string]string{
		labelTitle: s.name, labelVersion: version, labelSource: source,
		labelBase: "Debian libc6 " + b.libcVer,
	}
	if s.upstream {
		labels[labelLocalBuild] = localBuild("Go module " + o.module + "@" + o.version)
	}
	return imageInput{tag: tag, layers: append(layers, bin), config: v1.Config{
		Entrypoint: []string{"/usr/local/bin/" + s.name},
		User:       userOf(s),
		Env:        []string{searchPath},
		Labels:     labels,
	}}, nil
}

// binary returns bin/<name> and where it was built from, after checking
// that against the table and its libraries against the libc6 layer.
func (b *builder) binary(s spec) (string, origin, error) {
	binary := filepath.Join(b.opts.binDir, s.name)
	if _, err := os.Stat(binary); err != nil {
		return "", origin{}, fmt.Errorf("%w (make build components puts it there)", err)
	}
	o, err := readOrigin(binary)
	if err != nil {
		return "", origin{}, err
	}
	if s.upstream == o.own {
		return "", origin{}, fmt.Errorf("%s is built from module %s, but the image table says upstream=%t", binary, o.module, s.upstream)
	}
	return binary, o, b.checkLibraries(binary, b.libc)
}

// localBuild is the local-build label's text for a stand-in built from what.
func localBuild(what string) string {
	return "built offline by zonepath's make images from " + what + "; not the upstream image"
}

func userOf(s spec) string {
	if s.root {
		return "0:0"
	}
	return nonRoot
}

// checkLibraries fails when the binary needs a shared library the
// layers lack: the image would build but its container would not start.
func (b *builder) checkLibraries(binary string, layers ...layer) error {
	libs, err := sharedLibraries(binary)
	if err != nil {
		return err
	}
	all, names := files{}, make([]string, 0, len(layers))
	for _, l := range layers {
		maps.Copy(all, l.files)
		names = append(names, l.name)
	}
	if missing := missingIn(all, libs); len(missing) > 0 {
		return fmt.Errorf("%s needs %s (ldd), which the layers %s lack: add the package that ships it",
			binary, strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	return nil
}

// fileLayer holds the file at dest.
func fileLayer(src, dest string) (layer, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return layer{}, err
	}
	lb := newLayerBuilder()
	lb.file(dest, 0o755, data)
	return lb.finish(path.Base(dest))
}
