package csitest

import (
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestCallsAnswers: queued errors first, in order (nil succeeds), then
// Always; every request is kept, as a copy.
func TestCallsAnswers(t *testing.T) {
	first, always := errors.New("first"), errors.New("always")
	c := &Calls[*csi.CreateSnapshotRequest]{Queue: []error{first, nil}, Always: always}
	req := &csi.CreateSnapshotRequest{Name: "a"}
	want := []error{first, nil, always, nil}
	for i, w := range want {
		if i == 3 {
			c.Answer(nil)
		}
		if got := c.Take(req); got != w {
			t.Errorf("call %d answered %v, want %v", i, got, w)
		}
	}
	req.Name = "changed"
	if reqs, times := c.Requests(), c.Times(); len(reqs) != 4 || len(times) != 4 || reqs[0].GetName() != "a" {
		t.Errorf("kept %d requests (first %q) and %d times, want 4 copies of %q", len(reqs), reqs[0].GetName(), len(times), "a")
	}
}
