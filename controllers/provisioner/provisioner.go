package provisioner

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// Provisioner is the upstream CSI provisioner with one change: for an
// Immediate-binding claim restored from a VolumeSnapshot whose content has
// nodeAffinity, the StorageClass it sees is narrowed to the intersection
// (see Provision). Everything else is the delegate's.
type Provisioner struct {
	delegate controller.Provisioner
	lookup   Lookup
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
// controller.NewCSIProvisioner returns. lookup reads VolumeSnapshots and
// their contents (APILookup in production); it is only used while the
// VolumeSnapshotTopology gate is on, so it may be nil when the gate is off.
func New(delegate controller.Provisioner, lookup Lookup) *Provisioner {
	return &Provisioner{delegate: delegate, lookup: lookup}
}

// Provision narrows the StorageClass where KEP-5943 asks for it and hands
// the claim to the delegate; see narrow for when that happens.
//
// When narrowing fails (an empty intersection, an unbound snapshot, a
// content not cut yet or unreadable) no CSI call has been made, so the
// state is ProvisioningNoChange: the lib keeps whatever it knew from an
// earlier attempt (a CreateVolume that timed out may still run in the
// driver and must stay tracked), and on a first attempt that means
// "finished". That is how upstream reports its own failures before
// CreateVolume. The lib requeues every such error with exponential backoff
// (--retry-interval-start .. --retry-interval-max) and emits a
// ProvisioningFailed event each time, so a content whose nodeAffinity is
// later corrected, or a snapshot bound or cut later, is picked up without
// a user touching the claim.
func (p *Provisioner) Provision(ctx context.Context, options controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	narrowed, err := p.narrow(ctx, options)
	if err != nil {
		return nil, controller.ProvisioningNoChange, err
	}
	return p.delegate.Provision(ctx, narrowed)
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
