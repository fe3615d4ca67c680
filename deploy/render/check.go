package render

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Images agreed for every install (COMMON names): zonepath's own, under
// localhost/zonepath/<binary>:<tag>, and upstream ones by their upstream
// names, so that the same manifests work with a registry.
const LocalRepo = "localhost/zonepath/"

var (
	// ZonepathImages are the binaries with an image of their own.
	ZonepathImages = []string{"zonepath", "zonepath-provisioner", "zonepath-snapshotter", "zonepath-scheduler", "zonepath-resizer"}
	// UpstreamImages are the only other images a manifest may use.
	UpstreamImages = []string{
		"registry.k8s.io/sig-storage/snapshot-controller:v8.7.0",
		"registry.k8s.io/sig-storage/csi-attacher:v4.13.0",
		"registry.k8s.io/sig-storage/csi-resizer:v2.2.1",                // zonepath-resizer stands in offline
		"registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.16.0", // registrar-sidecar only
	}
	// gateImages are the binaries that know VolumeSnapshotTopology; the
	// others would refuse it as an unknown gate.
	gateImages = []string{"zonepath-provisioner", "zonepath-snapshotter", "zonepath-scheduler"}
)

// Gate is the feature gate the overlays switch.
const Gate = "VolumeSnapshotTopology"

// Expect is what a kustomization promises beyond the invariants every
// render must keep.
type Expect struct {
	// Gate is the value ("true", "false") of VolumeSnapshotTopology every
	// component that has it must run with; empty accepts either, as long
	// as all agree.
	Gate string
	// Tag, when set, is the tag of every localhost/zonepath image.
	Tag string
}

// A check is one invariant; its name prefixes its errors.
type check struct {
	name string
	fn   func(*rendered, Expect) []error
}

var checks = []check{
	{"serviceaccounts", checkServiceAccounts},
	{"images", checkImages},
	{"feature-gates", checkGates},
	{"selectors", checkSelectors},
	{"references", checkReferences},
	{"driver-names", checkDriverNames},
	{"topology", checkTopology},
	{"scheduler-config", checkSchedulerConfig},
	{"registration", checkRegistration},
}

// Check runs every check on a render and joins their errors, each
// prefixed with its check's name in brackets.
func Check(objs []*Object, e Expect) error {
	r := index(objs)
	var errs []error
	for _, c := range checks {
		for _, err := range c.fn(r, e) {
			errs = append(errs, fmt.Errorf("[%s] %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// rendered indexes a render for the checks.
type rendered struct {
	objs       []*Object
	configMaps map[string]*corev1.ConfigMap // by namespace/name
	accounts   map[string]bool              // namespace/name
	workloads  []workload
}

// workload is a pod template and what owns it.
type workload struct {
	obj      *Object
	meta     metav1.ObjectMeta
	selector *metav1.LabelSelector
	pod      *corev1.PodTemplateSpec
}

func index(objs []*Object) *rendered {
	r := &rendered{objs: objs, configMaps: map[string]*corev1.ConfigMap{}, accounts: map[string]bool{}}
	for _, o := range objs {
		switch t := o.Typed.(type) {
		case *corev1.ConfigMap:
			r.configMaps[t.Namespace+"/"+t.Name] = t
		case *corev1.ServiceAccount:
			r.accounts[t.Namespace+"/"+t.Name] = true
		case *appsv1.Deployment:
			r.workloads = append(r.workloads, workload{o, t.ObjectMeta, t.Spec.Selector, &t.Spec.Template})
		case *appsv1.DaemonSet:
			r.workloads = append(r.workloads, workload{o, t.ObjectMeta, t.Spec.Selector, &t.Spec.Template})
		case *appsv1.StatefulSet:
			r.workloads = append(r.workloads, workload{o, t.ObjectMeta, t.Spec.Selector, &t.Spec.Template})
		}
	}
	return r
}

// containers are every container of a workload, init containers too.
func (w workload) containers() []corev1.Container {
	return append(append([]corev1.Container(nil), w.pod.Spec.InitContainers...), w.pod.Spec.Containers...)
}

// binary is the zonepath binary a container runs (its image's name under
// LocalRepo), or "".
func binary(c corev1.Container) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(c.Image, LocalRepo), ":")
	if !strings.HasPrefix(c.Image, LocalRepo) {
		return ""
	}
	return name
}

func checkServiceAccounts(r *rendered, _ Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		sa := w.pod.Spec.ServiceAccountName
		switch {
		case sa == "" || sa == "default":
			errs = append(errs, fmt.Errorf("%s runs as the namespace's default ServiceAccount; every component has its own", w.obj.ID()))
		case !r.accounts[w.meta.Namespace+"/"+sa]:
			errs = append(errs, fmt.Errorf("%s: serviceAccountName %s: no such ServiceAccount in namespace %s in the render", w.obj.ID(), sa, w.meta.Namespace))
		}
	}
	return errs
}

func checkImages(r *rendered, e Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		for _, c := range w.containers() {
			if err := checkImage(c, e.Tag); err != nil {
				errs = append(errs, fmt.Errorf("%s container %s: %w", w.obj.ID(), c.Name, err))
			}
			if c.ImagePullPolicy != corev1.PullIfNotPresent {
				errs = append(errs, fmt.Errorf("%s container %s: imagePullPolicy %q, want IfNotPresent (images are loaded into the nodes, not pulled)", w.obj.ID(), c.Name, c.ImagePullPolicy))
			}
		}
	}
	return errs
}

func checkImage(c corev1.Container, tag string) error {
	if slices.Contains(UpstreamImages, c.Image) {
		return nil
	}
	name, got, ok := strings.Cut(strings.TrimPrefix(c.Image, LocalRepo), ":")
	switch {
	case !strings.HasPrefix(c.Image, LocalRepo) || !slices.Contains(ZonepathImages, name):
		return fmt.Errorf("image %s is none of the agreed %s<%s> or %s", c.Image, LocalRepo, strings.Join(ZonepathImages, "|"), strings.Join(UpstreamImages, ", "))
	case !ok || got == "":
		return fmt.Errorf("image %s has no tag", c.Image)
	case tag != "" && got != tag:
		return fmt.Errorf("image %s: tag %s, want %s", c.Image, got, tag)
	}
	return nil
}

// checkGates: every component that has VolumeSnapshotTopology runs with it
// set, to the expected value, all alike; no other component gets it.
func checkGates(r *rendered, e Expect) []error {
	var errs []error
	values := map[string][]string{} // value → containers
	for _, w := range r.workloads {
		for _, c := range w.containers() {
			id := w.obj.ID() + " container " + c.Name
			gates, found, err := r.featureGates(w, c)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				continue
			}
			v, set := gates[Gate]
			wants := slices.Contains(gateImages, binary(c))
			switch {
			case wants && !found:
				errs = append(errs, fmt.Errorf("%s: no --feature-gates; %s must set %s", id, binary(c), Gate))
			case wants && !set:
				errs = append(errs, fmt.Errorf("%s: --feature-gates does not set %s", id, Gate))
			case !wants && set:
				errs = append(errs, fmt.Errorf("%s: --feature-gates sets %s, which %s does not have: it would refuse to start", id, Gate, c.Image))
			case wants && e.Gate != "" && v != e.Gate:
				errs = append(errs, fmt.Errorf("%s: %s=%s, want %s", id, Gate, v, e.Gate))
			}
			if wants && set {
				values[v] = append(values[v], id)
			}
		}
	}
	if len(values) > 1 {
		var parts []string
		for v, ids := range values {
			parts = append(parts, fmt.Sprintf("%s in %s", v, strings.Join(ids, ", ")))
		}
		sort.Strings(parts)
		errs = append(errs, fmt.Errorf("%s differs between components: %s", Gate, strings.Join(parts, "; ")))
	}
	return errs
}

