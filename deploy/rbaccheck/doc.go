// Package rbaccheck proves deploy/rbac least-privilege twice: statically,
// by rendering the kustomization and comparing the rules bound to each
// component's ServiceAccount with the calls recorded for that component in
// deploy/rbac/api-usage.yaml (every call granted, no grant unused), and
// dynamically, by comparing a kube-apiserver audit log of a fake-zones
// cluster run under those identities with the same file (no 403, no call
// missing from the file, every common call seen).
package rbaccheck
