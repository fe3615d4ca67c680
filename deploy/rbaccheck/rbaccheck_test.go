package rbaccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/deploy/render"
)

const namespace = "zonepath-system"

// TestDeployRBAC is the check make test runs: deploy/rbac grants each
// component exactly what api-usage.yaml says its code calls.
func TestDeployRBAC(t *testing.T) {
	problems := check(t, "../rbac")
	for _, p := range problems {
		t.Error(p)
	}
}

// TestBrokenRBAC proves the check fails each way, on kustomizations in
// testdata that patch deploy/rbac.
func TestBrokenRBAC(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{"missing-verb", "zonepath-provisioner: missing: create on core/persistentvolumes"},
		{"resizer-missing-verb", "zonepath-resizer: missing: patch on core/persistentvolumeclaims/status"},
		{"resizer-missing-verb", "csi-resizer: missing: patch on core/persistentvolumeclaims/status"},
		{"unused-verb", "zonepath-snapshotter: unused: ClusterRole/zonepath:snapshotter grants delete on snapshot.storage.k8s.io/volumesnapshotcontents"},
		{"unused-resource", "csi-attacher: unused: ClusterRole/zonepath:attacher grants list on core/secrets"},
		{"wildcard", "ClusterRole/zonepath:node: wildcard in [*]"},
		{"lease-every-name", "zonepath-scheduler: Role/zonepath:scheduler-leader-election grants get on coordination.k8s.io/leases for every name; zonepath-scheduler needs only zonepath-scheduler"},
		{"namespace-only", "snapshot-controller: missing: get on core/persistentvolumes"},
		{"unbound-role", "csi-attacher: lists Role/zonepath:attacher-leader-election, but nothing binds it to ServiceAccount zonepath-controller"},
		{"unlisted-binding", "binds ClusterRole/view to ServiceAccount zonepath-node, but no component of the usage file lists that role for it"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			problems := check(t, filepath.Join("testdata", tc.dir))
			if !contains(problems, tc.want) {
				t.Errorf("no problem %q among:\n%s", tc.want, strings.Join(problems, "\n"))
			}
		})
	}
}

func check(t *testing.T, dir string) []string {
	t.Helper()
	objs, err := render.Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ReadUsage("../rbac/api-usage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(objs, u, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestReadUsageRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"unknown key":  {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [ClusterRole/x], callz: []}]", `unknown field "callz"`},
		"no why":       {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [ClusterRole/x], calls: [{group: '', resource: pods, verbs: [get]}]}]", "no why"},
		"wildcard":     {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [ClusterRole/x], calls: [{group: '', resource: '*', verbs: [get], why: w}]}]", "wildcard"},
		"bad role":     {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [x], calls: []}]", `role "x"`},
		"same client":  {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [Role/x]}, {name: b, serviceAccount: a, userAgent: a, roles: [Role/x]}]", "a second component"},
		"both targets": {"components: [{name: a, serviceAccount: a, userAgent: a, roles: [Role/x], calls: [{nonResourceURL: /api, resource: pods, verbs: [get], why: w}]}]", "exactly one of"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "usage.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadUsage(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadUsage = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
