package provisioner

import (
	"context"

	v1 "k8s.io/api/core/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// Provisioner is the upstream CSI provisioner with one change: for an
// Immediate-binding claim restored from a VolumeSnapshot whose content has
// nodeAffinity, the StorageClass it sees is narrowed to the intersection,
// pinned for the claim's retries (see Provision). Everything else is the
// delegate's.
type Provisioner struct {
	delegate controller.Provisioner
	resolver snapshotapi.Resolver
	claims   corev1.PersistentVolumeClaimsGetter
	nodes    DriverNodes
	pins     pins
}

// Options are what the wrapper reads and writes besides the delegate.
type Options struct {
	// Resolver follows a claim to its snapshot's topology; production
	// reads live (snapshotapi.Live; controllers/README.md says why).
	Resolver snapshotapi.Resolver
	// Claims patches the pin annotation of claims.
	Claims corev1.PersistentVolumeClaimsGetter
	// Nodes tell which segments of an intersection a node carries
	// (placeable); upstream's own listers.
	Nodes DriverNodes
}

// The lib's ProvisionController finds optional behaviour by type assertion
// on the provisioner it is given. A wrapper that lacks one of these
// methods silently switches the behaviour off (no ShouldProvision filter,
// no block volumes), so Provisioner implements all of them and forwards.
var (
	_ controller.Provisioner      = (*Provisioner)(nil)
	_ controller.Qualifier        = (*Provisioner)(nil)
	_ controller.BlockProvisioner = (*Provisioner)(nil)
	_ controller.DeletionGuard    = (*Provisioner)(nil)
)

// New wraps delegate, normally what external-provisioner's
// controller.NewCSIProvisioner returns. The options are used only while
// the VolumeSnapshotTopology gate is on, so they may be empty when it is
// off.
func New(delegate controller.Provisioner, o Options) *Provisioner {
	return &Provisioner{delegate: delegate, resolver: o.Resolver, claims: o.Claims, nodes: o.Nodes}
}

// Provision narrows the StorageClass where KEP-5943 asks for it and hands
// the claim to the delegate; see narrow for when that happens, and pinned
// for how a retry repeats the first attempt's topology.
//
// When narrowing fails (an empty intersection, an unbound snapshot, a
// content not cut yet or unreadable, the pin not written) no CSI call has
// been made, so the state is ProvisioningNoChange: the lib keeps whatever
// it knew from an earlier attempt (a CreateVolume that timed out may still
// run in the driver and must stay tracked), and on a first attempt that
// means "finished". That is how upstream reports its own failures before
// CreateVolume. The lib requeues every such error with exponential backoff
// (--retry-interval-start .. --retry-interval-max) and emits a
// ProvisioningFailed event each time, so a content whose nodeAffinity is
// later corrected, or a snapshot bound or cut later, is picked up without
// a user touching the claim.
func (p *Provisioner) Provision(ctx context.Context, options controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	narrowed, pinned, err := p.narrow(ctx, options)
	if err != nil {
		return nil, controller.ProvisioningNoChange, err
	}
	if pinned {
		p.pins.begin(options.PVC.UID)
	}
	pv, state, err := p.delegate.Provision(ctx, narrowed)
	if pinned {
		p.pins.settle(options.PVC.UID, state, err)
	}
	return pv, state, err
}

// Delete is the delegate's: deletion does not depend on topology.
func (p *Provisioner) Delete(ctx context.Context, pv *v1.PersistentVolume) error {
	return p.delegate.Delete(ctx, pv)
}

// ShouldProvision forwards to the delegate's Qualifier. Without one the
// lib would provision every claim it is responsible for, so true.
func (p *Provisioner) ShouldProvision(ctx context.Context, claim *v1.PersistentVolumeClaim) bool {
	if q, ok := p.delegate.(controller.Qualifier); ok {
		return q.ShouldProvision(ctx, claim)
	}
	return true
}

// SupportsBlock forwards to the delegate's BlockProvisioner. Without one
// the lib refuses block claims, so false.
func (p *Provisioner) SupportsBlock(ctx context.Context) bool {
	if b, ok := p.delegate.(controller.BlockProvisioner); ok {
		return b.SupportsBlock(ctx)
	}
	return false
}

// ShouldDelete forwards to the delegate's DeletionGuard. Without one the
// lib deletes every volume it is responsible for, so true.
func (p *Provisioner) ShouldDelete(ctx context.Context, pv *v1.PersistentVolume) bool {
	if g, ok := p.delegate.(controller.DeletionGuard); ok {
		return g.ShouldDelete(ctx, pv)
	}
	return true
}
