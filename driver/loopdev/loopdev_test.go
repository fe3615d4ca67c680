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
	for _, c := range []struct {
		name string
		info unix.LoopInfo64
		want bool
	}{
		{"same device and inode", unix.LoopInfo64{Device: unix.Mkdev(8, 1), Inode: 42}, true},
		{"same inode, other filesystem", unix.LoopInfo64{Device: unix.Mkdev(8, 2), Inode: 42}, false},
		{"same filesystem, other inode", unix.LoopInfo64{Device: unix.Mkdev(8, 1), Inode: 43}, false},
	} {
		if got := backs(&c.info, st); got != c.want {
			t.Errorf("%s: backs = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStatusFor: the name is cut to fit lo_file_name with its NUL, and no
// flag is set: above all not LO_FLAGS_AUTOCLEAR, or the device would go
// when the last opener closes, between the stage and the pod's open.
func TestStatusFor(t *testing.T) {
	long := make([]byte, 100)
	for i := range long {
		long[i] = 'a'
	}
	info := statusFor(string(long))
	if info.File_name[63] != 0 || info.File_name[62] != 'a' {
		t.Errorf("lo_file_name of a 100-byte name: last bytes %q, want 'a' then NUL", info.File_name[62:])
	}
	if info.Flags != 0 {
		t.Errorf("flags %#x, want none", info.Flags)
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
