// Package resizer is zonepath-resizer: the job of upstream csi-resizer
// (github.com/kubernetes-csi/external-resizer) for any CSI driver, for
// clusters that cannot pull csi-resizer's image. Its Go module is refused
// by the module proxy here, so this is a small controller on client-go
// speaking csi-resizer's protocol with Kubernetes.
//
// It owns: which claims are resized (bound claims of a CSI volume of the
// driver whose request exceeds their capacity); ControllerExpandVolume and
// the claim's resize status, conditions and events up to the hand-over to
// kubelet; failure recovery with backoff; and, for a plugin with
// MODIFY_VOLUME, a second loop (modify.go) applying VolumeAttributesClasses
// with ControllerModifyVolume.
//
// It must not shrink a volume, call NodeExpandVolume or record the final
// capacity after it (kubelet's), retry a claim marked infeasible until the
// user changes its request or class, or track pods; it makes no call for
// migrated in-tree volumes or volumes that name secrets. Status writes go
// through kube's pkg/volume/util helpers, as kubelet's do.
//
// The protocol step by step: controllers/README.md, "zonepath-resizer".
package resizer
