package main

import (
	"fmt"
	"os"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// known maps the names accepted on the command line to the framework's IDs;
// add one here when another stand-in is needed.
var known = map[string]imageutils.ImageID{
	"BusyBox": imageutils.BusyBox,
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: e2eimage BusyBox")
		os.Exit(2)
	}
	id, ok := known[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "e2eimage: unknown image %q (known: BusyBox)\n", os.Args[1])
		os.Exit(2)
	}
	fmt.Println(imageutils.GetE2EImage(id))
}
