// Package spec reads the fake-zones cluster file and expands it into named
// regions, zones and nodes, and into the zonepath driver's topology file.
//
// It is pure: it must not read anything but the cluster file, and every bad
// value is an error naming its key.
package spec
