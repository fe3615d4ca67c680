package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// defaultDriverName is the CSI driver a personality tests when its
// personality.yaml names none.
const defaultDriverName = "zonepath.csi.dev"

// personality is one folder of e2e/testdata/personalities: a zonepath
// configuration that plays a family of drivers, with the files a vendor
// of that family would write (issue 21's shared layout).
type personality struct {
	// Name is the folder's name.
	Name string `json:"-"`
	// Dir is the folder.
	Dir         string `json:"-"`
	Description string `json:"description"`
	// Cluster names the personality whose cluster.yaml this one runs on;
	// itself when empty.
	Cluster    string `json:"cluster,omitempty"`
	DriverName string `json:"driverName,omitempty"`
	// Lacks are the capabilities (capabilities.go) the personality lacks:
	// the only reasons a skip of its runs may have.
	Lacks       []string `json:"lacks,omitempty"`
	SanityFlags []string `json:"sanityFlags,omitempty"`
	E2EFlags    []string `json:"e2eFlags,omitempty"`
}

func (p personality) file(name string) string { return filepath.Join(p.Dir, name) }

// loadPersonalities reads every folder under root and returns those only
// names (all when empty), sorted by name. Every problem of a chosen
// folder, or of the folder whose cluster it runs on, is reported before
// anything runs; other folders' problems do not stop a subset.
func loadPersonalities(root string, only []string) ([]personality, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	all := map[string]personality{}
	bad := map[string]error{}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p, err := loadPersonality(filepath.Join(root, e.Name()))
		all[p.Name], bad[p.Name] = p, err
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no personality folder", root)
	}
	if len(only) == 0 {
		only = names
	}
	var out []personality
	var errs []error
	for _, name := range only {
		p, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("no personality %q (personalities: %s)", name, strings.Join(names, ", "))
		}
		errs = append(errs, bad[name], p.checkCluster(all, bad))
		out = append(out, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b personality) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b personality) bool { return a.Name == b.Name }), nil
}

// loadPersonality reads one folder's personality.yaml (strictly: a
// misspelt key is an error, not a default) and checks that the files the
// runs need are there.
func loadPersonality(dir string) (personality, error) {
	p := personality{Name: filepath.Base(dir), Dir: dir}
	data, err := os.ReadFile(p.file("personality.yaml"))
	if err != nil {
		return p, fmt.Errorf("personality %s: %w", p.Name, err)
	}
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return p, fmt.Errorf("personality %s: personality.yaml: %w", p.Name, err)
	}
	if p.Cluster == "" {
		p.Cluster = p.Name
	}
	if p.DriverName == "" {
		p.DriverName = defaultDriverName
	}
	var errs []error
	for _, f := range []string{"driver.yaml", "ext.yaml", "sanity.yaml"} {
		if _, err := os.Stat(p.file(f)); err != nil {
			errs = append(errs, fmt.Errorf("personality %s: %w", p.Name, err))
		}
	}
	if err := checkSnapshotTimeout(p.file("driver.yaml")); err != nil && !os.IsNotExist(err) {
		errs = append(errs, fmt.Errorf("personality %s: %w", p.Name, err))
	}
	if err := p.checkFaultRules(); err != nil {
		errs = append(errs, err)
	}
	for _, c := range p.Lacks {
		if _, ok := capabilities[c]; !ok {
			errs = append(errs, fmt.Errorf("personality %s: lacks %q, which is no capability of the matrix's vocabulary (%s)", p.Name, c, strings.Join(capabilityNames(), ", ")))
		}
	}
	return p, errors.Join(errs...)
}

// checkCluster: the personality named by cluster: loads and has a
// cluster.yaml.
func (p personality) checkCluster(all map[string]personality, bad map[string]error) error {
	owner, ok := all[p.Cluster]
	switch {
	case !ok:
		return fmt.Errorf("personality %s: cluster: %q is no personality folder", p.Name, p.Cluster)
	case owner.Name != p.Name && bad[owner.Name] != nil:
		return fmt.Errorf("personality %s runs on %s's cluster, a folder with errors", p.Name, owner.Name)
	}
	if _, err := os.Stat(owner.file("cluster.yaml")); err != nil {
		return fmt.Errorf("personality %s: runs on %s's cluster, which has no cluster.yaml: %w", p.Name, p.Cluster, err)
	}
	return nil
}

// group is the personalities that run on one cluster, in name order.
type group struct {
	// Cluster is the personality whose cluster.yaml the group runs on.
	Cluster     string
	ClusterFile string
	Members     []personality
}

// groupByCluster groups personalities by cluster, in the order of each
// cluster's first member. root is the personalities' folder.
func groupByCluster(root string, ps []personality) []group {
	var out []group
	index := map[string]int{}
	for _, p := range ps {
		i, ok := index[p.Cluster]
		if !ok {
			i = len(out)
			index[p.Cluster] = i
			out = append(out, group{Cluster: p.Cluster, ClusterFile: filepath.Join(root, p.Cluster, "cluster.yaml")})
		}
		out[i].Members = append(out[i].Members, p)
	}
	return out
}
