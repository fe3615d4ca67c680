package sanity

import (
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/internal/yamlfile"
)

// Config says what the driver under test can and cannot satisfy.
type Config struct {
	// Segments the driver can place snapshots and volumes in, best first.
	// Empty: the node's own segment from NodeGetInfo. Tests that need two
	// disjoint segments (preferred order, restore outside the snapshot's
	// topology) skip with fewer, and the restore-outside test needs one
	// the snapshot is not usable from: for regional snapshots, a segment
	// in another region.
	Segments []map[string]string `json:"segments,omitempty"`
	// ExhaustedSegment is a valid segment in which the driver runs out of
	// room for snapshots; the test's source volume is created there, for
	// drivers that snapshot only in the source's zone. Empty: the
	// RESOURCE_EXHAUSTED test skips.
	ExhaustedSegment map[string]string `json:"exhaustedSegment,omitempty"`
	// ExhaustAfter is how many snapshots ExhaustedSegment holds before it
	// is exhausted. The test fills it, expects RESOURCE_EXHAUSTED, deletes
	// one and expects the same request to succeed. 0: the segment is
	// exhausted from the start and cannot be lifted by the test.
	ExhaustAfter int `json:"exhaustAfter,omitempty"`
	// LiftCommand, when set, is run with sh -c to lift the condition of
	// an ExhaustedSegment that is exhausted from the start (ExhaustAfter
	// 0), for example by raising a quota. The test then retries the same
	// request with exponential backoff for up to LiftTimeout.
	LiftCommand string `json:"liftCommand,omitempty"`
	// LiftTimeout bounds the retries after lifting (default 30s).
	LiftTimeout metav1.Duration `json:"liftTimeout,omitempty"`
	// IncompatibleRequirements is the code the driver documents for
	// CreateSnapshot with an existing name and source but a requisite the
	// existing snapshot lies outside of: "AlreadyExists" (default) or "OK".
	IncompatibleRequirements string `json:"incompatibleRequirements,omitempty"`
	// AttachLimit is the max_volumes_per_node NodeGetInfo must report;
	// 0 accepts any positive value.
	AttachLimit int64 `json:"attachLimit,omitempty"`
	// AttachLimitCeiling is the largest max_volumes_per_node the
	// attach-limit test fills (it creates one volume more); above it the
	// test skips saying so. 0: DefaultAttachLimitCeiling.
	AttachLimitCeiling int64 `json:"attachLimitCeiling,omitempty"`
	// WideSnapshotParameters are CreateSnapshot parameters with which the
	// driver makes a snapshot usable from every segment of a requisite of
	// two (a regional or replicated snapshot), added to the test snapshot
	// parameters. Empty: the idempotency cases of a snapshot usable
	// beyond its requisite are not exercised, and the summary says so.
	WideSnapshotParameters map[string]string `json:"wideSnapshotParameters,omitempty"`
	// OutageCommand, when set with RecoverCommand, is run with sh -c to
	// take the storage of the node's segment (NodeGetInfo) down, so that
	// its volumes turn unhealthy (a zone outage; for zonepath, an outage
	// fault rule); RecoverCommand brings it back. The volume health tests
	// that need an unhealthy volume skip without them.
	OutageCommand  string `json:"outageCommand,omitempty"`
	RecoverCommand string `json:"recoverCommand,omitempty"`
	// OutageTimeout bounds the wait for the controller to report the
	// segment's volumes with a condition they did not have before
	// OutageCommand, and for it to go after RecoverCommand (default 30s).
	OutageTimeout metav1.Duration `json:"outageTimeout,omitempty"`
	// ReadyTimeout bounds the wait for a fresh snapshot to become
	// ready_to_use before a test restores from it (default 5m, the
	// SnapshotCreate timeout of Kubernetes' e2e framework).
	ReadyTimeout metav1.Duration `json:"readyTimeout,omitempty"`
	// Nodes are nodes the controller publishes to besides the one whose
	// node plugin is under test (NodeGetInfo's), each with the segment
	// its own NodeGetInfo reports. The shared-access tests publish a
	// volume to one in the volume's accessible_topology as a second node,
	// and to one outside it; they skip without such a node.
	Nodes []Node `json:"nodes,omitempty"`
}

