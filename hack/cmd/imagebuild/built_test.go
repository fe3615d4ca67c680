package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	mountutils "k8s.io/mount-utils"
)

// The tests below check what make images wrote; they run only when told
// where: ZONEPATH_IMAGES=$PWD/_output/images go test ./hack/cmd/imagebuild
// (as root for the chroot parts).
const imagesEnv = "ZONEPATH_IMAGES"

// mountHelperEnv makes TestMountHelper do its work: it runs inside the
// driver image's root file system, started by TestBuiltDriverMounts.
const mountHelperEnv = "ZONEPATH_MOUNT_HELPER"

// builtImage is one image images.txt lists, loaded.
type builtImage struct {
	tag name.Tag
	v1.Image
}

// builtImages loads every image images.txt lists, by tarball name.
func builtImages(t *testing.T) map[string]builtImage {
	t.Helper()
	dir := os.Getenv(imagesEnv)
	if dir == "" {
		t.Skipf("%s not set: run make images, then set it to _output/images", imagesEnv)
	}
	list, err := os.ReadFile(filepath.Join(dir, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]builtImage{}
	for n, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		ref, file, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("images.txt line %d: %q is not \"ref file\"", n+1, line)
		}
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			t.Fatalf("images.txt line %d: %v", n+1, err)
		}
		img, err := tarball.ImageFromPath(file, &tag)
		if err != nil {
			t.Fatalf("images.txt line %d: loading %s: %v", n+1, file, err)
		}
		images[strings.TrimSuffix(filepath.Base(file), ".tar")] = builtImage{tag, img}
	}
	return images
}

