package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The stand-ins for the e2e framework's images take the framework's name
// and tag (b.e2e), run as root as the originals do, and carry busybox's
// applets where the originals have a shell: the storage suites exec sh,
// ls, dd, nsenter ... in them.

// busyboxInput is the stand-in for the e2e framework's BusyBox image:
// Debian's static busybox with every applet, a shell as its command.
func (b *builder) busyboxInput(s spec) (imageInput, error) {
	return imageInput{tag: b.e2e[s.e2e], layers: []layer{b.base, b.applets[allApplets]}, config: v1.Config{
		Cmd:  []string{"sh"},
		User: userOf(s),
		Env:  []string{searchPath},
		Labels: map[string]string{
			labelTitle: s.name, labelVersion: b.busybox.version, labelSource: "https://tracker.debian.org/pkg/busybox",
			labelLocalBuild: localBuild("Debian's busybox-static " + b.busybox.version),
		},
	}}, nil
}

// glibcPackages are Debian's shell, GNU coreutils and the libraries its
// programs load.
var glibcPackages = []string{"dash", "coreutils", "libacl1", "libattr1", "libgmp10", "libselinux1", "libpcre2-8-0"}

// glibcRun are the programs the storage suites run in glibc-dns-testing
// (storage/utils CheckWriteToPath, CheckReadFromPath, through sh -c),
// whose libraries the build checks.
var glibcRun = []struct{ pkg, path string }{
	{"dash", "bin/dash"}, {"coreutils", "bin/dd"}, {"coreutils", "usr/bin/sha256sum"},
	{"coreutils", "usr/bin/base64"}, {"coreutils", "bin/ls"},
}

// glibcInput is the stand-in for glibc-dns-testing (Debian bookworm-slim
// plus dnsutils upstream), which the multivolume suite's pods run: they
// write and read block volumes with GNU dd's oflag=nocache and
// iflag=direct, which busybox's dd lacks. Debian's dash is /bin/sh, as in
// bookworm-slim: busybox's sh runs its own applets before any program in
// PATH, so GNU dd would never run. dash and coreutils lie over busybox's
// applets, which serve the rest (blockdev --getss, grep); no coreutils
// program has a busybox link earlier in PATH. dig and nslookup's DNS
// behaviour, the image's purpose elsewhere, are not there.
func (b *builder) glibcInput(s spec) (imageInput, error) {
	pkgs, err := b.packages(glibcPackages...)
	if err != nil {
		return imageInput{}, err
	}
	coreutils := pkgs["coreutils"]
	libs, err := packagesLayer("coreutils' libraries", pkgs["libacl1"], pkgs["libattr1"], pkgs["libgmp10"], pkgs["libselinux1"], pkgs["libpcre2-8-0"])
	if err != nil {
		return imageInput{}, err
	}
	for _, prog := range glibcRun {
		if err := b.checkLibraries(filepath.Join(pkgs[prog.pkg].root, prog.path), b.libc, libs); err != nil {
			return imageInput{}, err
		}
	}
	programs, err := packagesLayer("shell and GNU", pkgs["dash"], coreutils)
	if err != nil {
		return imageInput{}, err
	}
	return imageInput{tag: b.e2e[s.e2e], layers: []layer{b.base, b.libc, libs, b.applets[allApplets], programs}, config: v1.Config{
		Cmd:  []string{"sh"},
		User: userOf(s),
		Env:  []string{searchPath},
		Labels: map[string]string{
			labelTitle: s.name, labelVersion: coreutils.version, labelSource: "https://tracker.debian.org/pkg/coreutils",
			labelBase: "Debian libc6 " + b.libcVer,
			labelLocalBuild: localBuild(fmt.Sprintf("Debian's coreutils %s, dash %s, libc6 %s and busybox-static %s",
				coreutils.version, pkgs["dash"].version, b.libcVer, b.busybox.version)),
		},
	}}, nil
}

// packages fetches Debian packages by name.
func (b *builder) packages(names ...string) (map[string]debPackage, error) {
	pkgs := map[string]debPackage{}
	for _, name := range names {
		p, err := b.debs.get(name)
		if err != nil {
			return nil, err
		}
		pkgs[name] = p
	}
	return pkgs, nil
}

// agnhostInput is the stand-in for agnhost: bin/agnhost, built from the
// pinned k8s.io/kubernetes, at /agnhost as in the official image, which
// the hostexec pods run nsenter and sh beside (busybox's applets here).
func (b *builder) agnhostInput(s spec) (imageInput, error) {
	binary, o, err := b.binary(s)
	if err != nil {
		return imageInput{}, err
	}
	tag := b.e2e[s.e2e]
	if err := checkAgnhostVersion(binary, tag.TagStr()); err != nil {
		return imageInput{}, err
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return imageInput{}, err
	}
	lb := newLayerBuilder()
	lb.file("agnhost", 0o755, data)
	// As upstream's Dockerfile: a second name for the entrypoint tests, and
	// netexec's upload directory.
	lb.symlink("agnhost-2", "agnhost")
	lb.dir("uploads", 0o755, 0)
	agnhost, err := lb.finish("agnhost")
	if err != nil {
		return imageInput{}, err
	}
	return imageInput{tag: tag, layers: []layer{b.base, b.libc, b.applets[allApplets], agnhost}, config: v1.Config{
		Entrypoint: []string{"/agnhost"},
		Cmd:        []string{"pause"},
		User:       userOf(s),
		Env:        []string{searchPath},
		Labels: map[string]string{
			labelTitle: s.name, labelVersion: tag.TagStr(), labelSource: sourceURL(o.module),
			labelBase:       "Debian libc6 " + b.libcVer,
			labelLocalBuild: localBuild(fmt.Sprintf("Go module %s@%s (test/images/agnhost)", o.module, o.version)),
		},
	}}, nil
}

