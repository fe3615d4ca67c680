package rbaccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditLine is one audit event of a zonepath-system ServiceAccount.
func auditLine(id, stage, sa, agent, verb, group, resource, ns, name, decision string, code int) string {
	return fmt.Sprintf(`{"auditID":%q,"stage":%q,"verb":%q,"requestURI":"/x","user":{"username":"system:serviceaccount:zonepath-system:%s"},`+
		`"userAgent":"%s/v0.0.0 (linux/amd64)","objectRef":{"apiGroup":%q,"resource":%q,"namespace":%q,"name":%q},`+
		`"responseStatus":{"code":%d},"annotations":{"authorization.k8s.io/decision":%q}}`,
		id, stage, verb, sa, agent, group, resource, ns, name, code, decision)
}

func TestCheckAudit(t *testing.T) {
	usage := &Usage{Components: []Component{{
		Name: "attacher", ServiceAccount: "ctl", UserAgent: "csi-attacher", Roles: []string{"ClusterRole/a"},
		Calls: []Call{
			{Group: "storage.k8s.io", Resource: "volumeattachments", Verbs: []string{"watch"}, Why: "informer"},
			{Group: "storage.k8s.io", Resource: "volumeattachments/status", Verbs: []string{"patch"}, Why: "status", Rare: "no attach"},
			{Group: "coordination.k8s.io", Resource: "leases", Namespace: "zonepath-system", Names: []string{"mine"}, Verbs: []string{"get"}, Why: "lease"},
		},
	}}}
	watch := auditLine("1", "ResponseComplete", "ctl", "csi-attacher", "watch", "storage.k8s.io", "volumeattachments", "", "", "allow", 200)
	lease := auditLine("2", "ResponseComplete", "ctl", "csi-attacher", "get", "coordination.k8s.io", "leases", "zonepath-system", "mine", "allow", 200)
	for name, tc := range map[string]struct {
		lines []string
		want  string // a problem; empty: none
	}{
		"all seen":        {[]string{watch, lease}, ""},
		"watch started":   {[]string{strings.Replace(watch, "ResponseComplete", "ResponseStarted", 1), lease}, ""},
		"never seen":      {[]string{watch}, "attacher: get on coordination.k8s.io/leases in zonepath-system mine never seen"},
		"denied":          {[]string{watch, strings.Replace(lease, `"allow"`, `"forbid"`, 1)}, "1 of 1 get on coordination.k8s.io/leases in zonepath-system mine denied by RBAC"},
		"admission 403":   {[]string{watch, strings.Replace(lease, "200", "403", 1)}, ""},
		"other lease":     {[]string{watch, lease, strings.Replace(strings.Replace(lease, `"mine"`, `"theirs"`, 1), `"2"`, `"3"`, 1)}, "get on coordination.k8s.io/leases in zonepath-system theirs (1 calls) is not in the usage file"},
		"unknown verb":    {[]string{watch, lease, strings.Replace(strings.Replace(watch, `"watch"`, `"delete"`, 1), `"1"`, `"4"`, 1)}, "attacher: delete on storage.k8s.io/volumeattachments (1 calls) is not in the usage file"},
		"unknown client":  {[]string{watch, lease, strings.Replace(strings.Replace(watch, "csi-attacher/", "csi-resizer/", 1), `"1"`, `"5"`, 1)}, `user agent "csi-resizer/v0.0.0 (linux/amd64)"`},
		"other namespace": {[]string{watch, lease, strings.Replace(strings.Replace(watch, "zonepath-system:ctl", "other:ctl", 1), `"1"`, `"6"`, 1)}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			events, err := ReadAudit(path)
			if err != nil {
				t.Fatal(err)
			}
			var table strings.Builder
			problems := CheckAudit(events, usage, "zonepath-system", &table)
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Errorf("problems %q, want none\n%s", problems, table.String())
			case tc.want != "" && !contains(problems, tc.want):
				t.Errorf("no problem %q among %q\n%s", tc.want, problems, table.String())
			}
		})
	}
}

func TestReadAuditNamesTheBadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("{}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAudit(path); err == nil || !strings.Contains(err.Error(), "audit.log:2:") {
		t.Errorf("ReadAudit = %v, want an error naming line 2", err)
	}
}