// Node is a node of the driver's, as the shared-access tests know it.
type Node struct {
	// ID is the node_id its NodeGetInfo reports.
	ID string `json:"id"`
	// Segment is the accessible_topology its NodeGetInfo reports; empty
	// for a driver without VOLUME_ACCESSIBILITY_CONSTRAINTS.
	Segment map[string]string `json:"segment,omitempty"`
}

var (
	mu      sync.RWMutex
	current = Config{}
)

// SetConfig sets the configuration the tests read when they run.
func SetConfig(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	current = c
	return nil
}

func config() Config {
	mu.RLock()
	defer mu.RUnlock()
	return current
}

// Validate checks the configuration.
func (c Config) Validate() error {
	for i, s := range c.Segments {
		if len(s) == 0 {
			return fmt.Errorf("segments[%d] is empty", i)
		}
	}
	if c.ExhaustAfter < 0 || c.ExhaustAfter > 1000 {
		return fmt.Errorf("exhaustAfter must be from 0 to 1000, got %d", c.ExhaustAfter)
	}
	if c.ExhaustAfter > 0 && len(c.ExhaustedSegment) == 0 {
		return fmt.Errorf("exhaustAfter needs exhaustedSegment")
	}
	if _, err := c.incompatibleCode(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		if n.ID == "" || seen[n.ID] {
			return fmt.Errorf("nodes[%d]: id %q is empty or given twice", i, n.ID)
		}
		seen[n.ID] = true
	}
	if c.LiftCommand != "" && c.ExhaustAfter > 0 {
		return fmt.Errorf("liftCommand is for a segment exhausted from the start; with exhaustAfter the test lifts by deleting a snapshot")
	}
	if c.LiftTimeout.Duration < 0 {
		return fmt.Errorf("liftTimeout must not be negative")
	}
	if c.AttachLimit < 0 {
		return fmt.Errorf("attachLimit must not be negative")
	}
	if c.AttachLimitCeiling < 0 {
		return fmt.Errorf("attachLimitCeiling must not be negative")
	}
	if (c.OutageCommand == "") != (c.RecoverCommand == "") {
		return fmt.Errorf("outageCommand and recoverCommand go together")
	}
	if c.OutageTimeout.Duration < 0 {
		return fmt.Errorf("outageTimeout must not be negative")
	}
	if c.ReadyTimeout.Duration < 0 {
		return fmt.Errorf("readyTimeout must not be negative")
	}
	return nil
}

func (c Config) liftTimeout() time.Duration {
	if c.LiftTimeout.Duration == 0 {
		return 30 * time.Second
	}
	return c.LiftTimeout.Duration
}

func (c Config) outageTimeout() time.Duration {
	if c.OutageTimeout.Duration == 0 {
		return 30 * time.Second
	}
	return c.OutageTimeout.Duration
}

// DefaultAttachLimitCeiling covers the attach limits of the common
// block drivers: EBS and Azure Disk (tens), GCE PD (127), Cinder (256).
const DefaultAttachLimitCeiling = 256

func (c Config) attachLimitCeiling() int64 {
	if c.AttachLimitCeiling == 0 {
		return DefaultAttachLimitCeiling
	}
	return c.AttachLimitCeiling
}

func (c Config) readyTimeout() time.Duration {
	if c.ReadyTimeout.Duration == 0 {
		return 5 * time.Minute
	}
	return c.ReadyTimeout.Duration
}

func (c Config) incompatibleCode() (codes.Code, error) {
	switch c.IncompatibleRequirements {
	case "", "AlreadyExists":
		return codes.AlreadyExists, nil
	case "OK":
		return codes.OK, nil
	}
	return 0, fmt.Errorf("incompatibleRequirements must be AlreadyExists or OK, got %q", c.IncompatibleRequirements)
}

// LoadConfig reads a YAML configuration file.
func LoadConfig(path string) (Config, error) {
	return yamlfile.Load("sanity config", path, func(data []byte) (Config, error) {
		var c Config
		if err := yaml.UnmarshalStrict(data, &c); err != nil {
			return c, err
		}
		return c, c.Validate()
	})
}

// Flags binds the configuration to command-line flags prefixed
// "zonepath.", next to csi-sanity's "csi." flags. Apply the result after
// parsing with Flags.Config.
type Flags struct {
	file, exhausted, incompatible, lift, wide string
	outage, recover                           string
	liftTimeout, readyTimeout                 time.Duration
	segments                                  segmentList
	exhaustAfter                              int
	attachLimit, attachLimitCeiling           int64
}

