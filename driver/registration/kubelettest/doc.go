// Package kubelettest runs kubelet's own plugin manager (plugin watcher,
// reconciler, operation executor from k8s.io/kubernetes) on a directory,
// with a stand-in for kubelet's CSI plugin handler, so tests see exactly
// what kubelet does with a plugin's registration socket. Test code only:
// it pulls kubelet packages that the driver binary must not carry, so
// nothing but _test.go files may import it.
package kubelettest
