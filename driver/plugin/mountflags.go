package plugin

import (
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SupportedMountFlags are the mount_flags (csi.proto
// VolumeCapability.MountVolume) a filesystem volume takes: the per-mount
// flags a bind mount carries (mount(2): a bind mount is remounted with
// MS_REMOUNT|MS_BIND to apply them; mount-utils does that). Filesystem
// options (a superblock's: uid=, size=, ...) do not apply to a bind mount
// of a directory, and ro/rw are the readonly fields' and the access
// mode's to say, so a flag outside this list is refused.
var SupportedMountFlags = []string{"noatime", "nodev", "nodiratime", "noexec", "nosuid", "relatime", "strictatime"}

// atimeFlags exclude one another: the kernel keeps one atime mode per mount.
var atimeFlags = []string{"noatime", "relatime", "strictatime"}

// mountFlags validates a capability's mount_flags and returns them sorted,
// without repeats, so that two publishes compare by the set they ask for.
// An unsupported flag is INVALID_ARGUMENT (General Error Table, "Invalid
// or unsupported field in the request"), before anything is mounted. The
// message names the flag by index only: mount_flags "MAY contain sensitive
// information", which the Plugin "MUST NOT leak" (csi.proto), and errors
// end up in events any user of the namespace reads.
func mountFlags(c *csi.VolumeCapability) ([]string, error) {
	given := c.GetMount().GetMountFlags()
	if len(given) == 0 {
		return nil, nil
	}
	flags := make([]string, 0, len(given))
	for i, f := range given {
		if !slices.Contains(SupportedMountFlags, f) {
			return nil, status.Errorf(codes.InvalidArgument, "volume_capability.mount.mount_flags[%d] is not supported; this driver takes %s", i, strings.Join(SupportedMountFlags, ", "))
		}
		flags = append(flags, f)
	}
	slices.Sort(flags)
	flags = slices.Compact(flags)
	atime := slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return !slices.Contains(atimeFlags, f) })
	if len(atime) > 1 {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability.mount.mount_flags: %s exclude one another", strings.Join(atime, " and "))
	}
	return flags, nil
}

// checkMountFlags validates the mount_flags of every capability; see
// mountFlags. CreateVolume: "If ANY of the specified volume capabilities
// are not supported by the SP, the call MUST return the appropriate gRPC
// error code", so a class with an unknown mount option fails at
// provisioning, not at the first pod.
func checkMountFlags(caps []*csi.VolumeCapability) error {
	for _, c := range caps {
		if _, err := mountFlags(c); err != nil {
			return err
		}
	}
	return nil
}
