// Command e2eimage prints the name the Kubernetes e2e framework gives one of
// its test images (imageutils.GetE2EImage), so that make images tags its
// offline stand-in exactly as the pinned framework will ask for it.
//
// Usage: go run ./hack/imagebuild/e2eimage BusyBox
package main
