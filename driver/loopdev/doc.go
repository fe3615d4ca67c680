// Package loopdev attaches regular files to loop block devices, finds the
// loop device backing a file and detaches it, over the kernel's loop
// ioctls (x/sys/unix): no losetup binary, so the driver image needs
// nothing but the driver.
//
// A backing file is always handed over as an open descriptor, never as a
// path: the caller opens it where it knows what it opens (the driver's
// data directory, O_NOFOLLOW), and the kernel attaches exactly that
// inode. The device backing a file is found by the file's device and inode
// as LOOP_GET_STATUS64 reports them, never by comparing path strings,
// which a rename or a bind mount makes lie, and by its owner, a name the
// caller gives (the driver: its node), kept in the device's status: one
// host's kernel may serve several nodes (kind), each with its own device.
//
// Devices are attached without LO_FLAGS_AUTOCLEAR: the driver detaches
// them explicitly when a volume is unstaged, and a device must survive the
// driver's restart while a pod holds it. Detaching a device that is not
// attached succeeds, so callers can retry.
package loopdev
