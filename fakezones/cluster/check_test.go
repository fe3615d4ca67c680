package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// Up must refuse to start anything when a binary or the CRDs are missing,
// and say what to run.
func TestUpChecksBeforeStarting(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\n"
	all := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"snapshot-controller", "zonepath", "csi-provisioner", "zonepath-snapshotter", "csi-attacher", "zonepath-resizer", "zonepath-cluster"}
	cases := []struct {
		name    string
		omit    string
		crd     string
		faults  string
		work    string
		wantErr string
	}{
		{name: "no etcd", omit: "etcd", crd: crd, wantErr: "missing in BIN: etcd; run make build components"},
		{name: "no provisioner of either kind", omit: "csi-provisioner", crd: crd, wantErr: "zonepath-provisioner or csi-provisioner"},
		{name: "no CRDs", wantErr: "no CRDs (*.yaml) in"},
		{name: "not a CRD", crd: "kind: ConfigMap\n", wantErr: "not a CustomResourceDefinition"},
		{name: "work directory too deep for a socket", crd: crd, work: strings.Repeat("d", 90), wantErr: "over the 107 a unix socket allows"},
		{name: "bad driver fault rules", crd: crd, faults: "rules: [{name: x, match: {rpc: CreateSnapshot}, action: {code: Bogus}}]\n", wantErr: "driver fault rules: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, crds, work := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "work", tc.work)
			for _, b := range all {
				if b != tc.omit {
					write(t, filepath.Join(bin, b), "#!/bin/sh\n")
				}
			}
			if tc.crd != "" {
				write(t, filepath.Join(crds, "crd.yaml"), tc.crd)
			}
			var faults string
			if tc.faults != "" {
				faults = filepath.Join(t.TempDir(), "faults.yaml")
				write(t, faults, tc.faults)
			}
			cl, err := spec.File{}.Expand()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err = Up(context.Background(), Options{WorkDir: work, BinDir: bin, CRDDir: crds, Cluster: cl, DriverFaultRules: faults, Out: &out})
			want := strings.ReplaceAll(tc.wantErr, "BIN", bin)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want it to contain %q", err, want)
			}
			if _, err := os.Stat(work); !os.IsNotExist(err) {
				t.Fatalf("the work directory was made (%v): up started before checking", err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
