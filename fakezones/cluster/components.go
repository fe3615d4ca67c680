package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/fakezones/kubelet"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/proc"
)

// component is one process of the cluster.
type component struct {
	name string
	// bin is the binary's name under Options.BinDir.
	bin  string
	args []string
	// env is added to the process's environment.
	env []string
}

// binary is the path of a binary under the bin directory.
func (u *up) binary(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(u.o.BinDir, name)
}

// has reports whether a binary was built, to choose zonepath's
// controllers over the upstream ones they replace.
func (u *up) has(name string) bool {
	st, err := os.Stat(u.binary(name))
	return err == nil && st.Mode().IsRegular()
}

// check finds what up needs before anything starts: every binary, in
// either its zonepath or its upstream form, and the CRDs.
func (u *up) check() error {
	var missing []string
	for _, names := range [][]string{
		{"etcd"}, {"kube-apiserver"}, {"kube-controller-manager"}, {"zonepath-scheduler", "kube-scheduler"},
		{"kwok"}, {"snapshot-controller"}, {"zonepath"}, {"zonepath-provisioner", "csi-provisioner"},
		{"zonepath-snapshotter", "csi-snapshotter"}, {"csi-attacher"}, {"zonepath-resizer"}, {"zonepath-cluster"},
	} {
		if !slices.ContainsFunc(names, u.has) {
			missing = append(missing, strings.Join(names, " or "))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing in %s: %s; run make build components", u.o.BinDir, strings.Join(missing, ", "))
	}
	if err := checkSocketPaths(u.o); err != nil {
		return err
	}
	if u.o.DriverFaultRules != "" {
		// The controller would refuse a bad file too, but only after
		// everything else had started.
		if _, err := faults.New(u.o.DriverFaultRules, nil); err != nil {
			return fmt.Errorf("driver fault rules: %w", err)
		}
	}
	crds, err := objects.ReadCRDs(u.o.CRDDir)
	u.crds = crds
	if err != nil {
		return err
	}
	return u.renderRBAC()
}

func (u *up) spec(c component) proc.Spec {
	return proc.Spec{Name: c.name, Path: u.binary(c.bin), Args: c.args, Env: c.env, Log: u.w.log(c.name)}
}

func (u *up) etcd() component {
	return component{name: "etcd", bin: "etcd", args: []string{
		"--name=fakezones", "--data-dir=" + u.w.path("etcd"),
		"--listen-client-urls=" + u.etcdURL, "--advertise-client-urls=" + u.etcdURL,
		"--listen-peer-urls=http://127.0.0.1:" + fmt.Sprint(u.ports.etcdPeer),
		"--initial-advertise-peer-urls=http://127.0.0.1:" + fmt.Sprint(u.ports.etcdPeer),
		"--initial-cluster=fakezones=http://127.0.0.1:" + fmt.Sprint(u.ports.etcdPeer),
		// A throwaway test cluster: durability buys nothing, fsync costs
		// seconds of start-up on a slow disk.
		"--unsafe-no-fsync", "--log-level=warn",
	}}
}

func (u *up) apiserver() (component, error) {
	p := u.w.pki
	audit, err := u.auditArgs()
	if err != nil {
		return component{}, err
	}
	return component{name: "kube-apiserver", bin: "kube-apiserver", args: append([]string{
		"--etcd-servers=" + u.etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", u.ports.apiserver),
		"--tls-cert-file=" + p.CertPath("apiserver"), "--tls-private-key-file=" + p.KeyPath("apiserver"),
		"--client-ca-file=" + p.CertPath("ca"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.Dir + "/service-account.pub",
		"--service-account-signing-key-file=" + p.KeyPath("service-account"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC", "--allow-privileged=true",
		// The default reconciler refuses a loopback advertise address, and
		// no pod here needs to reach the API through a Service.
		"--endpoint-reconciler-type=none",
		// Priority and fairness only queues requests of a cluster this
		// small, and its bootstrap objects slow every start.
		"--enable-priority-and-fairness=false",
		// up creates its Nodes Ready (objects.Node): the not-ready taint
		// this plugin puts on every new Node would only keep pods off
		// them until the node lifecycle controller took it off again, a
		// thousand patches later.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--profiling=false", "--v=1",
	}, audit...)}, nil
}

func (u *up) controllerManager() component {
	p := u.w.pki
	return component{name: "kube-controller-manager", bin: "kube-controller-manager", args: []string{
		"--kubeconfig=" + u.w.kubeconfig("kube-controller-manager"),
		"--leader-elect=false", "--secure-port=0",
		// The TTL controller annotates every Node with how long kubelets
		// may cache secrets, again each time the node count passes one
		// of its steps (100, 500, 1000, 2000 nodes): thousands of patches
		// for kubelets that do not exist.
		"--controllers=*,-ttl-controller",
		// A node is lost when its lease has not been renewed for this
		// long: kubelet's 50 s for its 40 s lease, longer with longer
		// leases.
		fmt.Sprintf("--node-monitor-grace-period=%ds", nodeLeaseSeconds(len(u.o.Cluster.Nodes))+10),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.KeyPath("service-account"),
		"--root-ca-file=" + p.CertPath("ca"),
		"--v=1",
	}}
}

// scheduler is zonepath-scheduler (kube-scheduler with SnapshotTopology)
// when it was built, else kube-scheduler. With --rbac, zonepath-scheduler
// runs as its ServiceAccount and elects a leader on deploy/'s lease.
func (u *up) scheduler() (component, error) {
	bin, plugins := "kube-scheduler", ""
	args := []string{"--config=" + u.w.path("scheduler.yaml"), "--secure-port=0", "--v=1"}
	kubeconfig, election := u.w.kubeconfig("kube-scheduler"), "  leaderElect: false\n"
	if u.has("zonepath-scheduler") {
		bin = "zonepath-scheduler"
		plugins = "  plugins:\n    multiPoint:\n      enabled:\n      - name: SnapshotTopology\n"
		args = append(args, "--feature-gates="+u.o.FeatureGates)
		if u.rbac != nil {
			kubeconfig = u.kubeconfigOf(saScheduler)
			election = "  leaderElect: true\n  resourceLock: leases\n  resourceNamespace: " + Namespace +
				"\n  resourceName: zonepath-scheduler\n"
		}
	}
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
leaderElection:
%sprofiles:
- schedulerName: default-scheduler
%s`, kubeconfig, election, plugins)
	if err := os.WriteFile(u.w.path("scheduler.yaml"), []byte(config), 0o644); err != nil {
		return component{}, err
	}
	return component{name: "scheduler", bin: bin, args: args}, nil
}

func (u *up) kwok() component {
	return component{name: "kwok", bin: "kwok", args: []string{
		"--kubeconfig=" + u.w.adminKubeconfig(), "--config=" + u.w.path("kwok.yaml"),
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", nodeLeaseSeconds(len(u.o.Cluster.Nodes))),
		"--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
		// zone down (zone.go) sets the Ready condition of these nodes
		// itself; kwok's stages would set it back.
		"--disregard-status-with-label-selector=" + ZoneDownLabel + "=true",
		// kwok logs every lease renewal at INFO: 300 nodes fill a disk.
		"--v=WARN",
	}}
}

// nodeLeaseSeconds is how long kwok's node leases last. kwok renews a
// lease every quarter of it: kubelet's 40 s would be 100 renewals a second
// at 1,000 nodes and 500 at 5,000, more than all the rest of the
// cluster's work (4,377 renewals during one 1,020-node start); a tenth of
// a second per node keeps them at about 40 a second.
func nodeLeaseSeconds(nodes int) int { return max(40, nodes/10) }

func (u *up) snapshotController() component {
	return component{name: "snapshot-controller", bin: "snapshot-controller", args: append(append([]string{
		"--kubeconfig=" + u.kubeconfigOf(saSnapshotController), "--v=2",
	}, u.leaderElection()...), u.backoffArgs("")...)}
}

// backoffArgs are Options.MaxBackoff's flags of a component: the
// snapshot-controller and every sidecar take upstream's
// --retry-interval-max, the provisioner (zonepath's or upstream's) also
// --snapshot-orphan-sweep-interval.
func (u *up) backoffArgs(sidecar string) []string {
	if u.o.MaxBackoff <= 0 {
		return nil
	}
	args := []string{"--retry-interval-max=" + u.o.MaxBackoff.String()}
	if sidecar == "provisioner" {
		args = append(args, "--snapshot-orphan-sweep-interval="+u.o.MaxBackoff.String())
	}
	return args
}

func (u *up) driverController() component {
	args := []string{
		"--controller", "--node=false", "--endpoint=unix://" + u.controllerSocket(),
		"--state-dir=" + u.w.path("driver", "state"), "--data-dir=" + u.w.path("driver", "data"),
		"--topology-file=" + u.w.path("driver", "topology.yaml"), "--v=2",
	}
	// Two fault files, each re-read on its own: the user's, which nothing
	// here writes, and the work directory's outage rules (zone.go), whose
	// rewrites keep the counters of the user's rules.
	if u.o.DriverFaultRules != "" {
		args = append(args, "--fault-rules="+u.o.DriverFaultRules)
	}
	args = append(args, "--fault-rules="+u.outageRules())
	return component{name: "zonepath-controller", bin: "zonepath", args: args}
}

func (u *up) controllerSocket() string { return u.w.path("csi", "controller.sock") }

// sidecars are the CSI sidecars on the controller socket: zonepath's
// snapshotter and provisioner where built (they carry KEP-5943), else the
// upstream ones, the upstream attacher, and zonepath-resizer (csi-resizer
// cannot be built here: its module is refused). kwok nodes have no
// kubelet, so expansions stop at the node's turn (NodeResizePending).
func (u *up) sidecars() []component {
	return u.sidecarsOn("", u.controllerSocket(), u.leaderElection())
}

// sidecarsOn are the sidecars of one driver's controller socket, their
// names prefixed with prefix, with election's leader-election flags.
// With --rbac they run as zonepath-controller, whatever the driver.
func (u *up) sidecarsOn(prefix, socket string, election []string) []component {
	common := append([]string{"--csi-address=" + socket, "--kubeconfig=" + u.kubeconfigOf(saController), "--v=2"}, election...)
	pick := func(name, ours, upstream string) component {
		args := append(slices.Clone(common), u.backoffArgs(name)...)
		if u.has(ours) {
			return component{name: prefix + name, bin: ours, args: append(args, "--feature-gates="+u.o.FeatureGates)}
		}
		return component{name: prefix + name, bin: upstream, args: args}
	}
	provisioner := pick("provisioner", "zonepath-provisioner", "csi-provisioner")
	provisioner.args, provisioner.env = append(provisioner.args, capacityArgs...), u.capacityEnv()
	return []component{
		provisioner,
		pick("snapshotter", "zonepath-snapshotter", "csi-snapshotter"),
		{name: prefix + "attacher", bin: "csi-attacher", args: append(slices.Clone(common), u.backoffArgs("attacher")...)},
		{name: prefix + "resizer", bin: "zonepath-resizer", args: append(slices.Clone(common), u.backoffArgs("resizer")...)},
	}
}

// capacityArgs turn capacity tracking on in every provisioner (zonepath's
// or upstream's, the same flags): CSIStorageCapacity objects per zone and
// WaitForFirstConsumer class, which the scheduler reads because every
// CSIDriver here has storageCapacity: true. Fake zones run processes, not
// pods, so there is no pod to own the objects (upstream's owner lookup
// starts at $POD_NAME): level -1, no owner; down removes them with the
// cluster. A 10 s poll instead of a minute keeps the objects close to the
// driver while a spec runs; the provisioner also refreshes a zone's
// objects after each volume it creates or deletes there.
// Specs create classes one after another: 20 writes a second (upstream's
// default is 1) publish a new class's objects before its first pod.
var capacityArgs = []string{"--enable-capacity", "--capacity-ownerref-level=-1", "--capacity-poll-interval=10s",
	"--kube-api-capacity-qps=20", "--kube-api-capacity-burst=50"}

// capacityEnv is where the provisioners publish the objects: Namespace
// with --rbac, where deploy/rbac lets them write; "default" without,
// which every cluster has.
func (u *up) capacityEnv() []string {
	if u.rbac == nil {
		return []string{"NAMESPACE=default"}
	}
	return []string{"NAMESPACE=" + Namespace}
}

// extraDrivers are the processes of every extra driver of the cluster
// file: a zonepath controller under its own name, with its own socket,
// state and data (kubelet.ExtraDriverDir), the main topology file with
// its own settings (extraTopologyFile), its disabled capabilities, and
// the same choice of sidecars as the main driver (its provisioner with
// --strict-topology when it asks for it). The kubelet stand-in serves their node plugins. Each process is
// named after the driver, and so is its log.
func (u *up) extraDrivers() []component {
	var out []component
	for i, d := range u.o.Cluster.ExtraDrivers {
		dir := kubelet.ExtraDriverDir(u.w.dir, d.Name)
		socket := extraControllerSocket(u.w.dir, i)
		out = append(out, component{name: d.Name + "-controller", bin: "zonepath", args: []string{
			"--drivername=" + d.Name, "--controller", "--node=false", "--endpoint=unix://" + socket,
			"--state-dir=" + filepath.Join(dir, "state"), "--data-dir=" + filepath.Join(dir, "data"),
			"--topology-file=" + extraTopologyFile(u.w.dir, d.Name),
			"--disable-capabilities=" + strings.Join(d.DisableCapabilities, ","), "--v=2",
		}})
		// No leader election: the leases deploy/rbac names are those of
		// zonepath.csi.dev, and the main driver's sidecars exercise them.
		sidecars := u.sidecarsOn(d.Name+"-", socket, []string{"--leader-election=false"})
		if d.StrictTopology {
			// sidecarsOn puts the provisioner first.
			sidecars[0].args = append(sidecars[0].args, "--strict-topology")
		}
		out = append(out, sidecars...)
	}
	return out
}

// extraControllerSocket is the controller socket of the i-th extra driver.
func extraControllerSocket(workDir string, i int) string {
	return filepath.Join(kubelet.ExtraSocketDir(workDir, i), "controller.sock")
}

// checkSocketPaths refuses a work directory so deep that a socket's path
// would pass the unix limit: the component would fail to listen with a
// bare "invalid argument" after everything else had started.
func checkSocketPaths(o Options) error {
	dirs := []string{filepath.Dir(kubelet.SocketPath(o.WorkDir, "x"))}
	for i := range o.Cluster.ExtraDrivers {
		dirs = append(dirs, filepath.Join(kubelet.ExtraSocketDir(o.WorkDir, i), "nodes"))
	}
	longest := ""
	for _, dir := range dirs {
		for _, n := range o.Cluster.Nodes {
			if p := filepath.Join(dir, n.Name+".sock"); len(p) > len(longest) {
				longest = p
			}
		}
	}
	if len(longest) > kubelet.MaxSocketPath {
		return fmt.Errorf("work directory %s is too deep: socket %s would be %d bytes, over the %d a unix socket allows; use a shorter --work-dir",
			o.WorkDir, longest, len(longest), kubelet.MaxSocketPath)
	}
	return nil
}

// kubeletStandIn runs zonepath-cluster's kubelet command, the stand-in
// for the kubelets kwok nodes lack.
func (u *up) kubeletStandIn() component {
	return component{name: "kubelet", bin: "zonepath-cluster", args: []string{
		"kubelet", "--work-dir=" + u.w.dir, "--kubeconfig=" + u.w.adminKubeconfig(),
		"--data-dir=" + u.w.path("driver", "data"), "--v=2",
	}}
}
