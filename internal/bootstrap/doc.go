// Package bootstrap starts zonepath's Kubernetes components the same way:
// logging through component-base logsapi (--logging-format, -v, --vmodule,
// contextual loggers), --feature-gates, the API client from --kubeconfig,
// $KUBECONFIG or the pod, the CSI sidecars' common flags, the connection
// to the CSI socket and its gRPC metrics, an HTTP endpoint
// for metrics and health that fails the start when it cannot listen, leader
// election that hands the lease over on SIGTERM once the work has stopped,
// and a bounded wait for informer caches.
//
// It owns process plumbing only: it knows no CSI call, no API object and
// no controller logic, and imports nothing else of this module.
package bootstrap
