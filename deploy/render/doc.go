// Package render renders deploy/'s kustomizations the way `kubectl apply -k`
// does (sigs.k8s.io/kustomize/api/krusty), decodes every object strictly into
// its API type, and checks the invariants that a broken manifest violates
// silently until a cluster runs it: ServiceAccounts, images, feature gates,
// selectors, driver names, the driver's topology, the scheduler's
// configuration, and references to ConfigMaps and volumes.
//
// Its tests render every kustomization under deploy/ (make test) and show
// each check failing on a broken kustomization in testdata/.
package render
