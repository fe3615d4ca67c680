package main

import (
	"slices"
	"testing"

	"github.com/zonepath/zonepath/internal/wanterr"
)

func TestParseLdd(t *testing.T) {
	tests := []struct {
		name, out string
		want      []string
		wantErr   string
	}{
		{
			name: "glibc binary",
			out: "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"},
		},
		{name: "static", out: "\tstatically linked\n"},
		{name: "missing library", out: "\tlibfoo.so.1 => not found\n", wantErr: "libfoo.so.1 => not found"},
		{name: "garbage", out: "what is this\n", wantErr: `unexpected line "what is this"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLdd(tc.out)
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMissingIn uses libc6's layout: the loader under /lib64 is an
// absolute link into /lib, which must resolve inside the layer, not on the
// host. libpcre2 lies in /usr/lib as its package has it, while a host with
// merged /usr has ldd report it in /lib.
func TestMissingIn(t *testing.T) {
	lb := newLayerBuilder()
	lb.file("lib/x86_64-linux-gnu/libc.so.6", 0o644, nil)
	lb.file("lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0o755, nil)
	lb.symlink("lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	lb.symlink("lib/multiarch", "x86_64-linux-gnu")
	lb.symlink("lib/x86_64-linux-gnu/escape.so", "/etc/hostname")
	lb.symlink("lib/loop.so", "loop.so")
	lb.file("usr/lib/x86_64-linux-gnu/libpcre2-8.so.0", 0o644, nil)
	l, err := lb.finish("test")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lib     string
		missing bool
	}{
		{"/lib/x86_64-linux-gnu/libc.so.6", false},
		{"/lib64/ld-linux-x86-64.so.2", false},
		{"/lib/multiarch/libc.so.6", false},
		{"/lib/x86_64-linux-gnu/libm.so.6", true},
		{"/lib/x86_64-linux-gnu/escape.so", true}, // exists on the host only
		{"/lib/loop.so", true},
		{"/lib64", true}, // a directory is no library
		{"/lib/x86_64-linux-gnu/libpcre2-8.so.0", false},
		{"/usr/lib/x86_64-linux-gnu/libpcre2-8.so.0", false},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", false},
		{"/usr/lib/x86_64-linux-gnu/libm.so.6", true},
		{"/usr/lib64/ld-linux-x86-64.so.2", true}, // the interpreter is named by its path
	}
	for _, tc := range tests {
		got := len(missingIn(l.files, []string{tc.lib})) == 1
		if got != tc.missing {
			t.Errorf("%s: missing = %t, want %t", tc.lib, got, tc.missing)
		}
	}
}
