package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/restmapper"

	"github.com/zonepath/zonepath/deploy/render"
)

// Namespace is where deploy/ installs the components, their
// ServiceAccounts and their leader-election leases.
const Namespace = "zonepath-system"

// The ServiceAccounts of deploy/rbac that fake-zones components run as
// with --rbac. kwok and the kubelet stand-in stay admin: they stand in
// for nodes, which deploy/ does not install.
const (
	saSnapshotController = "snapshot-controller"
	saController         = "zonepath-controller"
	saScheduler          = "zonepath-scheduler"
)

var serviceAccounts = []string{saSnapshotController, saController, saScheduler}

// ServiceAccountUser is the user name the API server gives a
// ServiceAccount of Namespace; a client certificate for it, with
// ServiceAccountGroups, is treated exactly as the account's token.
func ServiceAccountUser(sa string) string {
	return "system:serviceaccount:" + Namespace + ":" + sa
}

// ServiceAccountGroups are the groups of a ServiceAccount of Namespace.
var ServiceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + Namespace, "system:authenticated"}

// AuditLog is the API server's audit log in a work directory started
// with --rbac: Metadata of every request of Namespace's ServiceAccounts.
func AuditLog(workDir string) string { return filepath.Join(workDir, "audit", "audit.log") }

// auditPolicy records who called what, not bodies, and only for the
// deploy components' ServiceAccounts: the controller manager's own
// ServiceAccounts and the test's admin calls would only grow the log.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:` + Namespace + `"]
- level: None
`

// renderRBAC renders Options.RBACDir and checks it has the
// ServiceAccounts the components run as, before anything starts.
func (u *up) renderRBAC() error {
	if u.o.RBACDir == "" {
		return nil
	}
	rendered, err := render.Render(u.o.RBACDir)
	if err != nil {
		return fmt.Errorf("--rbac: %w", err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(rendered))
	for _, o := range rendered {
		obj, err := o.Unstructured()
		if err != nil {
			return fmt.Errorf("--rbac: %w", err)
		}
		objs = append(objs, obj)
	}
	for _, sa := range serviceAccounts {
		if !slices.ContainsFunc(rendered, func(o *render.Object) bool {
			return o.Kind == "ServiceAccount" && o.Namespace == Namespace && o.Name == sa
		}) {
			return fmt.Errorf("--rbac %s: no ServiceAccount %s/%s in the rendered kustomization", u.o.RBACDir, Namespace, sa)
		}
	}
	u.rbac = objs
	return nil
}

// serviceAccountCredentials issues a client certificate and kubeconfig
// per ServiceAccount.
func (u *up) serviceAccountCredentials() error {
	if u.rbac == nil {
		return nil
	}
	for _, sa := range serviceAccounts {
		name := "sa-" + sa
		if err := u.w.pki.Client(name, ServiceAccountUser(sa), ServiceAccountGroups...); err != nil {
			return err
		}
		if err := u.w.pki.Kubeconfig(u.w.kubeconfig(name), u.state.Server, name); err != nil {
			return err
		}
	}
	return nil
}

// kubeconfigOf is the kubeconfig a deploy component uses: its
// ServiceAccount's with --rbac, else the admin's.
func (u *up) kubeconfigOf(sa string) string {
	if u.rbac == nil {
		return u.w.adminKubeconfig()
	}
	return u.w.kubeconfig("sa-" + sa)
}

// leaderElection are the flags that turn a component's leader election
// on in Namespace with --rbac, so that its lease Role is exercised; off
// without.
func (u *up) leaderElection() []string {
	if u.rbac == nil {
		return []string{"--leader-election=false"}
	}
	return []string{"--leader-election=true", "--leader-election-namespace=" + Namespace}
}

// auditArgs are the API server's audit flags with --rbac.
func (u *up) auditArgs() ([]string, error) {
	if u.rbac == nil {
		return nil, nil
	}
	policy := u.w.path("audit", "policy.yaml")
	if err := os.MkdirAll(filepath.Dir(policy), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + AuditLog(u.w.dir),
		"--audit-log-format=json", "--audit-log-maxsize=0"}, nil
}

// applyRBAC creates the namespace and every rendered object, before any
// component starts, so none ever runs without its rights.
func (u *up) applyRBAC(ctx context.Context) error {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}}
	groups, err := restmapper.GetAPIGroupResources(u.clients.Kube.Discovery())
	if err != nil {
		return err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, obj := range append([]*unstructured.Unstructured{ns}, u.rbac...) {
		if err := u.apply(ctx, mapper, obj); err != nil {
			return fmt.Errorf("--rbac %s: %w", u.o.RBACDir, err)
		}
	}
	return nil
}

func (u *up) apply(ctx context.Context, mapper meta.RESTMapper, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	what := gvk.Kind + " " + obj.GetName()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	client := u.clients.Dynamic.Resource(m.Resource)
	var create func() error
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault // as kubectl apply
		}
		create = func() error { _, err := client.Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); return err }
	} else {
		create = func() error { _, err := client.Create(ctx, obj, metav1.CreateOptions{}); return err }
	}
	if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	return nil
}
