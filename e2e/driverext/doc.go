// Package driverext reads the zonepath e2e suite's driver extension file:
// what a driver and its cluster can do that the upstream external-storage
// driver file (-storage.testdriver) cannot say. It is parsed strictly: an
// unknown or misspelt key is an error naming the key, where upstream's
// loader would silently ignore it and skip the specs it guards.
//
// It only reads and validates the file; it must not reach the cluster or
// import the driver's own packages, since the file describes any driver.
package driverext