// featureGates parses a container's --feature-gates (with $(VAR) expanded
// from its env) into gate → value; found says whether the flag is there.
func (r *rendered) featureGates(w workload, c corev1.Container) (map[string]string, bool, error) {
	raw, found := flagValue(c.Args, "feature-gates")
	if !found {
		return nil, false, nil
	}
	value, err := r.expand(w, c, raw)
	if err != nil {
		return nil, true, fmt.Errorf("--feature-gates: %w", err)
	}
	gates := map[string]string{}
	for _, kv := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || (v != "true" && v != "false") {
			return nil, true, fmt.Errorf("--feature-gates=%s: %q is not gate=true|false", value, kv)
		}
		gates[strings.TrimPrefix(k, "kube:")] = v
	}
	return gates, true, nil
}

// flagValue is the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// expand replaces $(VAR) in s with the container's env, as kubelet does,
// resolving configMapKeyRef through the render.
func (r *rendered) expand(w workload, c corev1.Container, s string) (string, error) {
	for _, env := range c.Env {
		ref := "$(" + env.Name + ")"
		if !strings.Contains(s, ref) {
			continue
		}
		v := env.Value
		if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil {
			k := env.ValueFrom.ConfigMapKeyRef
			cm := r.configMaps[w.meta.Namespace+"/"+k.Name]
			if cm == nil {
				return "", fmt.Errorf("env %s: no ConfigMap %s/%s in the render", env.Name, w.meta.Namespace, k.Name)
			}
			var ok bool
			if v, ok = cm.Data[k.Key]; !ok {
				return "", fmt.Errorf("env %s: ConfigMap %s has no key %s", env.Name, k.Name, k.Key)
			}
		}
		s = strings.ReplaceAll(s, ref, v)
	}
	if strings.Contains(s, "$(") {
		return "", fmt.Errorf("%q refers to a variable the container does not define", s)
	}
	return s, nil
}

func checkSelectors(r *rendered, _ Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: selector: %w", w.obj.ID(), err))
		case w.selector == nil || sel.Empty():
			errs = append(errs, fmt.Errorf("%s: empty selector", w.obj.ID()))
		case !sel.Matches(labels.Set(w.pod.Labels)):
			errs = append(errs, fmt.Errorf("%s: selector %s does not match its pod template's labels %v", w.obj.ID(), sel, w.pod.Labels))
		}
	}
	return errs
}

