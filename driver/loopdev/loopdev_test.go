package loopdev

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLoopNumber(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"loop0", 0, true},
		{"loop12", 12, true},
		{"loop", 0, false},
		{"loop-control", 0, false},
		{"loop1p1", 0, false},
		{"vda", 0, false},
		{"zram0", 0, false},
		{"loop+1", 0, false},
	} {
		n, ok := loopNumber(c.name)
		if n != c.n || ok != c.ok {
			t.Errorf("loopNumber(%q) = %d, %v; want %d, %v", c.name, n, ok, c.n, c.ok)
		}
	}
}

func TestParseDevno(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{"7:0\n", unix.Mkdev(7, 0), false},
		{"7:12", unix.Mkdev(7, 12), false},
		{"259:300\n", unix.Mkdev(259, 300), false},
		{"7", 0, true},
		{"7:x", 0, true},
		{":1", 0, true},
		{"", 0, true},
	} {
		got, err := parseDevno(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseDevno(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestBacks: a device backs a file only when both device and inode match;
// the same inode number on another filesystem is another file.
func TestBacks(t *testing.T) {
	st := &unix.Stat_t{Dev: unix.Mkdev(8, 1), Ino: 42}
	owned := func(dev uint64, ino uint64, owner string) unix.LoopInfo64 {
		info := statusFor(owner, ReadWrite)
		info.Device, info.Inode = dev, ino
		return info
	}
	for _, c := range []struct {
		name string
		info unix.LoopInfo64
		want bool
	}{
		{"same device, inode and owner", owned(unix.Mkdev(8, 1), 42, "node-a"), true},
		{"same inode, other filesystem", owned(unix.Mkdev(8, 2), 42, "node-a"), false},
		{"same filesystem, other inode", owned(unix.Mkdev(8, 1), 43, "node-a"), false},
		{"same file, another node's", owned(unix.Mkdev(8, 1), 42, "node-b"), false},
		{"same file, an owner that begins alike", owned(unix.Mkdev(8, 1), 42, "node-ab"), false},
		{"same file, no owner (losetup's)", owned(unix.Mkdev(8, 1), 42, ""), false},
	} {
		if got := backs(&c.info, st, "node-a"); got != c.want {
			t.Errorf("%s: backs = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStatusFor: the owner is lo_file_name, NUL-terminated, and no flag
// is set but LO_FLAGS_READ_ONLY for a read-only device: above all not
// LO_FLAGS_AUTOCLEAR, or the device would go when the last opener closes,
// between the stage and the pod's open.
func TestStatusFor(t *testing.T) {
	for access, flags := range map[Access]uint32{ReadWrite: 0, ReadOnly: unix.LO_FLAGS_READ_ONLY} {
		info := statusFor("node-a", access)
		if got := string(info.File_name[:7]); got != "node-a\x00" {
			t.Errorf("%s: lo_file_name begins %q, want the owner and NUL", access, got)
		}
		if info.Flags != flags {
			t.Errorf("%s: flags %#x, want %#x", access, info.Flags, flags)
		}
	}
}

func TestUnsupported(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{unix.EINVAL, true},
		{unix.ENOTTY, true},
		{unix.EBUSY, false},
		{errors.New("other"), false},
	} {
		if got := unsupported(c.err); got != c.want {
			t.Errorf("unsupported(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
