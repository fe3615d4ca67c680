package rbaccheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zonepath/zonepath/deploy/render"
)

// TestNewPolicyRefuses: deploy/rbac holds identities and RBAC only, and a
// role whose rules come from aggregation cannot be checked rule by rule.
func TestNewPolicyRefuses(t *testing.T) {
	tests := []struct {
		name string
		obj  *render.Object
		want string
	}{
		{"a ConfigMap", &render.Object{Kind: "ConfigMap", Namespace: "ns", Name: "c", Typed: &corev1.ConfigMap{}},
			"ConfigMap ns/c: not an identity or RBAC object"},
		{"an aggregated ClusterRole", &render.Object{Kind: "ClusterRole", Name: "agg", Typed: &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{}}},
			"ClusterRole agg: aggregated roles cannot be checked rule by rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newPolicy([]*render.Object{tc.obj})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newPolicy: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestNewPolicyReadsTypedObjects: each kind lands where grants looks for
// it; a RoleBinding's subject without a namespace is in the binding's.
func TestNewPolicyReadsTypedObjects(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	rule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	objs := []*render.Object{
		{Typed: &corev1.ServiceAccount{ObjectMeta: meta("ns", "sa")}},
		{Typed: &rbacv1.Role{ObjectMeta: meta("ns", "r"), Rules: []rbacv1.PolicyRule{rule}}},
		{Typed: &rbacv1.RoleBinding{ObjectMeta: meta("ns", "rb"),
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "r"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa"}}}},
	}
	p, err := newPolicy(objs)
	if err != nil {
		t.Fatal(err)
	}
	if !p.accounts["ns/sa"] {
		t.Error("ServiceAccount ns/sa not recorded")
	}
	if got := p.roles["Role/ns/r"]; len(got) != 1 {
		t.Errorf("Role ns/r rules = %v, want 1", got)
	}
	if len(p.bindings) != 1 || p.bindings[0].namespace != "ns" || !bindsAccount(p.bindings[0], "ns", "sa") {
		t.Errorf("bindings = %+v, want RoleBinding ns/rb binding ns/sa", p.bindings)
	}
}
