// Package bootstrap starts zonepath's Kubernetes components the same way:
// logging through component-base logsapi (--logging-format, -v, --vmodule,
// contextual loggers), --feature-gates, the API client from --kubeconfig,
// $KUBECONFIG or the pod, the CSI sidecars' common flags, the connection
// to the CSI socket with its gRPC metrics and the driver's name, an HTTP
// endpoint for metrics and health that fails the start when it cannot
// listen, leader election that hands the lease over on SIGTERM once the
// work has stopped, and informers started with a bounded wait for their
// caches.
//
// It owns process plumbing only: it knows no CSI call beyond the
// identity service's Probe and GetPluginInfo, no API object and no
// controller logic, and imports nothing else of this module.
package bootstrap
