package bootstrap

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig is the API client configuration from kubeconfig, else from
// $KUBECONFIG, else the pod's service account, with the given client-side
// rate limits.
func RESTConfig(kubeconfig string, qps float32, burst int) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		if kubeconfig != "" {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return nil, fmt.Errorf("no --kubeconfig or $KUBECONFIG, and not in a pod: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}
