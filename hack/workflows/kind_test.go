package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// kindJob is the part of kind-e2e.yaml these tests read.
type kindJob struct {
	Strategy struct {
		Matrix struct {
			Include []struct {
				Kubernetes string `json:"kubernetes"`
				NodeImage  string `json:"node-image"`
			} `json:"include"`
		} `json:"matrix"`
	} `json:"strategy"`
}

func readKindJob(t *testing.T) kindJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/kind-e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]kindJob `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["kind-e2e"]
	if !ok || len(job.Strategy.Matrix.Include) == 0 {
		t.Fatal("kind-e2e.yaml: no job kind-e2e with a matrix")
	}
	return job
}

// TestKindNodeImages: every job's node image is of its own Kubernetes
// minor, and the one of kind's default version is pinned to exactly the
// digest the kind module in go.mod names, as the workflow's header says.
func TestKindNodeImages(t *testing.T) {
	defTag, _, _ := strings.Cut(defaults.Image, "@")
	seen := false
	for _, e := range readKindJob(t).Strategy.Matrix.Include {
		tag, _, _ := strings.Cut(e.NodeImage, "@")
		if !strings.HasPrefix(tag, "kindest/node:v"+e.Kubernetes+".") {
			t.Errorf("job %s runs %s, of another version", e.Kubernetes, e.NodeImage)
		}
		if tag == defTag {
			seen = true
			if e.NodeImage != defaults.Image {
				t.Errorf("job %s pins %s, kind's default is %s", e.Kubernetes, e.NodeImage, defaults.Image)
			}
		}
	}
	if !seen {
		t.Errorf("no job runs kind's default image %s", defaults.Image)
	}
}
