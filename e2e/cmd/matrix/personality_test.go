package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// folder writes a personality folder: personality.yaml and the three
// files every run needs, cluster.yaml when withCluster.
func folder(t *testing.T, root, name, personalityYAML string, withCluster bool) {
	t.Helper()
	dir := filepath.Join(root, name)
	files := map[string]string{"personality.yaml": personalityYAML, "driver.yaml": "", "ext.yaml": "", "sanity.yaml": ""}
	if withCluster {
		files["cluster.yaml"] = "zones: 2\n"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadPersonalities(t *testing.T) {
	root := t.TempDir()
	folder(t, root, "zone-only", "description: one zone key\nlacks: [region-key, multi-region]\n", true)
	folder(t, root, "extra-keys", "description: more keys\n", true)
	folder(t, root, "no-snapshot-topology", "description: no capability\ncluster: zone-only\ndriverName: nocap.zonepath.csi.dev\nlacks: [snapshot-topology]\ne2eFlags: [--ginkgo.label-filter=capability-off]\n", false)
	folder(t, root, "misspelt", "description: x\nlack: [region-key]\n", true)
	folder(t, root, "unknown-capability", "description: x\nlacks: [regionkey]\n", true)
	folder(t, root, "homeless", "description: x\ncluster: nowhere\n", false)
	folder(t, root, "no-cluster-file", "description: x\n", false)
	folder(t, root, "on-misspelt", "description: x\ncluster: misspelt\n", false)
	if err := os.WriteFile(filepath.Join(root, "README.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	ps, err := loadPersonalities(root, []string{"zone-only", "no-snapshot-topology", "extra-keys", "zone-only"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Name+"@"+p.Cluster+"/"+p.DriverName+strings.Join(p.Lacks, ","))
	}
	want := "extra-keys@extra-keys/zonepath.csi.dev no-snapshot-topology@zone-only/nocap.zonepath.csi.devsnapshot-topology zone-only@zone-only/zonepath.csi.devregion-key,multi-region"
	if strings.Join(got, " ") != want {
		t.Errorf("personalities\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if ps[1].E2EFlags[0] != "--ginkgo.label-filter=capability-off" {
		t.Errorf("e2eFlags = %q", ps[1].E2EFlags)
	}
	groups := groupByCluster(root, ps)
	if len(groups) != 2 || groups[1].Cluster != "zone-only" || len(groups[1].Members) != 2 ||
		groups[1].ClusterFile != filepath.Join(root, "zone-only", "cluster.yaml") {
		t.Errorf("groups = %+v, want extra-keys alone, then zone-only with no-snapshot-topology", groups)
	}

	errs := map[string]string{
		"misspelt":           `unknown field "lack"`,
		"unknown-capability": `lacks "regionkey", which is no capability`,
		"homeless":           `cluster: "nowhere" is no personality folder`,
		"no-cluster-file":    "has no cluster.yaml",
		"on-misspelt":        "runs on misspelt's cluster, a folder with errors",
		"no-such":            `no personality "no-such"`,
	}
	for name, want := range errs {
		if _, err := loadPersonalities(root, []string{name}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, want)
		}
	}
	if _, err := loadPersonalities(root, nil); err == nil {
		t.Error("all folders, some broken: no error")
	}
	if _, err := loadPersonalities(t.TempDir(), nil); err == nil {
		t.Error("an empty folder: no error")
	}
}

func TestLoadPersonalityMissingFile(t *testing.T) {
	root := t.TempDir()
	folder(t, root, "p", "description: x\n", true)
	if err := os.Remove(filepath.Join(root, "p", "ext.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPersonality(filepath.Join(root, "p")); err == nil || !strings.Contains(err.Error(), "ext.yaml") {
		t.Errorf("err = %v, want one naming ext.yaml", err)
	}
}

// The repository's personality folders load: every file there, every
// lacks: entry a capability of the vocabulary, every cluster: a folder
// with a cluster.yaml.
func TestRepositoryPersonalities(t *testing.T) {
	ps, err := loadPersonalities("../../testdata/personalities", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) < 8 {
		t.Errorf("%d personalities, want issue 21's eight at least", len(ps))
	}
}