// checkReferences: every volumeMount names a volume of its pod, and every
// ConfigMap a pod uses is in the render.
func checkReferences(r *rendered, _ Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		volumes := map[string]bool{}
		for _, v := range w.pod.Spec.Volumes {
			volumes[v.Name] = true
			if v.ConfigMap != nil && r.configMaps[w.meta.Namespace+"/"+v.ConfigMap.Name] == nil {
				errs = append(errs, fmt.Errorf("%s: volume %s: no ConfigMap %s/%s in the render", w.obj.ID(), v.Name, w.meta.Namespace, v.ConfigMap.Name))
			}
		}
		for _, c := range w.containers() {
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					errs = append(errs, fmt.Errorf("%s container %s: volumeMount %s: no such volume", w.obj.ID(), c.Name, m.Name))
				}
			}
			for _, env := range c.Env {
				if k := env.ValueFrom; k != nil && k.ConfigMapKeyRef != nil {
					if _, err := r.expand(w, corev1.Container{Env: []corev1.EnvVar{env}}, "$("+env.Name+")"); err != nil {
						errs = append(errs, fmt.Errorf("%s container %s: %w", w.obj.ID(), c.Name, err))
					}
				}
			}
		}
	}
	return errs
}

// checkDriverNames: one CSIDriver, and it is the provisioner of every
// StorageClass and the driver of every VolumeSnapshotClass.
func checkDriverNames(r *rendered, _ Expect) []error {
	var drivers []string
	for _, o := range r.objs {
		if d, ok := o.Typed.(*storagev1.CSIDriver); ok {
			drivers = append(drivers, d.Name)
		}
	}
	classes := slices.ContainsFunc(r.objs, func(o *Object) bool {
		_, sc := o.Typed.(*storagev1.StorageClass)
		_, vsc := o.Typed.(*SnapshotClass)
		return sc || vsc
	})
	if len(drivers) == 0 && !classes {
		return nil // a part of the stack without storage objects (crds, rbac)
	}
	if len(drivers) != 1 {
		return []error{fmt.Errorf("%d CSIDrivers (%s), want 1", len(drivers), strings.Join(drivers, ", "))}
	}
	var errs []error
	for _, o := range r.objs {
		switch t := o.Typed.(type) {
		case *storagev1.StorageClass:
			if t.Provisioner != drivers[0] {
				errs = append(errs, fmt.Errorf("%s: provisioner %s, but the CSIDriver is %s", o.ID(), t.Provisioner, drivers[0]))
			}
		case *SnapshotClass:
			if t.Driver != drivers[0] {
				errs = append(errs, fmt.Errorf("%s: driver %s, but the CSIDriver is %s", o.ID(), t.Driver, drivers[0]))
			}
		}
	}
	return errs
}

// mountedFile is the content of the ConfigMap file a container reads at
// the path its flag names: the volumeMount whose mountPath is the file's
// directory, its configMap volume, and the key named after the file.
func (r *rendered) mountedFile(w workload, c corev1.Container, flag string) (file, content string, err error) {
	file, ok := flagValue(c.Args, flag)
	if !ok {
		return "", "", nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath != path.Dir(file) {
			continue
		}
		for _, v := range w.pod.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := r.configMaps[w.meta.Namespace+"/"+v.ConfigMap.Name]
			if cm == nil {
				return file, "", fmt.Errorf("--%s=%s: no ConfigMap %s in the render", flag, file, v.ConfigMap.Name)
			}
			data, ok := cm.Data[path.Base(file)]
			if !ok {
				return file, "", fmt.Errorf("--%s=%s: ConfigMap %s has no key %s", flag, file, cm.Name, path.Base(file))
			}
			return file, data, nil
		}
	}
	return file, "", fmt.Errorf("--%s=%s: no ConfigMap volume mounted at %s", flag, file, path.Dir(file))
}

// checkRegistration: every node plugin registers with kubelet exactly once,
// by itself (--kubelet-registration-path) or through the upstream
// node-driver-registrar sidecar; twice, kubelet sees two plugins fighting
// over one name, never, the node never gets the driver.
func checkRegistration(r *rendered, _ Expect) []error {
	var errs []error
	for _, w := range r.workloads {
		node, self, sidecar := false, false, false
		for _, c := range w.containers() {
			if binary(c) == "zonepath" && slices.Contains(c.Args, "--node") {
				node = true
				_, self = flagValue(c.Args, "kubelet-registration-path")
			}
			sidecar = sidecar || strings.Contains(c.Image, "/csi-node-driver-registrar:")
		}
		switch {
		case node && self && sidecar:
			errs = append(errs, fmt.Errorf("%s: the node plugin registers itself and through node-driver-registrar", w.obj.ID()))
		case node && !self && !sidecar:
			errs = append(errs, fmt.Errorf("%s: the node plugin never registers with kubelet: no --kubelet-registration-path, no node-driver-registrar", w.obj.ID()))
		}
	}
	return errs
}
