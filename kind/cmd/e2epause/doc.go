// Command e2epause prints the pause image name the Kubernetes e2e framework
// uses (imageutils.GetPauseImageName), so the offline kind node image can
// carry that tag too: the e2e suite's pods would otherwise try to pull it.
package main
