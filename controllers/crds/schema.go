package crds

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/zonepath/zonepath/controllers/topology"
)

// Descriptions of the added fields, written for `kubectl explain`.
const (
	nodeAffinityDescription = `nodeAffinity lists the node topologies from which this snapshot is accessible, ` +
		`so from which a volume can be restored from it. The CSI snapshotter sidecar fills it from the ` +
		`accessible_topology of the driver's CreateSnapshotResponse, one term per topology segment; terms ` +
		`are ORed and the expressions of one term ANDed, as in StorageClass allowedTopologies. Empty or ` +
		`absent means no restriction. The field is mutable, for snapshots replicated to more topologies ` +
		`and for corrections of pre-provisioned snapshots; a change affects only later scheduling and ` +
		`provisioning. Used only when the VolumeSnapshotTopology feature gate is enabled (KEP-5943).`
	allowedTopologiesDescription = `allowedTopologies restricts the node topologies from which snapshots ` +
		`created with this class may be accessible. The CSI snapshotter sidecar sends it to the driver as ` +
		`the accessibility_requirements of CreateSnapshot when the driver supports ` +
		`SNAPSHOT_ACCESSIBILITY_CONSTRAINTS. Terms are ORed and the expressions of one term ANDed, as in ` +
		`StorageClass allowedTopologies. Empty or absent means no restriction. Used only when the ` +
		`VolumeSnapshotTopology feature gate is enabled (KEP-5943).`
	termDescription = `A topology selector term: the topologies whose labels match every expression.`
	exprDescription = `A label expression: the topology label key must have one of the values.`
	keyDescription  = `The topology label key, for example topology.kubernetes.io/zone.`
	valDescription  = `The values the key may have; the expression matches when the label has one of them.`
)

// topologyTermsSchema is the structural schema of a []v1.TopologySelectorTerm
// with the given description. Lists are atomic and terms are atomic
// structs, the core API's markers for these types: a writer replaces the
// whole list, which is how the sidecar's merge patch writes it, and
// server-side apply never merges two owners' terms into a wider
// constraint than either wrote. maxItems is topology.MaxSegments, the
// bound every zonepath component already enforces on term lists, so a
// misbehaving writer cannot bloat the object beyond what consumers accept.
func topologyTermsSchema(description string) apiextensionsv1.JSONSchemaProps {
	maxItems := int64(topology.MaxSegments)
	return apiextensionsv1.JSONSchemaProps{
		Description: description,
		Type:        "array",
		MaxItems:    &maxItems,
		XListType:   ptr("atomic"),
		Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: termSchema()},
	}
}

func termSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Description: termDescription,
		Type:        "object",
		XMapType:    ptr("atomic"),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"matchLabelExpressions": {
				Description: "The expressions, ANDed.",
				Type:        "array",
				XListType:   ptr("atomic"),
				Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: expressionSchema()},
			},
		},
	}
}

func expressionSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Description: exprDescription,
		Type:        "object",
		Required:    []string{"key", "values"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"key": {Description: keyDescription, Type: "string"},
			"values": {
				Description: valDescription,
				Type:        "array",
				XListType:   ptr("atomic"),
				Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }
