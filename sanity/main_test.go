package sanity

import (
	"flag"
	"os"
	"testing"
)

// casesAtOnce is how many of the package's parallel cases run at once
// unless -parallel says otherwise. Each case mostly waits for its
// zonepath-sanity process and its driver, so more than GOMAXPROCS pays:
// on 2 cores the package took 72 s two at a time and 35 s eight at a time.
// (make test cannot pass -parallel to every package: the Ginkgo suites of
// others refuse it.)
const casesAtOnce = "8"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", casesAtOnce); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
