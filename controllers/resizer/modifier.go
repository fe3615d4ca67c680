package resizer

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
)

// Modifier changes a volume's mutable parameters on the storage side.
type Modifier interface {
	// Modify applies params, a VolumeAttributesClass's parameters, to pv.
	Modify(ctx context.Context, pv *v1.PersistentVolume, params map[string]string) error
}

type csiModifier struct{ conn *grpc.ClientConn }

// NewModifier is the Modifier of a plugin with the controller capability
// MODIFY_VOLUME on conn.
func NewModifier(conn *grpc.ClientConn) Modifier { return csiModifier{conn: conn} }

// Modify calls ControllerModifyVolume with the class's parameters as
// mutable_parameters, all of them: CSI 1.13, ControllerModifyVolume,
// "The CO SHOULD specify the intended values of all mutable parameters it
// intends to modify".
func (m csiModifier) Modify(ctx context.Context, pv *v1.PersistentVolume, params map[string]string) error {
	_, err := csi.NewControllerClient(m.conn).ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{
		VolumeId:          pv.Spec.CSI.VolumeHandle,
		MutableParameters: params,
	})
	return err
}
