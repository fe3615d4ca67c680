// Command zonepath-sanity runs the upstream csi-sanity suite and the
// zonepath extensions (snapshot topology, RESOURCE_EXHAUSTED, attach
// limits) against a CSI driver's socket. It takes every flag csi-sanity
// takes (--csi.*), Ginkgo's (--ginkgo.*), and the extensions' (--zonepath.*).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"

	zpsanity "github.com/zonepath/zonepath/sanity"
)

// version is stamped at build time.
var version = "devel"

// BrokenUpstreamTest compares protobuf messages with gomega's Equal and so
// fails for every driver that returns accessible_topology; the extensions'
// "usable from its requisite" test checks the same rule correctly.
const BrokenUpstreamTest = "should succeed when creating a snapshot with accessibility requirements"

type options struct {
	upstream, runBroken, showVersion bool
}

func main() {
	cfg := sanity.NewTestConfig()
	registerCSIFlags(flag.CommandLine, &cfg)
	zp := zpsanity.RegisterFlags(flag.CommandLine)
	var o options
	flag.BoolVar(&o.upstream, "zonepath.upstream", true, "also run the upstream csi-sanity suite")
	flag.BoolVar(&o.runBroken, "zonepath.run-broken-upstream", false, "do not skip upstream's \""+BrokenUpstreamTest+"\", which fails every driver returning accessible_topology")
	flag.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	flag.Parse()
	if o.showVersion {
		fmt.Println("zonepath-sanity", version)
		return
	}
	zcfg, err := zp.Config()
	if err == nil {
		err = checkCSIFlags(&cfg)
	}
	if err == nil {
		err = zpsanity.SetConfig(zcfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonepath-sanity:", err)
		os.Exit(2)
	}
	os.Exit(run(cfg, o))
}

func run(cfg sanity.TestConfig, o options) int {
	klog.LogToStderr(false) // csi-sanity logs cleanups; keep them in Ginkgo's output
	klog.SetOutput(GinkgoWriter)
	suite, reporter := GinkgoConfiguration()
	if !o.runBroken {
		suite.SkipStrings = append(suite.SkipStrings, BrokenUpstreamTest)
	}
	if !o.upstream {
		suite.FocusStrings = append(suite.FocusStrings, `\[zonepath\]`)
	}
	sc := sanity.GinkgoTest(&cfg)
	defer sc.Finalize()
	ReportAfterSuite("zonepath-sanity summary", zpsanity.PrintSummary(os.Stdout))
	RegisterFailHandler(Fail)
	var t failRecorder
	if !RunSpecs(&t, "zonepath-sanity", suite, reporter) || t.failed {
		return 1
	}
	return 0
}

type failRecorder struct{ failed bool }

func (f *failRecorder) Fail() { f.failed = true }

// registerCSIFlags offers csi-sanity's command-line interface, so the
// command is a drop-in replacement in scripts and CI jobs.
func registerCSIFlags(fs *flag.FlagSet, c *sanity.TestConfig) {
	str := func(p *string, name, usage string) { fs.StringVar(p, "csi."+name, *p, usage) }
	dur := func(p *time.Duration, name, usage string) { fs.DurationVar(p, "csi."+name, *p, usage) }
	str(&c.Address, "endpoint", "CSI endpoint (required)")
	str(&c.ControllerAddress, "controllerendpoint", "CSI controller endpoint, when it differs from --csi.endpoint")
	str(&c.TargetPath, "mountdir", "mount point for NodePublish")
	str(&c.StagingPath, "stagingdir", "mount point for NodeStage")
	str(&c.CreateTargetPathCmd, "createmountpathcmd", "command creating the target path")
	str(&c.CreateStagingPathCmd, "createstagingpathcmd", "command creating the staging path")
	dur(&c.CreatePathCmdTimeout, "createpathcmdtimeout", "timeout of the path creation commands")
	str(&c.RemoveTargetPathCmd, "removemountpathcmd", "command removing the target path")
	str(&c.RemoveStagingPathCmd, "removestagingpathcmd", "command removing the staging path")
	dur(&c.RemovePathCmdTimeout, "removepathcmdtimeout", "timeout of the path removal commands")
	str(&c.CheckPathCmd, "checkpathcmd", "command checking a path; prints file, directory, not_found or other")
	dur(&c.CheckPathCmdTimeout, "checkpathcmdtimeout", "timeout of --csi.checkpathcmd")
	str(&c.SecretsFile, "secrets", "CSI secrets file")
	str(&c.TestVolumeAccessType, "testvolumeaccesstype", "access type of test volumes: mount or block")
	str(&c.TestInvalidListVolumesStartingToken, "testinvalidlistvolumesstartingtoken", "a ListVolumes starting_token the driver must reject")
	fs.Int64Var(&c.TestVolumeSize, "csi.testvolumesize", c.TestVolumeSize, "size of test volumes in bytes")
	fs.Int64Var(&c.TestVolumeExpandSize, "csi.testvolumeexpandsize", c.TestVolumeExpandSize, "size test volumes are expanded to")
	str(&c.TestVolumeParametersFile, "testvolumeparameters", "YAML file of volume parameters")
	str(&c.TestVolumeMutableParametersFile, "testvolumemutableparameters", "YAML file of mutable volume parameters")
	str(&c.TestSnapshotParametersFile, "testsnapshotparameters", "YAML file of snapshot parameters")
	fs.BoolVar(&c.TestNodeVolumeAttachLimit, "csi.testnodevolumeattachlimit", false, "run upstream's attach limit test")
	if junit := fs.Lookup("ginkgo.junit-report"); junit != nil {
		fs.Var(junit.Value, "csi.junitfile", "JUnit report file (same as --ginkgo.junit-report)")
	}
}

func checkCSIFlags(c *sanity.TestConfig) error {
	if c.Address == "" {
		return fmt.Errorf("--csi.endpoint is required")
	}
	if at := strings.ToLower(strings.TrimSpace(c.TestVolumeAccessType)); at != "mount" && at != "block" {
		return fmt.Errorf("--csi.testvolumeaccesstype must be mount or block, got %q", c.TestVolumeAccessType)
	}
	return nil
}
