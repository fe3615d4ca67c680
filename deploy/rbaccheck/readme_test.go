package rbaccheck

import (
	"os"
	"strings"
	"testing"
)

// TestREADMENamesEveryRole: deploy/rbac/README.md's table names, as a
// code span, every role api-usage.yaml binds to a component, so that a
// role added to deploy/rbac cannot be left out of the page.
func TestREADMENamesEveryRole(t *testing.T) {
	u, err := ReadUsage("../rbac/api-usage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("../rbac/README.md")
	if err != nil {
		t.Fatal(err)
	}
	roles := 0
	for _, c := range u.Components {
		for _, r := range c.Roles {
			_, name, _ := strings.Cut(r, "/")
			roles++
			if !strings.Contains(string(md), "`"+name+"`") {
				t.Errorf("deploy/rbac/README.md does not name %s, bound for %s (api-usage.yaml)", r, c.Name)
			}
		}
	}
	if roles == 0 {
		t.Fatal("api-usage.yaml binds no role: the walk is broken")
	}
}
