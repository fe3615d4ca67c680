package rbaccheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"github.com/zonepath/zonepath/deploy/render"
)

// policy is the RBAC of a rendered kustomization on top of the API
// server's bootstrap policy, which the kustomization may bind but does
// not define.
type policy struct {
	// roles by roleKey: ours, from the render.
	roles map[string][]rbacv1.PolicyRule
	// bootstrap ClusterRoles by name.
	bootstrap map[string][]rbacv1.PolicyRule
	bindings  []binding
	// bootstrapBindings are the API server's default ClusterRoleBindings,
	// some of which bind groups every ServiceAccount is in.
	bootstrapBindings []binding
	accounts          map[string]bool // namespace/name
}

type binding struct {
	name      string // "ClusterRoleBinding/<name>" or "RoleBinding/<ns>/<name>"
	namespace string // "" for a ClusterRoleBinding
	ref       rbacv1.RoleRef
	subjects  []rbacv1.Subject
}

// grant is one rule of one role as bound to a ServiceAccount.
type grant struct {
	role      string // ClusterRole/<name> or Role/<name>, as usage files name it
	binding   string
	namespace string // "" everywhere; else this namespace only
	rule      rbacv1.PolicyRule
	// ours: defined by the kustomization, so checked for unused rights.
	ours bool
	// implicit: bound by the bootstrap policy to a group the account is
	// in (system:discovery and the like), not by the kustomization.
	implicit bool
}

func roleKey(kind, namespace, name string) string {
	if kind == "Role" {
		return "Role/" + namespace + "/" + name
	}
	return "ClusterRole/" + name
}

// newPolicy reads the RBAC objects of a render (decoded strictly by
// deploy/render); anything else but ServiceAccounts is refused, as
// deploy/rbac holds only identities.
func newPolicy(objs []*render.Object) (*policy, error) {
	p := &policy{roles: map[string][]rbacv1.PolicyRule{}, bootstrap: map[string][]rbacv1.PolicyRule{}, accounts: map[string]bool{}}
	for _, r := range bootstrappolicy.ClusterRoles() {
		p.bootstrap[r.Name] = r.Rules
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		p.bootstrapBindings = append(p.bootstrapBindings, binding{name: "ClusterRoleBinding/" + b.Name, ref: b.RoleRef, subjects: b.Subjects})
	}
	for _, o := range objs {
		if err := p.add(o.Typed); err != nil {
			return nil, fmt.Errorf("%s: %w", o.ID(), err)
		}
	}
	return p, nil
}

func (p *policy) add(obj any) error {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		p.accounts[o.Namespace+"/"+o.Name] = true
	case *rbacv1.ClusterRole:
		return p.addRole("ClusterRole", "", o.Name, o.Rules, o.AggregationRule)
	case *rbacv1.Role:
		return p.addRole("Role", o.Namespace, o.Name, o.Rules, nil)
	case *rbacv1.ClusterRoleBinding:
		p.bindings = append(p.bindings, binding{name: "ClusterRoleBinding/" + o.Name, ref: o.RoleRef, subjects: o.Subjects})
	case *rbacv1.RoleBinding:
		p.bindings = append(p.bindings, binding{name: "RoleBinding/" + o.Namespace + "/" + o.Name, namespace: o.Namespace, ref: o.RoleRef, subjects: o.Subjects})
	default:
		return fmt.Errorf("not an identity or RBAC object; deploy/rbac holds only ServiceAccounts, roles and bindings")
	}
	return nil
}

func (p *policy) addRole(kind, namespace, name string, rules []rbacv1.PolicyRule, aggregation *rbacv1.AggregationRule) error {
	if aggregation != nil {
		return fmt.Errorf("aggregated roles cannot be checked rule by rule")
	}
	p.roles[roleKey(kind, namespace, name)] = rules
	return nil
}

// saGroups are the groups the API server puts every ServiceAccount of
// namespace in.
func saGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

func bindsAccount(b binding, namespace, name string) bool {
	return slices.ContainsFunc(b.subjects, func(s rbacv1.Subject) bool {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = b.namespace // a RoleBinding's subject defaults to its namespace
			}
			return ns == namespace && s.Name == name
		case rbacv1.UserKind:
			return s.Name == "system:serviceaccount:"+namespace+":"+name
		case rbacv1.GroupKind:
			return slices.Contains(saGroups(namespace), s.Name)
		}
		return false
	})
}

// grants are every rule bound to the ServiceAccount namespace/name.
func (p *policy) grants(namespace, name string) ([]grant, []string) {
	var out []grant
	var problems []string
	add := func(b binding, implicit bool) {
		if !bindsAccount(b, namespace, name) {
			return
		}
		rules, ours, err := p.resolve(b)
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		for _, r := range rules {
			out = append(out, grant{role: b.ref.Kind + "/" + b.ref.Name, binding: b.name, namespace: b.namespace,
				rule: r, ours: ours, implicit: implicit})
		}
	}
	for _, b := range p.bindings {
		add(b, false)
	}
	for _, b := range p.bootstrapBindings {
		add(b, true)
	}
	return out, problems
}

// resolve finds the rules a binding refers to: a Role of its namespace,
// a ClusterRole of the render, or a bootstrap ClusterRole.
func (p *policy) resolve(b binding) ([]rbacv1.PolicyRule, bool, error) {
	if rules, ok := p.roles[roleKey(b.ref.Kind, b.namespace, b.ref.Name)]; ok {
		return rules, true, nil
	}
	if b.ref.Kind == "ClusterRole" {
		if rules, ok := p.bootstrap[b.ref.Name]; ok {
			return rules, false, nil
		}
	}
	return nil, false, fmt.Errorf("%s refers to %s %s, which neither the kustomization nor the API server's bootstrap policy defines",
		b.name, b.ref.Kind, b.ref.Name)
}

func has(list []string, s string) bool {
	return slices.Contains(list, s) || slices.Contains(list, rbacv1.ResourceAll)
}

// covers reports whether g allows verb for call.
func (g grant) covers(c Call, verb string) bool {
	r := g.rule
	if !has(r.Verbs, verb) {
		return false
	}
	if c.NonResourceURL != "" {
		return slices.ContainsFunc(r.NonResourceURLs, func(u string) bool {
			return u == c.NonResourceURL || u == "*" || (strings.HasSuffix(u, "*") && strings.HasPrefix(c.NonResourceURL, strings.TrimSuffix(u, "*")))
		})
	}
	if !has(r.APIGroups, c.Group) || !has(r.Resources, c.Resource) {
		return false
	}
	if g.namespace != "" && g.namespace != c.Namespace {
		return false // a RoleBinding reaches only its namespace
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	return len(c.Names) > 0 && !slices.ContainsFunc(c.Names, func(n string) bool { return !slices.Contains(r.ResourceNames, n) })
}
