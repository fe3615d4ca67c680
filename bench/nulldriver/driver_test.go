package nulldriver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

// TestPages: paging through the precomputed pages returns every entry
// once, in order, in pages of the page size, with zonepath's tokens.
func TestPages(t *testing.T) {
	for _, tt := range []struct{ objects, pageSize, pages int }{
		{0, 100, 1}, {1, 100, 1}, {100, 100, 1}, {101, 100, 2}, {250, 100, 3}, {250, 0, 1},
	} {
		t.Run(fmt.Sprintf("%d/%d", tt.objects, tt.pageSize), func(t *testing.T) {
			d := New(tt.objects, tt.objects, tt.pageSize)
			token, pages, seen := "", 0, 0
			for {
				resp, err := d.ListSnapshots(context.Background(), &csi.ListSnapshotsRequest{MaxEntries: int32(tt.pageSize), StartingToken: token})
				if err != nil {
					t.Fatal(err)
				}
				got := decoded(t, resp)
				for _, e := range got.Entries {
					if want := fmt.Sprintf("zps-%024x", seen); e.Snapshot.SnapshotId != want {
						t.Fatalf("entry %d is %s, want %s", seen, e.Snapshot.SnapshotId, want)
					}
					seen++
				}
				pages++
				if token = got.NextToken; token == "" {
					break
				}
				if !strings.HasPrefix(token, tokenPrefix) {
					t.Fatalf("token %q", token)
				}
			}
			if seen != tt.objects || pages != tt.pages {
				t.Errorf("%d entries in %d pages, want %d in %d", seen, pages, tt.objects, tt.pages)
			}
		})
	}
}

// decoded is resp as a client sees it: its entries are raw bytes until
// encoded and decoded again.
func decoded(t *testing.T, resp *csi.ListSnapshotsResponse) *csi.ListSnapshotsResponse {
	t.Helper()
	wire, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	out := &csi.ListSnapshotsResponse{}
	if err := proto.Unmarshal(wire, out); err != nil {
		t.Fatal(err)
	}
	return out
}
