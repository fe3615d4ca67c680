package world_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/world"
)

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "valid.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte(worldDoc))
	f.Add([]byte(""))
	f.Add([]byte("regions: []"))
	f.Add([]byte("regions:\n- name: r\n  zones: [{name: z, capacity: 1Gi, snapshotQuota: 2, racks: [k]}]\nnodes: [{id: n, zone: z, rack: k}]\n"))
	f.Add([]byte("regions:\n- name: r\n  zones: [{name: z}, {name: z}]\n"))
	f.Add([]byte("regions:\n- name: a\n  zones: [{name: z}]\n- name: b\n  zones: [{name: z}]\nnodes: [{id: n, zone: z}]\n"))
	f.Add([]byte("keys: {region: x/y, zone: x/z}\nmaxVolumesPerNode: 3\nregions:\n- name: r\n  zones: [{name: z, capacity: \"-1\"}]\n"))
	f.Add([]byte("{\"regions\":[{\"name\":\"r\",\"zones\":[{\"name\":\"z\"}]}]}"))

	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := world.Parse(data)
		if err != nil {
			if topo != nil {
				t.Fatalf("Parse returned a topology with error %v", err)
			}
			return
		}
		if len(topo.Zones) == 0 {
			t.Fatalf("Parse succeeded with no zones")
		}
		seen := map[string]bool{}
		for i, z := range topo.Zones {
			id := z.ID()
			if seen[id] {
				t.Fatalf("zone ID %q appears twice", id)
			}
			seen[id] = true
			idx, ok := topo.Index(id)
			if !ok || idx != i {
				t.Fatalf("Index(%q) = %d, %v; want %d, true", id, idx, ok, i)
			}
			got, ok := topo.Zone(id)
			if !ok || got.ID() != id {
				t.Fatalf("Zone(%q) = %+v, %v", id, got, ok)
			}
			if z.SnapshotQuota < -1 {
				t.Fatalf("zone %s snapshot quota %d", id, z.SnapshotQuota)
			}
			// FindZone by full ID always resolves to the same zone.
			if fi, err := topo.FindZone(id); err != nil || fi != i {
				t.Fatalf("FindZone(%q) = %d, %v; want %d", id, fi, err, i)
			}
		}
		if topo.DefaultMaxVolumesPerNode() < 0 {
			t.Fatalf("negative DefaultMaxVolumesPerNode %d", topo.DefaultMaxVolumesPerNode())
		}
	})
}

// fuzzValues are the values segments are built from: valid names of the
// world topology, names it does not have, and invalid label values.
var (
	fuzzRegions = []string{"east", "west", "north", "East!"}
	fuzzZones   = []string{"a", "b", "c", "d", "zz", ""}
	fuzzRacks   = []string{"r1", "r2", "r3", "r9"}
)

// fuzzSegments decodes segments from data: a count byte, then per segment
// one byte whose bits pick the keys and one byte per key picking a value.
func fuzzSegments(data []byte) ([]*csi.Topology, []byte) {
	next := func() (byte, bool) {
		if len(data) == 0 {
			return 0, false
		}
		b := data[0]
		data = data[1:]
		return b, true
	}
	n, ok := next()
	if !ok {
		return nil, data
	}
	count := int(n % 6)
	if n == 0xff {
		count = world.MaxSegmentsPerRequirement + 1
	}
	var out []*csi.Topology
	for s := 0; s < count; s++ {
		mask, _ := next()
		m := map[string]string{}
		if mask&1 != 0 {
			v, _ := next()
			m[kR] = fuzzRegions[int(v)%len(fuzzRegions)]
		}
		if mask&2 != 0 {
			v, _ := next()
			m[kZ] = fuzzZones[int(v)%len(fuzzZones)]
		}
		if mask&4 != 0 {
			v, _ := next()
			m[kK] = fuzzRacks[int(v)%len(fuzzRacks)]
		}
		if mask&8 != 0 {
			m["example.com/other"] = "x"
		}
		out = append(out, &csi.Topology{Segments: m})
	}
	return out, data
}

func FuzzCandidates(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0})
	f.Add([]byte{1, 1, 1, 0})                   // requisite {region=west}, no preferred
	f.Add([]byte{2, 3, 0, 0, 1, 1, 1, 3, 1, 3}) // requisite {east/a} {region=west}; preferred {west/d}
	f.Add([]byte{0, 1, 5, 1, 1})                // preferred {region=west, rack=r2}: selects nothing
	f.Add([]byte{2, 3, 1, 1, 3, 0, 3})          // requisite {west/b} {east/d}: no zone at all
	f.Add([]byte{1, 4, 2, 1, 2, 1})             // requisite {rack=r3}; preferred {zone=b}
	f.Add([]byte{1, 8})                         // unknown key
	f.Add([]byte{1, 2, 5})                      // empty zone value
	f.Add([]byte{0xff})                         // too many segments
	f.Add([]byte{3, 1, 0, 1, 1, 1, 0, 2, 3, 2, 1, 1, 2, 1})

	topo := mustParse(f, worldDoc)

	f.Fuzz(func(t *testing.T, data []byte) {
		requisite, rest := fuzzSegments(data)
		preferred, _ := fuzzSegments(rest)
		req := &csi.TopologyRequirement{Requisite: requisite, Preferred: preferred}
		got, err := topo.Candidates(req)
		if err != nil {
			if got != nil {
				t.Fatalf("Candidates returned %v with error %v", got, err)
			}
			// A valid requisite fails only when it covers no zone.
			if errors.Is(err, world.ErrUnknownTopology) {
				for i := range topo.Zones {
					if topo.Covers(requisite, i) {
						t.Fatalf("%v, yet requisite %s covers zone %s", err, world.FormatSegments(requisite), topo.Zones[i].ID())
					}
				}
			}
			return
		}
		if len(requisite) > 0 && len(got) == 0 {
			t.Fatalf("requisite %s gave no candidates and no error", world.FormatSegments(requisite))
		}
		if len(requisite) == 0 && len(preferred) == 0 {
			if got != nil {
				t.Fatalf("empty requirement gave %v, want nil", got)
			}
			return
		}
		seen := map[int]bool{}
		for _, i := range got {
			if i < 0 || i >= len(topo.Zones) {
				t.Fatalf("zone index %d out of range in %v", i, got)
			}
			if seen[i] {
				t.Fatalf("zone index %d repeated in %v", i, got)
			}
			seen[i] = true
		}
		if len(requisite) > 0 {
			for _, i := range got {
				if !topo.Covers(requisite, i) {
					t.Fatalf("zone %s is not covered by requisite %s", topo.Zones[i].ID(), world.FormatSegments(requisite))
				}
			}
			// Every zone a requisite segment selects is a candidate.
			for i := range topo.Zones {
				if topo.Covers(requisite, i) && !seen[i] {
					t.Fatalf("zone %s covered by requisite %s is missing from %v", topo.Zones[i].ID(), world.FormatSegments(requisite), got)
				}
			}
		} else if len(got) != len(topo.Zones) {
			t.Fatalf("preferred-only requirement gave %v, want all %d zones", got, len(topo.Zones))
		}
		// Zones preferred (and allowed) come before every other zone.
		firstOther := len(got)
		for n, i := range got {
			if !topo.Covers(preferred, i) {
				firstOther = n
				break
			}
		}
		for _, i := range got[firstOther:] {
			if topo.Covers(preferred, i) {
				t.Fatalf("preferred zone %s after a non-preferred one in %v (preferred %s)", topo.Zones[i].ID(), got, world.FormatSegments(preferred))
			}
		}
	})
}
