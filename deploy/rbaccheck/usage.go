package rbaccheck

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/internal/yamlfile"
)

// Usage is deploy/rbac/api-usage.yaml: what each component's code calls
// on the API, written by hand from that code.
type Usage struct {
	Components []Component `json:"components"`
}

// Component is one client of the API: a binary under a ServiceAccount.
// Several components may share a ServiceAccount (the containers of one
// pod); the user agent tells their calls apart in an audit log.
type Component struct {
	Name           string `json:"name"`
	ServiceAccount string `json:"serviceAccount"`
	// UserAgent is the binary's name as client-go sends it: the user
	// agent up to its first "/".
	UserAgent string `json:"userAgent"`
	// Roles are the roles bound to the ServiceAccount for this component,
	// "ClusterRole/<name>" or "Role/<name>"; a ClusterRole that deploy/rbac
	// does not define is a bootstrap role of the API server.
	Roles []string `json:"roles"`
	Calls []Call   `json:"calls"`
}

// Call is what the component asks of one resource.
type Call struct {
	Group string `json:"group"`
	// Resource is the plural name, with "/subresource" where it has one.
	Resource string   `json:"resource,omitempty"`
	Verbs    []string `json:"verbs"`
	// Namespace limits the call to one namespace; empty is cluster-scoped
	// or every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Names limits the call to these objects (leader-election leases).
	Names []string `json:"names,omitempty"`
	// NonResourceURL is a path such as /apis (discovery) instead of a
	// resource.
	NonResourceURL string `json:"nonResourceURL,omitempty"`
	Why            string `json:"why"`
	// Rare says why conformance cannot exercise the call; only rare calls
	// may go unobserved in the audit log.
	Rare string `json:"rare,omitempty"`
}

// String names the call's target the way errors print it.
func (c Call) String() string {
	if c.NonResourceURL != "" {
		return c.NonResourceURL
	}
	s := groupResource(c.Group, c.Resource)
	if c.Namespace != "" {
		s += " in " + c.Namespace
	}
	if len(c.Names) > 0 {
		s += " " + strings.Join(c.Names, ",")
	}
	return s
}

func groupResource(group, resource string) string {
	if group == "" {
		return "core/" + resource
	}
	return group + "/" + resource
}

// ReadUsage reads and validates a usage file.
func ReadUsage(path string) (*Usage, error) {
	return yamlfile.Load("usage file", path, func(data []byte) (*Usage, error) {
		u := &Usage{}
		if err := yaml.UnmarshalStrict(data, u); err != nil {
			return nil, err
		}
		return u, u.validate()
	})
}

func (u *Usage) validate() error {
	if len(u.Components) == 0 {
		return fmt.Errorf("no components")
	}
	seen := map[string]bool{}
	for i, c := range u.Components {
		where := fmt.Sprintf("components[%d] (%s)", i, c.Name)
		switch {
		case c.Name == "" || c.ServiceAccount == "" || c.UserAgent == "":
			return fmt.Errorf("%s: name, serviceAccount and userAgent are required", where)
		case seen[c.ServiceAccount+"/"+c.UserAgent]:
			return fmt.Errorf("%s: a second component with serviceAccount %s and userAgent %s", where, c.ServiceAccount, c.UserAgent)
		case len(c.Roles) == 0:
			return fmt.Errorf("%s: no roles", where)
		}
		seen[c.ServiceAccount+"/"+c.UserAgent] = true
		for _, r := range c.Roles {
			if !strings.HasPrefix(r, "ClusterRole/") && !strings.HasPrefix(r, "Role/") {
				return fmt.Errorf("%s: role %q is neither ClusterRole/<name> nor Role/<name>", where, r)
			}
		}
		for j, call := range c.Calls {
			if err := call.validate(); err != nil {
				return fmt.Errorf("%s: calls[%d] (%s): %w", where, j, call, err)
			}
		}
	}
	return nil
}

func (c Call) validate() error {
	switch {
	case len(c.Verbs) == 0:
		return fmt.Errorf("no verbs")
	case c.Why == "":
		return fmt.Errorf("no why: say what calls it")
	case (c.Resource == "") == (c.NonResourceURL == ""):
		return fmt.Errorf("exactly one of resource and nonResourceURL")
	case c.NonResourceURL != "" && (c.Group != "" || c.Namespace != "" || len(c.Names) > 0):
		return fmt.Errorf("a nonResourceURL call has no group, namespace or names")
	}
	for _, s := range append(append([]string{c.Group, c.Resource}, c.Verbs...), c.Names...) {
		if strings.Contains(s, "*") {
			return fmt.Errorf("wildcard %q: name each verb and resource", s)
		}
	}
	return nil
}
