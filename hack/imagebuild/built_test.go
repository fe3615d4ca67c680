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
// where: ZONEPATH_IMAGES=$PWD/_output/images go test ./hack/imagebuild
// (as root for the chroot parts).
const imagesEnv = "ZONEPATH_IMAGES"

// mountHelperEnv makes TestMountHelper do its work: it runs inside the
// driver image's root file system, started by TestBuiltDriverMounts.
const mountHelperEnv = "ZONEPATH_MOUNT_HELPER"

// builtImages loads every image images.txt lists.
func builtImages(t *testing.T) map[string]v1.Image {
	t.Helper()
	dir := os.Getenv(imagesEnv)
	if dir == "" {
		t.Skipf("%s not set: run make images, then set it to _output/images", imagesEnv)
	}
	list, err := os.ReadFile(filepath.Join(dir, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]v1.Image{}
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
		images[strings.TrimSuffix(filepath.Base(file), ".tar")] = img
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
			t.Errorf("images.txt lists no %s image", s.name)
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
// root file system: it starts only if the libc6 layer is complete.
func TestBuiltBinariesRun(t *testing.T) {
	images := builtImages(t)
	requireRoot(t)
	for _, s := range specs() {
		if s.name == busyboxName {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			root := rootfs(t, images[s.name])
			out, err := exec.Command("chroot", "--userspec="+userOf(s), root, "/usr/local/bin/"+s.name, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("chroot %s /usr/local/bin/%s --version: %v\n%s", root, s.name, err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
	t.Run(busyboxName, func(t *testing.T) {
		root := rootfs(t, images[busyboxName])
		out, err := exec.Command("chroot", root, "sh", "-c", "echo ok | wc -l").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "1" {
			t.Fatalf("sh in the busybox image: %v\n%s", err, out)
		}
	})
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
	for _, d := range []string{"proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// /proc and /dev as a container runtime provides them (os/exec opens /dev/null).
	script := `mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" &&
		exec chroot "$1" /mount-helper -test.run '^TestMountHelper$' -test.v`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", root)
	cmd.Env = append(os.Environ(), mountHelperEnv+"=1", "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMountHelper") {
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
func rootfs(t *testing.T, img v1.Image) string {
	t.Helper()
	if img == nil {
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