// TestBuiltImages loads each tarball with go-containerregistry and checks
// its labels against the image table.
func TestBuiltImages(t *testing.T) {
	images := builtImages(t)
	for _, s := range specs() {
		img, ok := images[s.name]
		if !ok {
			if !s.optional {
				t.Errorf("images.txt lists no %s image", s.name)
			}
			continue
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		l := cf.Config.Labels
		if l[labelVersion] == "" || l[labelSource] == "" || l[labelTitle] != s.name {
			t.Errorf("%s: labels %v", s.name, l)
		}
		if _, local := l[labelLocalBuild]; local != s.upstream {
			t.Errorf("%s: local-build label present=%t, want %t", s.name, local, s.upstream)
		}
		if want := userOf(s); cf.Config.User != want {
			t.Errorf("%s: user %q, want %q", s.name, cf.Config.User, want)
		}
	}
}

// TestBuiltBinariesRun runs each binary with --version inside its image's
// root file system: it starts only if the libc6 layer is complete. The
// e2e framework's stand-ins have checks of their own (TestBuiltStandins).
func TestBuiltBinariesRun(t *testing.T) {
	images := builtImages(t)
	requireRoot(t)
	for _, s := range specs() {
		if s.e2e != "" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			if _, ok := images[s.name]; !ok && s.optional {
				t.Skipf("optional image %s not built (make images IMAGES_WITH=%s)", s.name, s.name)
			}
			root := rootfs(t, images[s.name])
			out, err := exec.Command("chroot", "--userspec="+userOf(s), root, "/usr/local/bin/"+s.name, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("chroot %s /usr/local/bin/%s --version: %v\n%s", root, s.name, err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
}

// TestBuiltStandins runs, in each stand-in's root, what the storage suites
// run in the upstream image, and what makes the image what it is.
func TestBuiltStandins(t *testing.T) {
	images := builtImages(t)
	requireRoot(t)
	checks := map[string]func(t *testing.T, root string, tag string){
		busyboxName: func(t *testing.T, root, _ string) {
			// volume_io's writer loop (let is no POSIX sh) and size check.
			mustRun(t, root, nil, `chroot "$1" sh -c 'i=0; while [ $i -lt 3 ]; do echo -n ab >>/tmp/f; let i+=1; done; stat -c %s /tmp/f'`, "6")
		},
		glibcName: func(t *testing.T, root, _ string) {
			// What multivolume's pods run (storage/utils CheckWriteToPath,
			// CheckReadFromPath) through sh -c; oflag=nocache is GNU dd's,
			// busybox's refuses it, and busybox's sh would run its own.
			mustRun(t, root, nil, `chroot "$1" sh -c 'echo aGVsbG8= | base64 -d | dd of=/tmp/f oflag=nocache bs=5 count=1 &&
				dd if=/tmp/f bs=5 count=1 | sha256sum'`,
				"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  -")
		},
		agnhostName: checkAgnhost,
		nginxName:   checkNginx,
	}
	for _, s := range specs() {
		if s.e2e == "" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			check, ok := checks[s.name]
			if !ok {
				t.Fatalf("no check for the stand-in %s: add one here", s.name)
			}
			img := images[s.name]
			check(t, rootfs(t, img), img.tag.TagStr())
		})
	}
}

// checkAgnhost: the binary's version is the image's tag, mounttest (the
// subPath suite's) reads a file, and the hostexec pods' nsenter enters
// another mount namespace, here the test's own: there the image's root
// path exists, which inside the image's root it does not.
func checkAgnhost(t *testing.T, root, tag string) {
	mustRun(t, root, nil, `chroot "$1" /agnhost --version`, "app version "+tag)
	if err := os.WriteFile(filepath.Join(root, "tmp/probe"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, root, nil, `chroot "$1" /agnhost mounttest --file_content=/tmp/probe`, `content of file "/tmp/probe": hello`)
	probe := fmt.Sprintf(`test -x %q && echo entered`, filepath.Join(root, "agnhost"))
	hostNS := fmt.Sprintf("/proc/%d/ns/mnt", os.Getpid())
	if out, err := inImage(t, root, nil, `chroot "$1" sh -c "$2"`, probe); err == nil {
		t.Fatalf("the probe passes without nsenter, so it proves nothing: %s", out)
	}
	mustRun(t, root, nil, `chroot "$1" nsenter --mount="$2" -- sh -c "$3"`, "entered", hostNS, probe)
}

// checkNginx: the configuration passes nginx -t, and nginx serves the
// welcome page on port 80 in a network namespace of its own.
func checkNginx(t *testing.T, root, _ string) {
	mustRun(t, root, nil, `chroot "$1" nginx -t 2>&1`, "test is successful")
	serve := `chroot "$1" ip link set lo up || exit 1
		chroot "$1" nginx -g 'daemon off;' & pid=$!
		for i in $(seq 100); do
			if chroot "$1" wget -q -O - http://127.0.0.1:80/; then kill $pid; exit 0; fi
			sleep 0.1
		done
		kill $pid; exit 1`
	mustRun(t, root, []string{"--net"}, serve, "<h1>Welcome to nginx!</h1>")
}

// mustRun runs script with inImage and wants want in its output.
func mustRun(t *testing.T, root string, unshare []string, script, want string, args ...string) {
	t.Helper()
	out, err := inImage(t, root, unshare, script, args...)
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("%s: %v; want %q in the output:\n%s", script, err, want, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
}

// inImage runs the shell script with the image's root as $1 (args
// follow) in a private mount namespace, and other namespaces as unshare
// says, where root has /proc and /dev as a container runtime gives them.
func inImage(t *testing.T, root string, unshare []string, script string, args ...string) (string, error) {
	t.Helper()
	for _, d := range []string{"proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script = `mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" || exit 1` + "\n" + script
	cmdArgs := append(append([]string{"--mount", "--propagation", "private"}, unshare...), "sh", "-c", script, "sh", root)
	cmd := exec.Command("unshare", append(cmdArgs, args...)...)
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBuiltDriverMounts runs k8s.io/mount-utils' bind and read-only bind
// mounts, as the node plugin makes them, with the driver image's busybox
// mount: this test binary, copied into the image's root, runs
// TestMountHelper there in a private mount namespace.
func TestBuiltDriverMounts(t *testing.T) {
	images := builtImages(t)
	requireRoot(t)
	root := rootfs(t, images["zonepath"])
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mount-helper"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(mountHelperEnv, "1")
	out, err := inImage(t, root, nil, `exec chroot "$1" /mount-helper -test.run '^TestMountHelper$' -test.v`)
	t.Logf("%s", out)
	if err != nil || !strings.Contains(out, "--- PASS: TestMountHelper") {
		t.Fatalf("mount helper in the driver image: %v", err)
	}
}

// TestMountHelper is the inside half of TestBuiltDriverMounts.
func TestMountHelper(t *testing.T) {
	if os.Getenv(mountHelperEnv) == "" {
		t.Skip("runs inside the driver image only (TestBuiltDriverMounts)")
	}
	if self, _ := os.Executable(); self != "/mount-helper" {
		t.Fatalf("running as %s, not as /mount-helper in the driver image's root", self)
	}
	src, rw, ro := "/tmp/src", "/tmp/rw", "/tmp/ro"
	for _, d := range []string{src, rw, ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// No second unmount: busybox's umount does not say "not mounted", so
	// mount-utils reports an error there where util-linux's would pass.
	// The driver unmounts only where it sees its volume (plugin.unmount).
	m := mountutils.New("")
	steps := []struct {
		what string
		do   func() error
	}{
		{"bind", func() error { return m.Mount(src, rw, "", []string{"bind"}) }},
		{"write through the bind mount", func() error { return os.WriteFile(rw+"/f", []byte("x"), 0o644) }},
		{"read it at the source", func() error { return readBack(src+"/f", "x") }},
		{"read-only bind", func() error { return m.Mount(src, ro, "", []string{"bind", "ro"}) }},
		{"read through the read-only mount", func() error { return readBack(ro+"/f", "x") }},
		{"write refused there", func() error {
			if err := os.WriteFile(ro+"/g", nil, 0o644); err == nil {
				return errors.New("write to the read-only bind mount succeeded")
			}
			return nil
		}},
		{"unmount read-only", func() error { return m.Unmount(ro) }},
		{"unmount", func() error { return m.Unmount(rw) }},
		{"not a mount point any more", func() error {
			notMnt, err := m.IsLikelyNotMountPoint(rw)
			if err == nil && !notMnt {
				err = fmt.Errorf("%s is still a mount point", rw)
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		t.Logf("ok: %s", s.what)
	}
}

func readBack(path, want string) error {
	got, err := os.ReadFile(path)
	if err == nil && string(got) != want {
		err = fmt.Errorf("%s holds %q, want %q", path, got, want)
	}
	return err
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
}

// rootfs unpacks the image's flattened file system into a temporary directory.
func rootfs(t *testing.T, img builtImage) string {
	t.Helper()
	if img.Image == nil {
		t.Fatal("image not in images.txt")
	}
	root := t.TempDir()
	// chroot --userspec needs to enter "/", which TempDir makes 0700.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	walkImage(t, img, func(h *tar.Header, r io.Reader) error { return unpackEntry(root, h, r) })
	return root
}

func unpackEntry(root string, h *tar.Header, r io.Reader) error {
	p := filepath.Join(root, filepath.Clean("/"+h.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	case tar.TypeSymlink:
		return os.Symlink(h.Linkname, p)
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: unexpected entry type %c", h.Name, h.Typeflag)
	}
	if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|sticky(h.Mode)); err != nil {
		return err
	}
	return os.Lchown(p, h.Uid, h.Gid)
}

func sticky(mode int64) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}
