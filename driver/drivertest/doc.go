// Package drivertest is the driver-side test kit: it serves the real
// zonepath driver in-process on a unix socket and builds the CSI requests
// tests share, so that a test of the driver, of csi-sanity's extensions or
// of a sidecar against the real driver starts in three lines:
//
//	d := drivertest.Start(t, drivertest.Options{World: drivertest.World("")})
//	c := csi.NewControllerClient(d.Conn(t))
//	vol, err := c.CreateVolume(ctx, drivertest.VolumeRequest("v", 1<<30, nil))
//
// It is for tests only: nothing outside _test.go files may import it, and
// it must not grow assertions about driver behaviour (those belong to the
// tests); it only starts, connects, restarts and stops.
package drivertest
