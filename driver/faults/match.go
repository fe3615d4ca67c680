package faults

import (
	"path"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Request fields holding object names, looked up by proto name on every
// request type so that new CSI RPCs are covered without per-type code.
var (
	nameFields          = []protoreflect.Name{"name", "volume_id", "snapshot_id", "source_volume_id"}
	contentSourceFields = []protoreflect.Name{"snapshot_id", "volume_id"}
)

const contentSourceField protoreflect.Name = "volume_content_source"

// matches reports whether the call is selected by the rule's match block;
// the nth/count window is applied separately by the caller, which owns the
// counters.
func (r *rule) matches(fullMethod string, req any, nodeSegment map[string]string) bool {
	if r.outage || !r.rpc.matches(fullMethod) {
		return false
	}
	if len(r.segment) > 0 && !segmentMatches(r.segment, requestSegments(req, nodeSegment)) {
		return false
	}
	if r.nameGlob != "" && !slices.ContainsFunc(objectNames(req), r.nameMatches) {
		return false
	}
	return true
}

func (r *rule) nameMatches(name string) bool {
	ok, _ := path.Match(r.nameGlob, name)
	return ok
}

// inWindow reports whether the hit-th matching call is one the rule fires on.
func (r *rule) inWindow(hit int) bool {
	return hit >= r.nth && (r.count == 0 || hit < r.nth+r.count)
}

type topologyRequest interface {
	GetAccessibilityRequirements() *csi.TopologyRequirement
}

// requestSegments returns the segments a call concerns: the requested
// topology when the request carries one (CreateVolume, CreateSnapshot),
// otherwise the segment of the node this driver instance runs on.
func requestSegments(req any, node map[string]string) []map[string]string {
	tr, ok := req.(topologyRequest)
	if !ok || tr.GetAccessibilityRequirements() == nil {
		return []map[string]string{node}
	}
	reqs := tr.GetAccessibilityRequirements()
	var segs []map[string]string
	for _, t := range slices.Concat(reqs.GetRequisite(), reqs.GetPreferred()) {
		segs = append(segs, t.GetSegments())
	}
	return segs
}

// segmentMatches reports whether a single segment contains every wanted
// key/value; mixing keys across segments would match topologies that do
// not exist.
func segmentMatches(want map[string]string, segs []map[string]string) bool {
	return slices.ContainsFunc(segs, func(seg map[string]string) bool { return containsAll(seg, want) })
}

// containsAll reports whether seg holds every pair of want.
func containsAll(seg, want map[string]string) bool {
	for k, v := range want {
		if got, ok := seg[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// objectNames collects the non-empty object names of a request.
func objectNames(req any) []string {
	msg, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	m := msg.ProtoReflect()
	names := stringFields(m, nameFields)
	fd := m.Descriptor().Fields().ByName(contentSourceField)
	if fd == nil || fd.Message() == nil || fd.IsList() || fd.IsMap() || !m.Has(fd) {
		return names
	}
	// The content source is a oneof of messages (snapshot, volume); look
	// inside whichever is set.
	m.Get(fd).Message().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			names = append(names, stringFields(v.Message(), contentSourceFields)...)
		}
		return true
	})
	return names
}

func stringFields(m protoreflect.Message, fields []protoreflect.Name) []string {
	var out []string
	for _, name := range fields {
		fd := m.Descriptor().Fields().ByName(name)
		if fd != nil && fd.Kind() == protoreflect.StringKind && !fd.IsList() && m.Has(fd) {
			out = append(out, m.Get(fd).String())
		}
	}
	return out
}
