package render

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/zonepath/zonepath/controllers/scheduler/snapshottopology"
	"github.com/zonepath/zonepath/driver/world"
)

// checkTopology: the driver's topology file parses, every zonepath
// container reads the same one, and every class's allowedTopologies term
// names a zone in it.
func checkTopology(r *rendered, _ Expect) []error {
	var errs []error
	var topo *world.Topology
	var first, content string
	for _, w := range r.workloads {
		for _, c := range w.containers() {
			if binary(c) != "zonepath" {
				continue
			}
			id := w.obj.ID() + " container " + c.Name
			file, data, err := r.mountedFile(w, c, "topology-file")
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				continue
			case file == "":
				continue // the driver's default world
			case topo == nil:
				if topo, err = world.Parse([]byte(data)); err != nil {
					errs = append(errs, fmt.Errorf("%s: topology file %s: %w", id, file, err))
					return errs
				}
				first, content = id, data
			case data != content:
				errs = append(errs, fmt.Errorf("%s reads another topology file than %s: controller and node plugins must agree", id, first))
			}
		}
	}
	if topo == nil {
		topo = world.Default()
	}
	for _, o := range r.objs {
		var terms []corev1.TopologySelectorTerm
		switch t := o.Typed.(type) {
		case *SnapshotClass:
			terms = t.AllowedTopologies
		case *storagev1.StorageClass:
			terms = t.AllowedTopologies
		}
		for i, term := range terms {
			if err := termInTopology(topo, term); err != nil {
				errs = append(errs, fmt.Errorf("%s: allowedTopologies[%d]: %w", o.ID(), i, err))
			}
		}
	}
	return errs
}

// termInTopology checks that every segment a term spells names a zone of
// the driver: a misspelt zone would make the class unusable.
func termInTopology(topo *world.Topology, term corev1.TopologySelectorTerm) error {
	segments := []map[string]string{{}}
	for _, e := range term.MatchLabelExpressions {
		var next []map[string]string
		for _, seg := range segments {
			for _, v := range e.Values {
				s := map[string]string{e.Key: v}
				for k, x := range seg {
					s[k] = x
				}
				next = append(next, s)
			}
		}
		segments = next
	}
	for _, seg := range segments {
		zones, err := topo.Select(seg)
		if err != nil {
			return err
		}
		if len(zones) == 0 {
			return fmt.Errorf("%s selects no zone of the driver's topology", world.FormatSegment(seg))
		}
	}
	return nil
}

// checkSchedulerConfig: zonepath-scheduler's --config loads and validates
// as kube-scheduler loads it, every profile runs SnapshotTopology, and the
// lease fits the role: kube-system/kube-scheduler exactly when it serves
// default-scheduler (replacing kube-scheduler), its own otherwise.
func checkSchedulerConfig(r *rendered, _ Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		for _, c := range w.containers() {
			if binary(c) != "zonepath-scheduler" {
				continue
			}
			id := w.obj.ID() + " container " + c.Name
			if err := r.schedulerConfig(w, c); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
			}
		}
	}
	return errs
}

func (r *rendered) schedulerConfig(w workload, c corev1.Container) error {
	file, data, err := r.mountedFile(w, c, "config")
	if err != nil {
		return err
	}
	if file == "" {
		return fmt.Errorf("no --config: kube-scheduler's defaults lack SnapshotTopology")
	}
	dir, err := os.MkdirTemp("", "zonepath-scheduler-config")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return err
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), tmp)
	if err != nil {
		return fmt.Errorf("--config=%s: %w", file, err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return fmt.Errorf("--config=%s: %w", file, err)
	}
	replaces := false
	for _, p := range cfg.Profiles {
		replaces = replaces || p.SchedulerName == "default-scheduler"
		if !slices.ContainsFunc(p.Plugins.MultiPoint.Enabled, func(pl config.Plugin) bool { return pl.Name == snapshottopology.Name }) {
			return fmt.Errorf("--config=%s: profile %s does not enable %s", file, p.SchedulerName, snapshottopology.Name)
		}
	}
	le := cfg.LeaderElection
	lease := le.ResourceNamespace + "/" + le.ResourceName
	switch {
	case !le.LeaderElect:
		return fmt.Errorf("--config=%s: leader election is off", file)
	case replaces && lease != "kube-system/kube-scheduler":
		return fmt.Errorf("--config=%s: serves default-scheduler but holds lease %s, not kube-system/kube-scheduler: it would schedule beside kube-scheduler", file, lease)
	case !replaces && lease == "kube-system/kube-scheduler":
		return fmt.Errorf("--config=%s: a second scheduler holding kube-scheduler's lease %s would stop the cluster's scheduler", file, lease)
	case !replaces && !strings.HasPrefix(lease, w.meta.Namespace+"/"):
		return fmt.Errorf("--config=%s: lease %s outside the scheduler's namespace %s", file, lease, w.meta.Namespace)
	}
	return nil
}
