package rbaccheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/zonepath/zonepath/deploy/render"
)

// namedVerbs are the verbs a rule can restrict with resourceNames; the
// others (create, list, watch, deletecollection) act before a name is
// known or on many objects.
var namedVerbs = []string{"get", "update", "patch", "delete"}

// Check compares the RBAC of a render with a usage file, component by
// component, and returns every problem: a call no bound rule grants, a
// granted verb/resource no call of the component needs, a named-object
// call granted for every name, a wildcard, a role the file does not
// account for. No problems: least privilege, as far as the file is true.
func Check(objs []*render.Object, u *Usage, namespace string) ([]string, error) {
	p, err := newPolicy(objs)
	if err != nil {
		return nil, err
	}
	var problems []string
	for key, rules := range p.roles {
		problems = append(problems, wildcards(key, rules)...)
	}
	problems = append(problems, p.unaccounted(u, namespace)...)
	for _, c := range u.Components {
		if !p.accounts[namespace+"/"+c.ServiceAccount] {
			problems = append(problems, fmt.Sprintf("%s: no ServiceAccount %s/%s in the kustomization", c.Name, namespace, c.ServiceAccount))
		}
		grants, bad := p.grants(namespace, c.ServiceAccount)
		problems = append(problems, bad...)
		problems = append(problems, checkComponent(c, grants)...)
	}
	slices.Sort(problems)
	return slices.Compact(problems), nil
}

func wildcards(role string, rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.NonResourceURLs} {
			if slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, "*") }) {
				out = append(out, fmt.Sprintf("%s: wildcard in %v; name each group, resource and verb", role, list))
			}
		}
	}
	return out
}

// unaccounted finds bound roles that no component lists, and roles of the
// kustomization that nothing binds.
func (p *policy) unaccounted(u *Usage, namespace string) []string {
	listed := map[string]bool{} // serviceAccount + role
	for _, c := range u.Components {
		for _, r := range c.Roles {
			listed[c.ServiceAccount+" "+r] = true
		}
	}
	bound := map[string]bool{}
	var out []string
	for _, b := range p.bindings {
		bound[roleKey(b.ref.Kind, b.namespace, b.ref.Name)] = true
		for _, s := range b.subjects {
			if s.Kind == rbacv1.ServiceAccountKind && !listed[s.Name+" "+b.ref.Kind+"/"+b.ref.Name] {
				out = append(out, fmt.Sprintf("%s binds %s/%s to ServiceAccount %s, but no component of the usage file lists that role for it",
					b.name, b.ref.Kind, b.ref.Name, s.Name))
			}
		}
	}
	for key := range p.roles {
		if !bound[key] {
			out = append(out, fmt.Sprintf("%s: bound to nothing", key))
		}
	}
	return out
}

// checkComponent finds c's calls its roles do not grant and the rights
// its own roles grant that none of its calls needs.
func checkComponent(c Component, grants []grant) []string {
	var out []string
	mine := func(g grant) bool { return g.implicit || slices.Contains(c.Roles, g.role) }
	for _, r := range c.Roles {
		if !slices.ContainsFunc(grants, func(g grant) bool { return g.role == r && !g.implicit }) {
			out = append(out, fmt.Sprintf("%s: lists %s, but nothing binds it to ServiceAccount %s", c.Name, r, c.ServiceAccount))
		}
	}
	for _, call := range c.Calls {
		for _, verb := range call.Verbs {
			if !slices.ContainsFunc(grants, func(g grant) bool { return mine(g) && g.covers(call, verb) }) {
				out = append(out, fmt.Sprintf("%s: missing: %s on %s (%s); none of %s grants it", c.Name, verb, call, call.Why, strings.Join(c.Roles, ", ")))
			}
		}
	}
	for _, g := range grants {
		if g.ours && slices.Contains(c.Roles, g.role) {
			out = append(out, unused(c, g)...)
		}
	}
	return out
}

// unused checks every verb/resource of one of c's own rules against c's
// calls.
func unused(c Component, g grant) []string {
	var out []string
	for _, t := range targets(g.rule) {
		for _, verb := range g.rule.Verbs {
			one := g
			one.rule = rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{t.Group}, Resources: []string{t.Resource},
				NonResourceURLs: nonEmpty(t.NonResourceURL), ResourceNames: g.rule.ResourceNames}
			var users []Call
			for _, call := range c.Calls {
				if slices.Contains(call.Verbs, verb) && sameTarget(call, t) && one.covers(call, verb) {
					users = append(users, call)
				}
			}
			if len(users) == 0 {
				out = append(out, fmt.Sprintf("%s: unused: %s grants %s on %s; no call of %s needs it", c.Name, g.role, verb, t, c.Name))
				continue
			}
			if names := allNamed(users); len(g.rule.ResourceNames) == 0 && slices.Contains(namedVerbs, verb) && names != nil {
				out = append(out, fmt.Sprintf("%s: %s grants %s on %s for every name; %s needs only %s: restrict it with resourceNames",
					c.Name, g.role, verb, t, c.Name, strings.Join(names, ",")))
			}
		}
	}
	return out
}

// targets splits a rule into its group/resource pairs (or URLs).
func targets(r rbacv1.PolicyRule) []Call {
	var out []Call
	for _, url := range r.NonResourceURLs {
		out = append(out, Call{NonResourceURL: url})
	}
	for _, group := range r.APIGroups {
		for _, res := range r.Resources {
			out = append(out, Call{Group: group, Resource: res})
		}
	}
	return out
}

func sameTarget(call, t Call) bool {
	return call.NonResourceURL == t.NonResourceURL && call.Group == t.Group && call.Resource == t.Resource
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// allNamed returns the names the calls are limited to, or nil when one of
// them is not limited.
func allNamed(calls []Call) []string {
	var names []string
	for _, c := range calls {
		if len(c.Names) == 0 {
			return nil
		}
		names = append(names, c.Names...)
	}
	sort.Strings(names)
	return slices.Compact(names)
}
