package bootstrap

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// SidecarFlags registers the flags every CSI sidecar shares, as
// csi-lib-utils' standardflags spells them (--csi-address, --kubeconfig,
// --leader-election*, --kube-api-qps/burst, --http-endpoint,
// --metrics-address, --metrics-path, --version), and returns where they
// land. Call it once per process: standardflags keeps them in a global.
func SidecarFlags(fs *pflag.FlagSet) *standardflags.SidecarConfiguration {
	gofs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	standardflags.RegisterCommonFlags(gofs)
	fs.AddGoFlagSet(gofs)
	// standardflags declares --metrics-path on flag.CommandLine, not on
	// the set it is given.
	if f := flag.CommandLine.Lookup("metrics-path"); f != nil {
		fs.AddGoFlag(f)
	}
	return &standardflags.Configuration
}

// Sidecar runs a controller as the CSI sidecars do: under leader election
// when --leader-election is set, with metrics and health on
// --http-endpoint or --metrics-address.
type Sidecar struct {
	Flags *standardflags.SidecarConfiguration
	// Lock names the Lease; characters a name cannot hold become "-",
	// as csi-lib-utils does, so that leases keep their names.
	Lock string
	// Mux carries the component's own handlers (metrics at
	// --metrics-path); Run adds /healthz and serves it.
	Mux *http.ServeMux
}

// HTTPAddress is --http-endpoint or --metrics-address, which are
// exclusive, or "" when neither is set.
func HTTPAddress(s *standardflags.SidecarConfiguration) (string, error) {
	if s.MetricsAddress != "" && s.HttpEndpoint != "" {
		return "", errors.New("only one of --metrics-address and --http-endpoint can be set")
	}
	return s.HttpEndpoint + s.MetricsAddress, nil
}

// RESTConfig is the sidecar's API client configuration: --kubeconfig,
// else $KUBECONFIG, else in-cluster, with --kube-api-qps/burst.
func (s Sidecar) RESTConfig() (*rest.Config, error) {
	return RESTConfig(s.Flags.KubeConfig, float32(s.Flags.KubeAPIQPS), s.Flags.KubeAPIBurst)
}

// Run serves HTTP, then runs run until ctx ends, under leader election if
// asked. It returns run's error, or one saying why it could not start.
func (s Sidecar) Run(ctx context.Context, restConfig *rest.Config, run func(context.Context) error) error {
	addr, err := HTTPAddress(s.Flags)
	if err != nil {
		return err
	}
	mux := s.Mux
	if mux == nil {
		mux = http.NewServeMux()
	}
	var le *LeaderElection
	if s.Flags.LeaderElection {
		if le, err = s.leaderElection(restConfig); err != nil {
			return err
		}
		// Upstream serves the lease's health only on --http-endpoint.
		if s.Flags.HttpEndpoint != "" {
			mux.Handle(LeaderHealthPath, healthHandler(le))
		}
	}
	mux.Handle(HealthPath, healthHandler(le))
	if addr != "" {
		if err := Serve(ctx, addr, mux); err != nil {
			return err
		}
	}
	if le == nil {
		return run(ctx)
	}
	return le.Run(ctx, run)
}

func (s Sidecar) leaderElection(restConfig *rest.Config) (*LeaderElection, error) {
	le, err := NewLeaderElection(restConfig, s.Flags.LeaderElectionNamespace, LockName(s.Lock))
	if err != nil {
		return nil, err
	}
	le.Labels = s.Flags.LeaderElectionLabels
	le.LeaseDuration = s.Flags.LeaderElectionLeaseDuration
	le.RenewDeadline = s.Flags.LeaderElectionRenewDeadline
	le.RetryPeriod = s.Flags.LeaderElectionRetryPeriod
	return le, nil
}

var notInName = regexp.MustCompile("[^a-zA-Z0-9-]")

// LockName is name as a Lease name, spelled as csi-lib-utils spells it:
// other characters than letters, digits and "-" become "-", and a name
// ending in "-" gets an "X".
func LockName(name string) string {
	name = notInName.ReplaceAllString(name, "-")
	if strings.HasSuffix(name, "-") {
		name += "X"
	}
	return name
}

// healthHandler answers ok, or 500 with the reason when the lease held
// has not been renewed in time.
func healthHandler(le *LeaderElection) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if le != nil {
			if err := le.Health.Check(r); err != nil {
				http.Error(w, fmt.Sprintf("leader election: %v", err), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprint(w, "ok")
	})
}
