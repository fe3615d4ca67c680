// Package topology converts, validates and intersects the topology
// constraints of KEP-5943: CSI segment lists ([]*csi.Topology) and
// Kubernetes' []v1.TopologySelectorTerm (content nodeAffinity, class
// allowedTopologies). The snapshotter, provisioner and scheduler plugin all
// use it, so they get exactly the same answer.
//
// It owns: the lossless conversion both ways (FromCSI, Expand: one term
// per segment, never folded into a wider cartesian product); Intersect,
// which tells "no constraint" (an empty list) from "no node" (ok false);
// Requirement, a CSI requisite and preferred list; the validation of
// terms (errors wrap ErrInvalidTerm) and the bounds MaxSegments and
// MaxKeysPerTerm (errors wrap ErrTooManySegments).
//
// It is pure: it must not make API calls, read clocks or use randomness.
// It must not match nodes against terms (Kubernetes'
// MatchTopologySelectorTerms does, and the tests hold every conversion to
// it), import k8s.io/kubernetes, which the provisioner and snapshotter do
// not link, or model the driver's world (driver/world does).
//
// Why the conversion is lossless and who enforces which bound:
// controllers/README.md, "Topology terms".
package topology
