// Package datapath copies volume data without ever leaving the volume:
// snapshot archives, restores, clones, block images and the usage walk.
//
// A volume is a tree its tenant owns and may change during a copy, and
// the driver runs as root, so nothing here resolves a path below a
// volume's root. A walk opens the root once (O_NOFOLLOW) and looks at
// every entry by one name relative to its parent's open descriptor with
// O_PATH|O_NOFOLLOW, which pins the inode without opening it; it takes the
// entry's type from that descriptor, never from the listing, and reads
// only the inode it pinned, so that no rename or swap meanwhile can make
// it read another file or open a device or a FIFO. Writes go the same way into a new volume (mkdirat, openat with
// O_CREAT|O_EXCL|O_NOFOLLOW, symlinkat, mknodat), so an archive's names
// and link targets, which are the tenant's, cannot place anything outside.
//
// It must not take a path below a volume's root from anyone, follow a
// tenant's symlink, or know about the plugin, its state or CSI. Why, and
// what a copy keeps, skips and refuses: the driver README, "Volume data";
// fidelity_test.go checks that table and the code agree.
package datapath
