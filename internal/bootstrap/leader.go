package bootstrap

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// LeaderElection runs work only while this process holds a Lease. On
// SIGTERM (its context ending) it stops the work, waits for it, and only
// then releases the Lease, so the next leader starts at once and never
// overlaps with this one.
type LeaderElection struct {
	Client                                    kubernetes.Interface
	Namespace, Name, Identity                 string
	Labels                                    map[string]string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Health fails when the lease held has not been renewed in time.
	Health *leaderelection.HealthzAdaptor
}

// healthTimeout is how long past the lease's expiry a leader that has not
// renewed still counts as healthy: csi-lib-utils' default.
const healthTimeout = 20 * time.Second

// NewLeaderElection is an election on the Lease namespace/name (namespace
// "": the pod's, as csi-lib-utils finds it), with its own client, so that
// a busy controller's throttled client does not lose the lease, and the
// sidecars' default timings. The identity is the host name, as for the
// CSI sidecars: a pod's name.
func NewLeaderElection(restConfig *rest.Config, namespace, name string) (*LeaderElection, error) {
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	id, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	if namespace == "" {
		namespace = podNamespace()
	}
	return &LeaderElection{
		Client: client, Namespace: namespace, Name: name, Identity: LockName(id),
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 5 * time.Second,
		Health: leaderelection.NewLeaderHealthzAdaptor(healthTimeout),
	}, nil
}

// podNamespace is $POD_NAMESPACE, else the service account's namespace,
// else "default".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

// Run campaigns for the Lease and runs work while leading. It returns
// when ctx ends (after work returned and the Lease was released), with
// work's error if it ended by itself, or with an error when the Lease was
// lost: another process may now lead, so this one must not go on.
func (le *LeaderElection) Run(ctx context.Context, work func(context.Context) error) error {
	logger := klog.FromContext(ctx).WithValues("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	// Not ctx: the "stopped leading" event is recorded after ctx ended.
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: le.Client.CoreV1().Events(le.Namespace)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: le.Name + "/" + le.Identity})
	lock, err := resourcelock.NewWithLabels(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		le.Client.CoreV1(), le.Client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity, EventRecorder: recorder}, le.Labels)
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}

	// The elector runs under its own context, which ends only once work
	// has returned: then renewing stops and ReleaseOnCancel gives the
	// Lease up. Before leading, ctx ending ends the campaign.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var (
		mu      sync.Mutex
		leading bool
		done    = make(chan struct{})
		workErr error
	)
	stopCampaign := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopElector()
		}
	})
	defer stopCampaign()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.Name, ReleaseOnCancel: true, WatchDog: le.Health,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadingCtx context.Context) {
				defer stopElector()
				defer close(done)
				mu.Lock()
				leading = ctx.Err() == nil
				mu.Unlock()
				if !leading {
					return
				}
				logger.Info("Became leader, starting")
				workCtx, stopWork := context.WithCancel(ctx)
				defer stopWork()
				context.AfterFunc(leadingCtx, stopWork)
				workErr = work(workCtx)
			},
			// Run's caller decides what ending means, from ctx.
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Health.SetLeaderElection(elector)
	elector.Run(electorCtx)
	mu.Lock()
	started := leading
	mu.Unlock()
	if !started {
		if ctx.Err() != nil {
			return nil // stopped before leading
		}
		return fmt.Errorf("lost the lease %s/%s", le.Namespace, le.Name)
	}
	<-done
	if ctx.Err() != nil {
		logger.Info("Stopped and released the lease")
		return workErr
	}
	if workErr != nil {
		return workErr
	}
	return fmt.Errorf("lost the lease %s/%s", le.Namespace, le.Name)
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
