package snapshotter

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	listers "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// memberContent is the content the snapshot-controller makes for a group
// member: the group handle annotation, the source volume, and (in
// status) the member's snapshot handle; no nodeAffinity, no class.
func memberContent(name, volume, handle string) *crdv1.VolumeSnapshotContent {
	return &crdv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{utils.VolumeGroupSnapshotHandleAnnotation: "group"}},
		Spec: crdv1.VolumeSnapshotContentSpec{
			Driver: plugin.DefaultName, DeletionPolicy: crdv1.VolumeSnapshotContentDelete,
			Source: crdv1.VolumeSnapshotContentSource{VolumeHandle: &volume},
		},
		Status: &crdv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle},
	}
}

// asUnstructured is the member content as the dynamic client stores it,
// with nodeAffinity when given.
func asUnstructured(c *crdv1.VolumeSnapshotContent, nodeAffinity []any) *unstructured.Unstructured {
	u := contentObj(c.Name, nodeAffinity)
	u.Object["spec"].(map[string]any)["driver"] = c.Spec.Driver
	u.Object["spec"].(map[string]any)["source"] = map[string]any{"volumeHandle": *c.Spec.Source.VolumeHandle}
	delete(u.Object["spec"].(map[string]any), "volumeSnapshotClassName")
	return u
}

// TestGroupMembersGetNodeAffinity: against the real driver, a group of
// volumes in zone-a and zone-d: each member's content gets the zone its
// snapshot is usable from, as a single snapshot's content does, read with
// GetSnapshot or ListSnapshots; a content with nodeAffinity keeps it; a
// handle the driver does not know writes nothing; and a driver whose
// GetSnapshot drops accessible_topology (e2e mutant
// group-member-without-topology) leaves the members without.
func TestGroupMembersGetNodeAffinity(t *testing.T) {
	const dropTopology = `rules:
- name: drop
  match: {rpc: GetSnapshot}
  action: {mutate: {clear: [snapshot.accessible_topology]}}
`
	inA := []v1.TopologySelectorTerm{term(regionKey, "region-1", zoneKey, "zone-a")}
	inD := []v1.TopologySelectorTerm{term(regionKey, "region-2", zoneKey, "zone-d")}
	admin := []v1.TopologySelectorTerm{term(zoneKey, "zone-b")}
	for _, tc := range []struct {
		name        string
		getSnapshot bool
		faults      string
		want        map[string][]v1.TopologySelectorTerm
	}{
		{"GetSnapshot", true, "", map[string][]v1.TopologySelectorTerm{"member-a": inA, "member-d": inD, "member-admin": admin, "member-gone": nil}},
		{"ListSnapshots", false, "", map[string][]v1.TopologySelectorTerm{"member-a": inA, "member-d": inD, "member-admin": admin, "member-gone": nil}},
		{"GetSnapshot without topology", true, dropTopology, map[string][]v1.TopologySelectorTerm{"member-a": nil, "member-d": nil, "member-admin": admin, "member-gone": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, contents := groupOnZonepath(t, tc.faults)
			client := dynamicClient(asUnstructured(contents[0], nil), asUnstructured(contents[1], nil),
				asUnstructured(contents[2], terms(t, admin...)), asUnstructured(contents[3], nil))
			s := NewSnapshotter(SnapshotterOptions{Conn: conn, DriverName: plugin.DefaultName, Client: client, Accessibility: true, GetSnapshot: tc.getSnapshot})
			for _, c := range contents {
				if err := s.recordMember(context.Background(), c.Name, *c.Status.SnapshotHandle); err != nil {
					t.Fatalf("recordMember %s: %v", c.Name, err)
				}
			}
			for name, want := range tc.want {
				got, _ := client.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), name, metav1.GetOptions{})
				if affinity, _ := snapshotapi.NodeAffinity(got); !reflect.DeepEqual(affinity, want) {
					t.Errorf("%s: nodeAffinity = %v, want %v", name, affinity, want)
				}
			}
		})
	}
}

// groupOnZonepath cuts a group snapshot of volumes in zone-a and zone-d on
// the real driver and returns the member contents the snapshot-controller
// would make: one per member, one more of the zone-d member (for an
// admin's nodeAffinity) and one of a snapshot the driver does not have.
func groupOnZonepath(t *testing.T, faults string) (*grpc.ClientConn, []*crdv1.VolumeSnapshotContent) {
	t.Helper()
	conn, inA := startZonepath(t, zonepathConfig{faults: faults})
	ctx := context.Background()
	if caps, err := Probe(ctx, conn); err != nil || !caps.Groups || !caps.GetSnapshot {
		t.Fatalf("Probe of zonepath = %+v, %v; want Groups and GetSnapshot", caps, err)
	}
	zoneD := drivertest.Requisite(drivertest.Segment(regionKey, "region-2", zoneKey, "zone-d"))
	vol, err := csi.NewControllerClient(conn).CreateVolume(ctx, drivertest.VolumeRequest("in-d", 1<<20, zoneD))
	if err != nil {
		t.Fatal(err)
	}
	inD := vol.GetVolume().GetVolumeId()
	group, err := csi.NewGroupControllerClient(conn).CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "group", SourceVolumeIds: []string{inA, inD}})
	if err != nil {
		t.Fatal(err)
	}
	members := group.GetGroupSnapshot().GetSnapshots()
	return conn, []*crdv1.VolumeSnapshotContent{
		memberContent("member-a", inA, members[0].GetSnapshotId()),
		memberContent("member-d", inD, members[1].GetSnapshotId()),
		memberContent("member-admin", inD, members[1].GetSnapshotId()),
		memberContent("member-gone", inD, "zps-gone"),
	}
}

