package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Object is one rendered object: where it came from, its identity, and its
// decoded form (a typed API object, or Unstructured for kinds without one).
type Object struct {
	Kind, Namespace, Name string
	// YAML is the object as kustomize rendered it.
	YAML []byte
	// Typed is the object decoded strictly into its Go type.
	Typed any
}

// ID names the object in messages: Kind namespace/name.
func (o *Object) ID() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Unstructured is the object as the dynamic client applies it.
func (o *Object) Unstructured() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(o.YAML, &u.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", o.ID(), err)
	}
	return u, nil
}

// Render builds the kustomization in dir, as kubectl apply -k would, and
// decodes every object strictly. A missing generated CRD is reported as
// such: the CRDs are built, never committed.
func Render(dir string) ([]*Object, error) {
	if err := checkCRDs(dir); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	var out []*Object
	var errs []error
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", dir, r.GetKind(), r.GetName(), err)
		}
		o := &Object{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName(), YAML: data}
		if o.Typed, err = decode(r.GetApiVersion(), o.Kind, data); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.ID(), err))
		}
		out = append(out, o)
	}
	return out, errors.Join(errs...)
}

// crdsKustomization is where deploy/ lists the generated CRDs; it also
// marks the deploy/ directory.
const crdsKustomization = "crds/kustomization.yaml"

// checkCRDs fails with what to do when a kustomization under deploy/ would
// need the generated CRDs and they are missing.
func checkCRDs(dir string) error {
	deploy, err := deployRoot(dir)
	if err != nil {
		return nil // not under deploy/: nothing to say
	}
	data, err := os.ReadFile(filepath.Join(deploy, crdsKustomization))
	if err != nil {
		return err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", crdsKustomization, err)
	}
	for _, f := range k.Resources {
		if _, err := os.Stat(filepath.Join(deploy, "crds", f)); err != nil {
			return fmt.Errorf("deploy/crds/%s is missing: run make crds (the CRDs are generated, never committed)", f)
		}
	}
	return nil
}

// deployRoot is the deploy/ directory dir is in: the nearest ancestor
// holding crds/kustomization.yaml.
func deployRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, crdsKustomization)); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fs.ErrNotExist
		}
	}
}

// Kustomizations lists every directory under root holding a
// kustomization.yaml of kind Kustomization (Components render only through
// an overlay), skipping testdata.
func Kustomizations(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "kustomization.yaml" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if k.Kind == "" || k.Kind == "Kustomization" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}
