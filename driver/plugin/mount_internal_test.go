package plugin

import "testing"

// TestMountAttributesCoverOptions: every option a bind may carry, ro and
// each supported mount_flags entry, has a mount_setattr(2) attribute, so
// bindWithAttributes never refuses what mountFlags accepted.
func TestMountAttributesCoverOptions(t *testing.T) {
	for _, o := range append([]string{"ro"}, SupportedMountFlags...) {
		if _, err := mountAttributes([]string{o}); err != nil {
			t.Errorf("%s: %v", o, err)
		}
	}
	if _, err := mountAttributes([]string{"uid=0"}); err == nil {
		t.Error("uid=0 has a mount attribute; want an error: it is no per-mount flag")
	}
}
