package rbaccheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Event is the part of a kube-apiserver audit event (audit.k8s.io/v1,
// JSON lines) that says who called what and how it ended.
type Event struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

// denied reports whether the authorizer refused the request; other 403s,
// such as creating in a namespace being deleted, are admission's.
func (e Event) denied() bool {
	return e.Annotations["authorization.k8s.io/decision"] == "forbid"
}

// ReadAudit reads audit logs, keeping one event per request: the one that
// ended it, or for a watch still open at the end, the one that started it.
func ReadAudit(paths ...string) ([]Event, error) {
	var out []Event
	for _, path := range paths {
		events, err := readAuditFile(path)
		if err != nil {
			return nil, err
		}
		out = append(out, events...)
	}
	return out, nil
}

func readAuditFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byID := map[string]int{}
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if i, ok := byID[e.AuditID]; ok {
			if e.Stage == "ResponseComplete" || e.Stage == "Panic" {
				out[i] = e
			}
			continue
		}
		byID[e.AuditID] = len(out)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// row is one line of the audit report: one call of the usage file, or one
// call outside it.
type row struct {
	component, verb, target, status string
	count, denied                   int
}

// CheckAudit compares audit events of namespace's ServiceAccounts with the
// usage file: a denied request, a call the file lacks and a call the file
// has (not rare) that never happened are problems. It writes a table of
// every call to w.
func CheckAudit(events []Event, u *Usage, namespace string, w io.Writer) []string {
	prefix := "system:serviceaccount:" + namespace + ":"
	rows := map[string]*row{}
	get := func(component, verb, target string) *row {
		key := component + "\x00" + verb + "\x00" + target
		if rows[key] == nil {
			rows[key] = &row{component: component, verb: verb, target: target}
		}
		return rows[key]
	}
	for _, c := range u.Components {
		for _, call := range c.Calls {
			for _, verb := range call.Verbs {
				get(c.Name, verb, call.String()).status = "rare: " + call.Rare
			}
		}
	}
	var problems []string
	for _, e := range events {
		sa, ok := strings.CutPrefix(e.User.Username, prefix)
		if !ok {
			continue
		}
		agent, _, _ := strings.Cut(e.UserAgent, "/")
		i := slices.IndexFunc(u.Components, func(c Component) bool { return c.ServiceAccount == sa && c.UserAgent == agent })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("a client the usage file does not know: ServiceAccount %s, user agent %q (%s %s)", sa, e.UserAgent, e.Verb, e.RequestURI))
			continue
		}
		c := u.Components[i]
		target, call := e.target(), c.match(e)
		if call != nil {
			target = call.String()
		}
		r := get(c.Name, e.Verb, target)
		r.count++
		if e.denied() {
			r.denied++
		}
		if call == nil {
			r.status = "NOT IN USAGE FILE"
		}
	}
	var list []*row
	for _, r := range rows {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		return a.component+a.target+a.verb < b.component+b.target+b.verb
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERB\tRESOURCE\tCALLS\tDENIED\tSTATUS")
	for _, r := range list {
		switch {
		case r.denied > 0:
			r.status = "DENIED"
			problems = append(problems, fmt.Sprintf("%s: %d of %d %s on %s denied by RBAC (403)", r.component, r.denied, r.count, r.verb, r.target))
		case r.status == "NOT IN USAGE FILE":
			problems = append(problems, fmt.Sprintf("%s: %s on %s (%d calls) is not in the usage file", r.component, r.verb, r.target, r.count))
		case r.count == 0 && r.status == "rare: ":
			r.status = "NEVER SEEN"
			problems = append(problems, fmt.Sprintf("%s: %s on %s never seen, and the usage file does not mark it rare", r.component, r.verb, r.target))
		case r.count > 0:
			r.status = "ok"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.component, r.verb, r.target, r.count, r.denied, r.status)
	}
	tw.Flush()
	return problems
}

// target names what an event asked for, for calls the file lacks.
func (e Event) target() string {
	if e.ObjectRef == nil {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return path
	}
	c := Call{Group: e.ObjectRef.APIGroup, Resource: e.resource(), Namespace: e.ObjectRef.Namespace}
	if e.ObjectRef.Name != "" && e.ObjectRef.Resource == "leases" {
		c.Names = []string{e.ObjectRef.Name}
	}
	return c.String()
}

func (e Event) resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// match finds the call of c that e is one of.
func (c Component) match(e Event) *Call {
	for i, call := range c.Calls {
		if !slices.Contains(call.Verbs, e.Verb) {
			continue
		}
		if e.ObjectRef == nil {
			path, _, _ := strings.Cut(e.RequestURI, "?")
			if call.NonResourceURL == path {
				return &c.Calls[i]
			}
			continue
		}
		ref := e.ObjectRef
		if call.NonResourceURL != "" || call.Group != ref.APIGroup || call.Resource != e.resource() {
			continue
		}
		if call.Namespace != "" && call.Namespace != ref.Namespace {
			continue
		}
		if len(call.Names) > 0 && ref.Name != "" && !slices.Contains(call.Names, ref.Name) {
			continue
		}
		return &c.Calls[i]
	}
	return nil
}