// checkAgnhostVersion compares the version bin/agnhost was stamped with
// (hack/components.sh, from test/images/agnhost/VERSION) with the tag the
// framework asks for: a stale binary must not pass under a newer tag.
func checkAgnhostVersion(binary, tag string) error {
	out, err := output(binary, "--version")
	if err != nil {
		return err
	}
	fields := strings.Fields(out)
	if len(fields) == 0 || fields[len(fields)-1] != tag {
		return fmt.Errorf("%s --version says %q, but the e2e framework asks for agnhost:%s: rebuild it (make components COMPONENTS=agnhost)",
			binary, out, tag)
	}
	return nil
}

// nginxPackages are Debian's nginx (the binary) and the libraries it
// loads; nginx-common only lends mime.types and the welcome page. libssl
// has two names (debs.resolve).
var nginxPackages = []string{"nginx", "nginx-common", "libcrypt1", "libpcre2-8-0", libssl, "zlib1g"}

// libssl is OpenSSL's libssl.so.3: libssl3t64 since the 64-bit time_t
// transition (Ubuntu 24.04, Debian 13), libssl3 before it (Debian 12).
const libssl = "libssl3t64|libssl3"

// nginxRoot is where the official image serves from, on port 80.
const nginxRoot = "usr/share/nginx/html"

// nginxConf is the official image's nginx.conf and conf.d/default.conf in
// one, minus its IPv6 listener (its entrypoint adds that only where IPv6
// works) and with root as the worker user, as the stand-ins all run as root.
// Logs go to the container's output, as the official image's links do.
const nginxConf = `user root;
worker_processes auto;
error_log stderr notice;
pid /run/nginx.pid;

events {
    worker_connections 1024;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /dev/stdout;
    sendfile on;
    keepalive_timeout 65;

    server {
        listen 80;
        server_name localhost;
        location / {
            root /usr/share/nginx/html;
            index index.html index.htm;
        }
    }
}
`

// nginxInput is the stand-in for the e2e framework's nginx image (upstream
// nginx:1.27-alpine mirrored): Debian's nginx in the foreground.
func (b *builder) nginxInput(s spec) (imageInput, error) {
	pkgs, err := b.packages(nginxPackages...)
	if err != nil {
		return imageInput{}, err
	}
	libs, err := packagesLayer("nginx's libraries", pkgs["libcrypt1"], pkgs["libpcre2-8-0"], pkgs[libssl], pkgs["zlib1g"])
	if err != nil {
		return imageInput{}, err
	}
	binary := filepath.Join(pkgs["nginx"].root, "usr/sbin/nginx")
	if err := b.checkLibraries(binary, b.libc, libs); err != nil {
		return imageInput{}, err
	}
	server, err := nginxLayer(binary, pkgs["nginx-common"])
	if err != nil {
		return imageInput{}, err
	}
	version := pkgs["nginx"].version
	return imageInput{tag: b.e2e[s.e2e], layers: []layer{b.base, b.libc, libs, b.applets[allApplets], server}, config: v1.Config{
		Cmd:  []string{"nginx", "-g", "daemon off;"},
		User: userOf(s),
		Env:  []string{searchPath},
		ExposedPorts: map[string]struct{}{
			"80/tcp": {},
		},
		Labels: map[string]string{
			labelTitle: s.name, labelVersion: version, labelSource: "https://tracker.debian.org/pkg/nginx",
			labelBase:       "Debian libc6 " + b.libcVer,
			labelLocalBuild: localBuild("Debian's nginx " + version),
		},
	}}, nil
}

// packagesLayer holds the packages' files but their documentation.
func packagesLayer(name string, pkgs ...debPackage) (layer, error) {
	lb := newLayerBuilder()
	for _, p := range pkgs {
		if err := lb.tree(p.root, func(rel string) bool { return rel == "usr/share" }); err != nil {
			return layer{}, err
		}
		name += " " + p.name + " " + p.version + ","
	}
	return lb.finish(strings.TrimSuffix(name, ","))
}

// nginxLayer holds the binary, the configuration, the welcome page and
// the directories Debian's build of nginx writes to.
func nginxLayer(binary string, common debPackage) (layer, error) {
	lb := newLayerBuilder()
	for _, f := range []struct {
		src, dest string
		mode      int64
	}{
		{binary, "usr/sbin/nginx", 0o755},
		{filepath.Join(common.root, "etc/nginx/mime.types"), "etc/nginx/mime.types", 0o644},
		{filepath.Join(common.root, nginxRoot, "index.html"), nginxRoot + "/index.html", 0o644},
	} {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return layer{}, err
		}
		lb.file(f.dest, f.mode, data)
	}
	lb.file("etc/nginx/nginx.conf", 0o644, []byte(nginxConf))
	for _, d := range []string{"var/lib/nginx", "var/log/nginx", "run"} {
		lb.dir(d, 0o755, 0)
	}
	return lb.finish("nginx")
}