// RegisterFlags adds the zonepath.* flags to fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.file, "zonepath.config", "", "YAML file with the settings below (flags given as well override it)")
	fs.Var(&f.segments, "zonepath.segment", "a segment the driver can satisfy, as key=value,key=value; repeat for more, best first (default: the node's segment)")
	fs.StringVar(&f.exhausted, "zonepath.exhausted-segment", "", "a valid segment, key=value,..., in which the driver runs out of room for snapshots")
	fs.IntVar(&f.exhaustAfter, "zonepath.exhaust-after", 0, "snapshots --zonepath.exhausted-segment holds before RESOURCE_EXHAUSTED (0: exhausted from the start)")
	fs.StringVar(&f.lift, "zonepath.lift-command", "", "shell command lifting the exhaustion of --zonepath.exhausted-segment when --zonepath.exhaust-after is 0")
	fs.DurationVar(&f.liftTimeout, "zonepath.lift-timeout", 0, "how long to retry after lifting (default 30s)")
	fs.DurationVar(&f.readyTimeout, "zonepath.ready-timeout", 0, "how long to wait for a fresh snapshot to become ready_to_use before restoring it (default 5m)")
	fs.StringVar(&f.incompatible, "zonepath.incompatible-requirements", "", "code for CreateSnapshot with an existing name and source but a requisite the snapshot lies outside: AlreadyExists (default) or OK")
	fs.Int64Var(&f.attachLimit, "zonepath.attach-limit", 0, "max_volumes_per_node NodeGetInfo must report (0: any positive value)")
	fs.Int64Var(&f.attachLimitCeiling, "zonepath.attach-limit-ceiling", 0, fmt.Sprintf("largest max_volumes_per_node the attach-limit test fills, creating that many volumes and one more; above it the test skips (default %d)", DefaultAttachLimitCeiling))
	fs.StringVar(&f.outage, "zonepath.outage-command", "", "shell command taking the storage of the node's segment down, so its volumes turn unhealthy (volume health tests)")
	fs.StringVar(&f.recover, "zonepath.recover-command", "", "shell command bringing back what --zonepath.outage-command took down")
	fs.StringVar(&f.wide, "zonepath.wide-snapshot-parameters", "", "snapshot parameters, key=value,..., with which the driver makes a snapshot usable from every segment of a requisite of two")
	return f
}

// Config returns the configuration the flags describe.
func (f *Flags) Config() (Config, error) {
	c := Config{}
	if f.file != "" {
		var err error
		if c, err = LoadConfig(f.file); err != nil {
			return c, err
		}
	}
	if len(f.segments) > 0 {
		c.Segments = f.segments
	}
	if f.exhausted != "" {
		seg, err := parseSegment(f.exhausted)
		if err != nil {
			return c, fmt.Errorf("--zonepath.exhausted-segment: %w", err)
		}
		c.ExhaustedSegment = seg
	}
	// A flag given overrides the file; one left at its zero value does not.
	override(&c.ExhaustAfter, f.exhaustAfter)
	override(&c.LiftCommand, f.lift)
	override(&c.LiftTimeout.Duration, f.liftTimeout)
	override(&c.ReadyTimeout.Duration, f.readyTimeout)
	override(&c.IncompatibleRequirements, f.incompatible)
	override(&c.AttachLimit, f.attachLimit)
	override(&c.AttachLimitCeiling, f.attachLimitCeiling)
	override(&c.OutageCommand, f.outage)
	override(&c.RecoverCommand, f.recover)
	if f.wide != "" {
		params, err := parseSegment(f.wide)
		if err != nil {
			return c, fmt.Errorf("--zonepath.wide-snapshot-parameters: %w", err)
		}
		c.WideSnapshotParameters = params
	}
	return c, c.Validate()
}

type segmentList []map[string]string

func (l *segmentList) String() string {
	parts := make([]string, len(*l))
	for i, s := range *l {
		parts[i] = formatSegment(s)
	}
	return strings.Join(parts, " ")
}

func (l *segmentList) Set(v string) error {
	seg, err := parseSegment(v)
	if err != nil {
		return err
	}
	*l = append(*l, seg)
	return nil
}

func parseSegment(v string) (map[string]string, error) {
	seg := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" || val == "" {
			return nil, fmt.Errorf("%q is not key=value,key=value", v)
		}
		seg[k] = val
	}
	return seg, nil
}

// override sets *dst to v unless v is its type's zero value.
func override[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}
