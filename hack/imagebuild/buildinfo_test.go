package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourceURL(t *testing.T) {
	for module, want := range map[string]string{
		"github.com/kubernetes-csi/external-snapshotter/v8": "https://github.com/kubernetes-csi/external-snapshotter",
		"github.com/kubernetes-csi/external-attacher/v4":    "https://github.com/kubernetes-csi/external-attacher",
		"github.com/zonepath/zonepath":                      "https://github.com/zonepath/zonepath",
		"example.com/v2x":                                   "https://example.com/v2x",
	} {
		if got := sourceURL(module); got != want {
			t.Errorf("sourceURL(%s) = %s, want %s", module, got, want)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		pkg, mod string
		want     bool
	}{
		{"github.com/a/b/cmd/x", "github.com/a/b", true},
		{"github.com/a/b", "github.com/a/b", true},
		{"github.com/a/bc/cmd/x", "github.com/a/b", false},
		{"github.com/a/b", "", false},
	}
	for _, tc := range tests {
		if got := within(tc.pkg, tc.mod); got != tc.want {
			t.Errorf("within(%s, %s) = %t, want %t", tc.pkg, tc.mod, got, tc.want)
		}
	}
}

func TestReadOriginNotGo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readOrigin(p); err == nil || !strings.Contains(err.Error(), "reading Go build information of "+p) {
		t.Fatalf("error %v, want one naming %s", err, p)
	}
}
