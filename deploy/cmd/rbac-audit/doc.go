// Command rbac-audit proves deploy/rbac against a running cluster: it
// reads kube-apiserver audit logs of fake-zones clusters started with
// zonepath-cluster up --rbac and compares every call of the components'
// ServiceAccounts with deploy/rbac/api-usage.yaml. It prints a table of
// calls and fails on a denied request (403), a call the usage file lacks,
// or a call the file lists, not marked rare, that never happened.
//
//	go run ./deploy/cmd/rbac-audit --usage deploy/rbac/api-usage.yaml DIR/audit/audit.log...
//
// It only parses flags and prints; the comparison is package rbaccheck's.
package main
