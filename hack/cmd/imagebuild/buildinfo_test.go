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

// TestReadOrigin reads this test binary, built from this repository.
func TestReadOrigin(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o, err := readOrigin(self)
	if err != nil || !o.own || o.module != ownModule {
		t.Fatalf("readOrigin(test binary) = %+v, %v; want own module %s", o, err, ownModule)
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
