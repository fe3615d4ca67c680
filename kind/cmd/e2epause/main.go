package main

import (
	"fmt"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

func main() {
	fmt.Println(imageutils.GetPauseImageName())
}
