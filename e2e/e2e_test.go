package e2e

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"
	e2econfig "k8s.io/kubernetes/test/e2e/framework/config"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	"k8s.io/kubernetes/test/e2e/storage/testsuites"

	// Registers -storage.testdriver in e2econfig.Flags; its Set loads the
	// driver file and defines testsuites.CSISuites for the driver.
	_ "k8s.io/kubernetes/test/e2e/storage/external"

	"github.com/zonepath/zonepath/e2e/driverext"
)

const upstreamSuitesFlag = "zonepath.upstream-suites"

// upstreamCommonSpecs matches the files of the specs that the imported
// upstream packages register on their own (a Ginkgo file filter).
const upstreamCommonSpecs = `/test/e2e/common/`

var (
	extPath        string
	upstreamSuites bool
	// testDrivers counts -storage.testdriver flags, so that a run without
	// one fails instead of passing with no specs.
	testDrivers int
)

func TestMain(m *testing.M) {
	// -storage.testdriver defines the suites for its driver while the
	// flags are parsed (its flag.Value's Set does it), so the list of
	// suites must be final before flag.Parse. Whether upstream's own CSI
	// suites join ours is therefore read from os.Args first, wherever
	// -zonepath.upstream-suites stands on the command line; flag.Parse
	// reads it again below only so that it is a known flag.
	original := testsuites.CSISuites
	testsuites.CSISuites = []func() storageframework.TestSuite{initZonepathSuite}
	if preScanBool(os.Args[1:], upstreamSuitesFlag) {
		testsuites.CSISuites = append(testsuites.CSISuites, original...)
	}

	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	e2econfig.CopyFlags(e2econfig.Flags, flag.CommandLine)
	flag.StringVar(&extPath, "zonepath.driver-ext", "", "zonepath's driver extension file (YAML, strict): snapshot topology capability, feature gates, segments; see e2e/README.md")
	flag.BoolVar(&upstreamSuites, upstreamSuitesFlag, false, "also define upstream's CSI test suites (testsuites.CSISuites) for the driver; they need pods whose containers really run, so not on kwok nodes")
	countDrivers()
	flag.Parse()
	if extPath != "" {
		f, err := driverext.Load(extPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zonepath-e2e:", err)
			os.Exit(2)
		}
		ext = f
	}
	os.Exit(m.Run())
}

// countDrivers wraps -storage.testdriver to count its uses.
func countDrivers() {
	f := flag.CommandLine.Lookup("storage.testdriver")
	if f == nil {
		panic("k8s.io/kubernetes/test/e2e/storage/external no longer registers -storage.testdriver")
	}
	f.Value = countingValue{f.Value}
}

type countingValue struct{ flag.Value }

func (c countingValue) Set(s string) error {
	testDrivers++
	return c.Value.Set(s)
}

// preScanBool reads a boolean flag from args the way package flag would
// (-name, --name, -name=value), stopping at "--". It passes over words
// that are not flags rather than stopping there as package flag does,
// because it cannot tell the value of "--kubeconfig PATH" from the first
// argument: the Ginkgo CLI and kind scripts put flags with values first.
func preScanBool(args []string, name string) bool {
	value := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		n, v, hasValue := strings.Cut(a, "=")
		if n != name {
			continue
		}
		value = true
		if hasValue {
			b, err := strconv.ParseBool(v)
			value = err == nil && b
		}
	}
	return value
}

// selectedSpecs drops from a report the specs this run did not select:
// those Ginkgo skipped without running any of their nodes, because of
// --ginkgo.label-filter, --ginkgo.focus or --ginkgo.skip, or by file
// (upstream's common specs, upstreamCommonSpecs). Ginkgo records such a
// skip with an empty Failure. A spec that called Skip() itself (a missing
// capability or extension key) carries its reason in Failure.Message and
// stays: that is a real skip. Specs left unstarted by an interrupt or the
// suite timeout also have an empty Failure; the run fails then anyway.
func selectedSpecs(r ginkgo.Report) ginkgo.Report {
	var kept types.SpecReports
	for _, s := range r.SpecReports {
		if s.State == types.SpecStateSkipped && s.Failure.IsZero() {
			continue
		}
		kept = append(kept, s)
	}
	r.SpecReports = kept
	r.PreRunStats.TotalSpecs = len(kept.WithLeafNodeType(types.NodeTypeIt))
	return r
}

// TestE2E runs the Ginkgo suite. It runs only when the command line asks
// for it (--kubeconfig or -storage.testdriver): go test ./... in a shell
// whose KUBECONFIG names a real cluster must stay a unit-test run, not
// create objects there. Otherwise it skips, saying so, and no scenario
// counts as passed.
func TestE2E(t *testing.T) {
	if !askedForSuite(flag.CommandLine) {
		t.Skip("zonepath e2e suite NOT RUN: no --kubeconfig or -storage.testdriver on the command line; build bin/zonepath-e2e and run it against a cluster (e2e/README.md)")
	}
	if framework.TestContext.KubeConfig == "" {
		t.Fatal("no --kubeconfig (or KUBECONFIG) for the cluster to test (e2e/README.md)")
	}
	if testDrivers == 0 {
		t.Fatal("no -storage.testdriver file given: the suite needs the driver's description (e2e/README.md)")
	}
	// Expands the spec tree once (ginkgo.PreviewSpecs): our suite's
	// DefineTests runs and checks the extension file against the driver.
	framework.AfterReadingAllFlags(&framework.TestContext)
	if defined == 0 {
		t.Fatal("the driver file defined no zonepath specs: it needs a StorageClass section (FromName, FromFile or FromExistingClassName) for dynamic provisioning")
	}
	if extErr != nil {
		fmt.Fprintf(os.Stderr, "zonepath-e2e: driver ext %s: %v\n", extPath, extErr)
		os.Exit(2)
	}
	// A segment no schedulable node is in is a mistake in the file, said
	// once here rather than as the failure of every spec that uses it.
	if err := checkSegmentsInCluster(); err != nil {
		fmt.Fprintf(os.Stderr, "zonepath-e2e: driver ext %s: %v\n", extPath, err)
		os.Exit(2)
	}
	gomega.RegisterFailHandler(framework.Fail)
	suite, reporter := framework.CreateGinkgoConfig()
	// The storage test packages link in upstream's common e2e specs
	// (test/e2e/common/...), which register themselves at init. They are
	// not ours and mostly need real kubelets; everything this binary means
	// to run lives under upstream's "External Storage [Driver: ...]"
	// container. Skipped by where they are defined.
	suite.SkipFiles = append(suite.SkipFiles, upstreamCommonSpecs)
	// Ginkgo would list those hundreds of specs in the JUnit file as
	// skipped, and ours that the label filter or focus left out too; the
	// file lists the specs this run selected only, so that a skip there
	// means one of our specs lacked something, and the JUnit files of
	// several runs (make conformance) merge without false skips.
	if path := reporter.JUnitReport; path != "" {
		reporter.JUnitReport = ""
		ginkgo.ReportAfterSuite("zonepath JUnit report", func(r ginkgo.Report) {
			framework.ExpectNoError(reporters.GenerateJUnitReport(selectedSpecs(r), path))
		})
	}
	ginkgo.RunSpecs(t, "zonepath e2e", suite, reporter)
}

// askedForSuite reports whether the command line set a flag that only a
// suite run sets; KUBECONFIG from the environment does not count.
func askedForSuite(fs *flag.FlagSet) bool {
	asked := false
	fs.Visit(func(f *flag.Flag) {
		asked = asked || f.Name == "kubeconfig" || f.Name == "storage.testdriver"
	})
	return asked
}
