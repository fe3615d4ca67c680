package crds

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	labelvalidation "k8s.io/apimachinery/pkg/api/validate/content"

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
)

// Descriptions that state the limits, from the constants that set them.
var (
	listLimits = fmt.Sprintf(` At most %d terms, which together may admit at most %d topology segments `+
		`(per term, the product of its expressions' value counts).`, topology.MaxSegments, topology.MaxSegments)
	exprsDescription = fmt.Sprintf(`The expressions, ANDed: at least one and at most %d, each on a different key.`,
		topology.MaxKeysPerTerm)
	valDescription = fmt.Sprintf(`The values the key may have, at least one and at most %d non-empty label `+
		`values; the expression matches when the label has one of them.`, topology.MaxSegments)
)

// The validation below mirrors what the API server checks in StorageClass
// allowedTopologies (k8s.io/kubernetes pkg/apis/storage/validation
// validateAllowedTopologies, which calls pkg/apis/core/validation
// ValidateTopologySelectorTerm): every expression has values, a key
// appears once per term, keys are label keys. It adds what every zonepath
// component refuses (controllers/topology Validate): a term without
// expressions (Kubernetes keeps it valid "in case this field becomes
// optional", then matches no node with it), values that are not non-empty
// label values (CSI segment values), and controllers/topology's bounds.
// So a term list the API server admits is one the snapshotter, provisioner
// and scheduler plugin all read the same way, instead of one they refuse
// long after the write; TestSchemaAgreesWithTopologyValidate holds the two
// to that. Duplicate values and duplicate terms, which Kubernetes rejects
// in StorageClass, stay valid: every consumer reads them as sets. The one
// bound left to the controllers is the size of a term's cross product
// (MaxSegments segments), which a schema cannot compute cheaply.

// Rule messages, shown by the API server after the field path.
const (
	uniqueKeysMessage = "each key may appear in one expression of a term: " +
		"two expressions on one key would both have to hold (Kubernetes rejects them in StorageClass allowedTopologies)"
	labelKeyPrefixMessage = "the prefix of a label key, before the /, must be a DNS subdomain of at most 253 characters"
)

// Label key and value limits (k8s.io/apimachinery validation): a key is an
// optional DNS subdomain prefix, "/" and a name of at most 63 characters;
// a value is at most 63 characters, alphanumeric at both ends. CSI asks
// the same of topology segment values and forbids empty ones.
const (
	labelKeyMaxLength   = labelvalidation.DNS1123SubdomainMaxLength + 1 + 63
	labelValueMaxLength = labelvalidation.LabelValueMaxLength
	labelKeyPattern     = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?` + labelNamePattern + `$`
	labelValuePattern   = `^` + labelNamePattern + `$` // a non-empty value has a key name's form
	labelNamePattern    = `([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]`
)

// topologyTermsSchema is the structural schema of a []v1.TopologySelectorTerm
// with the given description. Lists are atomic and terms are atomic
// structs, the core API's markers for these types: a writer replaces the
// whole list, which is how the sidecar's merge patch writes it, and
// server-side apply never merges two owners' terms into a wider
// constraint than either wrote. maxItems is topology.MaxSegments, the
// bound every zonepath component already enforces on term lists, so a
// misbehaving writer cannot bloat the object beyond what consumers accept.
// An empty list stays valid: it means no constraint.
func topologyTermsSchema(description string) apiextensionsv1.JSONSchemaProps {
	return atomicList(description+listLimits, 0, topology.MaxSegments, termSchema())
}

// atomicList is the schema of a list a writer replaces whole, of minItems
// (0: no lower bound) to maxItems items.
func atomicList(description string, minItems, maxItems int, items *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s := apiextensionsv1.JSONSchemaProps{
		Description: description,
		Type:        "array",
		MaxItems:    ptr(int64(maxItems)),
		XListType:   ptr("atomic"),
		Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items},
	}
	if minItems > 0 {
		s.MinItems = ptr(int64(minItems))
	}
	return s
}

func termSchema() *apiextensionsv1.JSONSchemaProps {
	exprs := atomicList(exprsDescription, 1, topology.MaxKeysPerTerm, expressionSchema())
	exprs.XValidations = apiextensionsv1.ValidationRules{{
		Rule:    "self.all(e, self.exists_one(f, f.key == e.key))",
		Message: uniqueKeysMessage,
	}}
	return &apiextensionsv1.JSONSchemaProps{
		Description: termDescription,
		Type:        "object",
		XMapType:    ptr("atomic"),
		Required:    []string{"matchLabelExpressions"},
		Properties:  map[string]apiextensionsv1.JSONSchemaProps{"matchLabelExpressions": exprs},
	}
}

func expressionSchema() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Description: exprDescription,
		Type:        "object",
		Required:    []string{"key", "values"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"key": {
				Description: keyDescription,
				Type:        "string",
				MaxLength:   ptr(int64(labelKeyMaxLength)),
				Pattern:     labelKeyPattern,
				XValidations: apiextensionsv1.ValidationRules{{
					Rule:    fmt.Sprintf("self.indexOf('/') <= %d", labelvalidation.DNS1123SubdomainMaxLength),
					Message: labelKeyPrefixMessage,
				}},
			},
			"values": atomicList(valDescription, 1, topology.MaxSegments, &apiextensionsv1.JSONSchemaProps{
				Type:      "string",
				MaxLength: ptr(int64(labelValueMaxLength)),
				Pattern:   labelValuePattern,
			}),
		},
	}
}

func ptr[T any](v T) *T { return &v }
