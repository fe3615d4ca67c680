package bootstrap

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
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
	// Clients are built from --kubeconfig (else $KUBECONFIG, else
	// in-cluster) and --kube-api-qps/burst.
	Clients *Clients
	// Lock names the Lease; characters a name cannot hold become "-",
	// as csi-lib-utils does, so that leases keep their names.
	Lock string
	// Mux carries the component's own handlers (metrics at
	// --metrics-path); Run adds /healthz and serves it.
	Mux *http.ServeMux
	// addr is --http-endpoint or --metrics-address.
	addr string
}

// NewSidecar checks the sidecar flags and builds the API clients.
func NewSidecar(flags *standardflags.SidecarConfiguration) (*Sidecar, error) {
	addr, err := HTTPAddress(flags)
	if err != nil {
		return nil, err
	}
	restConfig, err := RESTConfig(flags.KubeConfig, float32(flags.KubeAPIQPS), flags.KubeAPIBurst)
	if err != nil {
		return nil, err
	}
	clients, err := NewClients(restConfig)
	if err != nil {
		return nil, err
	}
	return &Sidecar{Flags: flags, Clients: clients, Mux: http.NewServeMux(), addr: addr}, nil
}

// HTTPAddress is --http-endpoint or --metrics-address, which are
// exclusive, or "" when neither is set.
func HTTPAddress(s *standardflags.SidecarConfiguration) (string, error) {
	if s.MetricsAddress != "" && s.HttpEndpoint != "" {
		return "", errors.New("only one of --metrics-address and --http-endpoint can be set")
	}
	return s.HttpEndpoint + s.MetricsAddress, nil
}

// ServesHTTP says whether an address for metrics and health is set.
func (s *Sidecar) ServesHTTP() bool { return s.addr != "" }

// Run serves HTTP, then runs run until ctx ends, under leader election if
// asked. It returns run's error, or one saying why it could not start.
func (s *Sidecar) Run(ctx context.Context, run func(context.Context) error) error {
	mux := s.Mux
	if mux == nil {
		mux = http.NewServeMux()
	}
	var le *LeaderElection
	if s.Flags.LeaderElection {
		var err error
		if le, err = s.leaderElection(s.Clients.Config); err != nil {
			return err
		}
		// Upstream serves the lease's health only on --http-endpoint.
		if s.Flags.HttpEndpoint != "" {
			mux.Handle(LeaderHealthPath, healthHandler(le))
		}
	}
	mux.Handle(HealthPath, healthHandler(le))
	if s.addr != "" {
		if err := Serve(ctx, s.addr, mux); err != nil {
			return err
		}
	}
	if le == nil {
		return run(ctx)
	}
	return le.Run(ctx, run)
}

func (s *Sidecar) leaderElection(restConfig *rest.Config) (*LeaderElection, error) {
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

// SidecarMain is the whole main of a CSI sidecar: it registers the
// sidecar, logging and --feature-gates flags beside the sidecar's own
// (addFlags), parses the command line, prints the version for --version,
// and else copies the parsed sidecar flags to sidecar and runs run until a
// signal, exiting 1 when run fails. --feature-gates sets k8s.io/apiserver's
// DefaultMutableFeatureGate, where Kubernetes' gates and those a
// component registers live.
func SidecarMain(name, version string, sidecar *standardflags.SidecarConfiguration,
	addFlags func(*pflag.FlagSet), run func(context.Context) error) {
	cmd := NewCommand(name, version, utilfeature.DefaultMutableFeatureGate)
	fs := pflag.CommandLine
	addFlags(fs)
	parsed := SidecarFlags(fs)
	cmd.AddFlags(fs)
	pflag.Parse()
	if parsed.ShowVersion {
		fmt.Println(os.Args[0], version)
		return
	}
	*sidecar = *parsed
	cmd.Run(run)
}