// TestMembersSelectsGroupMembers: only our driver's group member contents
// with a snapshot handle, not being deleted, are worked on; sync of one
// that is gone from the cache is done.
func TestMembersSelectsGroupMembers(t *testing.T) {
	m := &members{snap: &Snapshotter{driver: plugin.DefaultName}}
	now := metav1.NewTime(time.Now())
	tests := []struct {
		name   string
		change func(*crdv1.VolumeSnapshotContent)
		want   bool
	}{
		{"a member", func(*crdv1.VolumeSnapshotContent) {}, true},
		{"another driver's", func(c *crdv1.VolumeSnapshotContent) { c.Spec.Driver = "other.csi.dev" }, false},
		{"a single snapshot's", func(c *crdv1.VolumeSnapshotContent) { c.Annotations = nil }, false},
		{"no snapshot handle yet", func(c *crdv1.VolumeSnapshotContent) { c.Status = nil }, false},
		{"being deleted", func(c *crdv1.VolumeSnapshotContent) { c.DeletionTimestamp = &now }, false},
	}
	for _, tt := range tests {
		c := memberContent("c", "vol", "snap")
		tt.change(c)
		if got := m.isMember(c); got != tt.want {
			t.Errorf("%s: isMember = %v, want %v", tt.name, got, tt.want)
		}
	}
	recorded := memberContent("recorded", "vol", "snap")
	isReady := true
	recorded.Status.ReadyToUse = &isReady
	m.done.Store(recorded.Name, true)
	if m.wants(recorded) || !m.wants(memberContent("new", "vol", "snap")) {
		t.Errorf("wants: a recorded member is worked again, or a new one is not")
	}
	m.lister = listers.NewVolumeSnapshotContentLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	if err := m.sync(context.Background(), "gone"); err != nil {
		t.Errorf("sync of a content gone from the cache: %v", err)
	}
}

// TestMarkMemberReady: a member content whose status says readyToUse
// false (as upstream's snapshot-controller rewrites it from the group's
// first answer) gets readyToUse true once the driver says the member is
// ready_to_use, with GetSnapshot or ListSnapshots; while the driver says
// it is not (GetSnapshot's answer cleared by a fault rule), the content is left alone and the call fails, to be retried.
// wants picks a recorded member again when its content is not ready.
func TestMarkMemberReady(t *testing.T) {
	const notReady = `rules:
- name: not-ready
  match: {rpc: %s}
  action: {mutate: {clear: [%s]}}
`
	for _, tc := range []struct {
		name        string
		getSnapshot bool
		faults      string
		wantReady   bool
	}{
		{"GetSnapshot, ready", true, "", true},
		{"ListSnapshots, ready", false, "", true},
		{"GetSnapshot, not ready", true, fmt.Sprintf(notReady, "GetSnapshot", "snapshot.ready_to_use"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, contents := groupOnZonepath(t, tc.faults)
			member := contents[0]
			ready := false
			member.Status.ReadyToUse = &ready
			member.ResourceVersion = "7"
			obj := asUnstructured(member, nil)
			obj.SetResourceVersion("7")
			obj.Object["status"] = map[string]any{"snapshotHandle": *member.Status.SnapshotHandle, "readyToUse": false}
			client := dynamicClient(obj)
			s := NewSnapshotter(SnapshotterOptions{Conn: conn, DriverName: plugin.DefaultName, Client: client, GetSnapshot: tc.getSnapshot})
			err := s.markMemberReady(context.Background(), member)
			if tc.wantReady && err != nil {
				t.Fatalf("markMemberReady: %v", err)
			}
			if !tc.wantReady && err == nil {
				t.Fatalf("markMemberReady of a member the driver says is not ready: no error to retry on")
			}
			got, _ := client.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), member.Name, metav1.GetOptions{})
			if r, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse"); r != tc.wantReady {
				t.Errorf("status.readyToUse = %v, want %v (status %v)", r, tc.wantReady, got.Object["status"])
			}
		})
	}
	m := &members{snap: &Snapshotter{driver: plugin.DefaultName}}
	c := memberContent("recorded", "vol", "snap")
	m.done.Store(c.Name, true)
	ready, notReadyYet := true, false
	if c.Status.ReadyToUse = &notReadyYet; !m.wants(c) {
		t.Errorf("wants: a recorded member whose content is not ready is not worked again")
	}
	if c.Status.ReadyToUse = &ready; m.wants(c) {
		t.Errorf("wants: a recorded, ready member is worked again")
	}
}
