package idempotency

import (
	"fmt"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestCasesWellFormed holds the table to what both runners assume, so a
// case added wrongly fails here rather than as a puzzling runner failure.
func TestCasesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Cases {
		if err := check(k); err != nil {
			t.Errorf("case %q: %v", k.ID, err)
		}
		if seen[k.ID] {
			t.Errorf("case %q appears twice", k.ID)
		}
		seen[k.ID] = true
	}
}

func check(k Case) error {
	switch {
	case k.ID == "" || k.Clause == "":
		return fmt.Errorf("needs an ID and a clause")
	case k.RPC != CreateSnapshot && k.RPC != CreateVolume:
		return fmt.Errorf("unknown RPC %q", k.RPC)
	case (k.First == nil) != (k.Existing == nil):
		return fmt.Errorf("First and Existing go together: an object exists or not")
	case k.Wide && (k.RPC != CreateSnapshot || len(k.First) < 2):
		return fmt.Errorf("only a snapshot asked for several places is wide")
	case slices.Contains(k.First, X) || slices.Contains(k.Existing, X) || slices.Contains(k.Existing, C):
		return fmt.Errorf("an existing object is never usable from C or X")
	case slices.Contains(k.Also, k.Want):
		return fmt.Errorf("Also repeats Want")
	case k.Documented && (k.Want != codes.AlreadyExists || !k.Repeated()):
		return fmt.Errorf("a documented choice is zonepath's ALREADY_EXISTS for an existing object")
	case k.Uses(B) && !k.Wide:
		return fmt.Errorf("only a wide snapshot has a second place B")
	case k.NewMutable && (k.RPC != CreateVolume || !k.Repeated()):
		return fmt.Errorf("new mutable parameters are a retried CreateVolume's")
	}
	for _, x := range k.First {
		if !slices.Contains(k.Existing, x) {
			return fmt.Errorf("the object is usable from where it was asked for: %s missing from Existing", x)
		}
	}
	return nil
}

// TestCheckCatchesMistakes proves check can fail.
func TestCheckCatchesMistakes(t *testing.T) {
	good := Cases[0]
	for name, bad := range map[string]func(*Case){
		"no clause":              func(k *Case) { k.Clause = "" },
		"existing without first": func(k *Case) { k.First = nil },
		"usable from X":          func(k *Case) { k.Existing = p(A, X) },
		"also repeats want":      func(k *Case) { k.Also = c(k.Want) },
		"B without wide":         func(k *Case) { k.Requisite = p(B) },
		"first not existing":     func(k *Case) { k.First = p(C) },
		"mutable on a snapshot":  func(k *Case) { k.NewMutable = true },
	} {
		k := good
		bad(&k)
		if check(k) == nil {
			t.Errorf("%s: check passed %+v", name, k)
		}
	}
}

func TestAccepts(t *testing.T) {
	byID := func(id string) Case {
		i := slices.IndexFunc(Cases, func(k Case) bool { return k.ID == id })
		if i < 0 {
			t.Fatalf("no case %s", id)
		}
		return Cases[i]
	}
	tests := []struct {
		id                string
		got, documented   codes.Code
		wantOK, wantOther bool
	}{
		{"snapshot/usable-beyond-requisite", codes.OK, codes.AlreadyExists, true, false},
		{"snapshot/usable-beyond-requisite", codes.AlreadyExists, codes.AlreadyExists, false, false},
		{"snapshot/requisite-outside", codes.AlreadyExists, codes.AlreadyExists, true, false},
		{"snapshot/requisite-outside", codes.OK, codes.OK, true, false},
		{"snapshot/requisite-outside", codes.AlreadyExists, codes.OK, false, false},
		{"snapshot/new-unknown-requisite", codes.InvalidArgument, codes.AlreadyExists, true, false},
		{"snapshot/new-unknown-requisite", codes.ResourceExhausted, codes.AlreadyExists, true, true},
		{"snapshot/new-unknown-requisite", codes.Internal, codes.AlreadyExists, false, false},
		{"snapshot/new-unknown-requisite", codes.OK, codes.AlreadyExists, false, false},
	}
	for _, tc := range tests {
		ok, other := byID(tc.id).Accepts(tc.got, tc.documented)
		if ok != tc.wantOK || other != tc.wantOther {
			t.Errorf("%s: Accepts(%v, documented %v) = %t, %t; want %t, %t", tc.id, tc.got, tc.documented, ok, other, tc.wantOK, tc.wantOther)
		}
	}
}

func TestRequirementMapsPlaces(t *testing.T) {
	seg := func(x Place) *csi.Topology { return &csi.Topology{Segments: map[string]string{"zone": string(x)}} }
	k := Case{Requisite: p(A, C), Preferred: p(C)}
	req := k.Requirement(seg)
	if len(req.GetRequisite()) != 2 || req.GetRequisite()[1].GetSegments()["zone"] != "C" || req.GetPreferred()[0].GetSegments()["zone"] != "C" {
		t.Fatalf("Requirement = %v", req)
	}
	if (Case{}).Requirement(seg) != nil {
		t.Fatal("a case without requirements made one")
	}
	if got := k.Request(); got != "requisite A, C; preferred C" {
		t.Errorf("Request() = %q", got)
	}
	if got := (Case{Requisite: p(A), NewMutable: true}).Request(); got != "requisite A; mutable_parameters the first request had not" {
		t.Errorf("Request() = %q", got)
	}
	if got := (Case{RPC: CreateVolume, First: p(A), Existing: p(A)}).Object(); got != "volume accessible from A" {
		t.Errorf("Object() = %q", got)
	}
}
