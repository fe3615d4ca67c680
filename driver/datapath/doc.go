// Package datapath copies volume data without ever leaving the volume.
//
// A filesystem volume is a directory tree its tenant owns and changes at
// will, also while the driver copies it: the tenant may replace any entry
// by a symlink to anywhere on the host (rename exchanges are atomic), swap
// a directory for a file, remove what was just listed. The driver runs as
// root beside its state, every other tenant's data and its credentials, so
// a copy that resolves a path twice can be made to read the host.
//
// So nothing here resolves a path below a volume's root. A walk opens the
// root once (O_NOFOLLOW) and every entry by one name relative to its
// parent's open descriptor, never following a symlink (fstatat with
// AT_SYMLINK_NOFOLLOW, then openat with O_NOFOLLOW); an entry's type comes
// from what was opened (fstat of the descriptor, checked against the same
// inode), never from the listing. A symlink is read (readlinkat) and
// copied as a symlink. What a tenant's swap can achieve is at worst a copy
// of its own data in another shape, or an entry left out, never data from
// outside. Writes go the same way, into a new volume nobody else can reach
// yet: every entry is created by one name below its parent's descriptor
// (mkdirat, openat with O_CREAT|O_EXCL|O_NOFOLLOW, symlinkat, mknodat), so
// an archive's names and link targets, which are the tenant's, cannot
// place anything outside it.
//
// What a copy keeps, skips and refuses is the table in the driver's
// README (section "Volume data"); fidelity_test.go checks both agree.
package datapath
