// Command e2eimage prints the names the Kubernetes e2e framework gives its
// test images (imageutils.GetE2EImage), so that make images tags its
// offline stand-ins exactly as the pinned framework will ask for them.
//
// Usage: go run ./hack/cmd/e2eimage            (ID=name:tag for every known image)
//
//	go run ./hack/cmd/e2eimage BusyBox    (name:tag of the images named)
package main
