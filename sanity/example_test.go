package sanity_test

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	zpsanity "github.com/zonepath/zonepath/sanity"
)

// A vendor describes in code what the driver can satisfy; the extension
// tests read it when they run.
func ExampleSetConfig() {
	err := zpsanity.SetConfig(zpsanity.Config{
		Segments: []map[string]string{
			{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "a"},
			{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "b"},
		},
		ExhaustedSegment: map[string]string{"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "full"},
		ExhaustAfter:     2,
		AttachLimit:      16,
	})
	fmt.Println("SetConfig:", err)
	// Output: SetConfig: <nil>
}

// Validate names the setting that is wrong; SetConfig and LoadConfig
// call it, so a test run never starts with a contradictory configuration.
func ExampleConfig_Validate() {
	for _, c := range []zpsanity.Config{
		{ExhaustAfter: 2},
		{IncompatibleRequirements: "Maybe"},
		{Segments: []map[string]string{{"zone": "a"}, {}}},
	} {
		fmt.Println(c.Validate())
	}
	// Output:
	// exhaustAfter needs exhaustedSegment
	// incompatibleRequirements must be AlreadyExists or OK, got "Maybe"
	// segments[1] is empty
}

// LoadConfig reads the YAML file --zonepath.config takes; unknown keys are
// errors, so a misspelt key does not silently skip a test.
func ExampleLoadConfig() {
	c, err := zpsanity.LoadConfig("testdata/zonepath.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(c.Segments), "segments; exhausted:", c.ExhaustedSegment["topology.kubernetes.io/zone"], "after", c.ExhaustAfter, "snapshots; attach limit", c.AttachLimit)
	// Output: 2 segments; exhausted: zone-c after 2 snapshots; attach limit 3
}

// A command of your own offers the same --zonepath.* flags as
// bin/zonepath-sanity: register them, parse, then apply the result.
func ExampleRegisterFlags() {
	fs := flag.NewFlagSet("my-sanity", flag.ContinueOnError)
	flags := zpsanity.RegisterFlags(fs)
	err := fs.Parse([]string{
		"--zonepath.segment", "topology.kubernetes.io/zone=a",
		"--zonepath.segment", "topology.kubernetes.io/zone=b",
		"--zonepath.exhausted-segment", "topology.kubernetes.io/zone=full",
		"--zonepath.lift-command", "my-quota raise",
		"--zonepath.lift-timeout", "1m",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := flags.Config()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Segments, c.LiftCommand, c.LiftTimeout.Duration)
	if err := zpsanity.SetConfig(c); err != nil {
		fmt.Println(err)
	}
	// Output: [map[topology.kubernetes.io/zone:a] map[topology.kubernetes.io/zone:b]] my-quota raise 1m0s
}

// A malformed segment is rejected with the flag's value.
func ExampleFlags_Config() {
	fs := flag.NewFlagSet("my-sanity", flag.ContinueOnError)
	flags := zpsanity.RegisterFlags(fs)
	if err := fs.Parse([]string{"--zonepath.exhausted-segment", "zone"}); err != nil {
		fmt.Println(err)
		return
	}
	_, err := flags.Config()
	fmt.Println(err)
	// Output: --zonepath.exhausted-segment: "zone" is not key=value,key=value
}

// PrintSummary is a ReportAfterSuite body:
//
//	var _ = ginkgo.ReportAfterSuite("zonepath-sanity summary", zpsanity.PrintSummary(os.Stdout))
//
// Here it prints the summary of a hand-made report: one failed extension
// test, one skipped, one upstream test passed.
func ExamplePrintSummary() {
	spec := func(state types.SpecState, text, failure string, labels ...string) types.SpecReport {
		return types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: text, LeafNodeLabels: labels,
			State: state, Failure: types.Failure{Message: failure}, RunTime: time.Millisecond,
		}
	}
	zpsanity.PrintSummary(os.Stdout)(types.Report{SpecReports: types.SpecReports{
		spec(types.SpecStateFailed, "makes a snapshot usable from its requisite", "CreateSnapshot ignored requisite\nmore detail", "snapshot-topology", "rule:requisite"),
		spec(types.SpecStateSkipped, "honours max_volumes_per_node", "the node reports no max_volumes_per_node", "attach-limit", "rule:attach-limit"),
		spec(types.SpecStatePassed, "should return appropriate values", ""),
	}})
	// Output:
	// zonepath-sanity summary
	// FAIL [rule:requisite] makes a snapshot usable from its requisite
	//      CreateSnapshot ignored requisite
	// SKIP [rule:attach-limit] honours max_volumes_per_node
	//      the node reports no max_volumes_per_node
	// 1 passed, 1 failed, 1 skipped
}
