package bootstrap

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
)

// Command is the part of a component's start that does not depend on what
// it does: its name and version, logging, feature gates and signals.
type Command struct {
	Name, Version string
	// Gate is what --feature-gates sets, and what decides contextual
	// logging; nil: the component has no --feature-gates.
	Gate    featuregate.MutableVersionedFeatureGate
	Logging *logsapi.LoggingConfiguration
	// gateErr is the failure to add the logging features to Gate.
	gateErr error
	// logOutput replaces stdout and stderr of the logger, for tests.
	logOutput io.Writer
}

// NewCommand is a Command with Kubernetes' default logging: text, -v=0.
// It adds logsapi's features (ContextualLogging, LoggingBetaOptions, ...)
// to gate, which logsapi reads when it applies the flags.
func NewCommand(name, version string, gate featuregate.MutableVersionedFeatureGate) *Command {
	c := &Command{Name: name, Version: version, Gate: gate, Logging: logsapi.NewLoggingConfiguration()}
	if gate != nil {
		c.gateErr = logsapi.AddFeatureGates(gate)
	}
	return c
}

// AddFlags registers --logging-format, -v, --vmodule and the other logsapi
// flags, and --feature-gates when the command has a gate.
func (c *Command) AddFlags(fs *pflag.FlagSet) {
	logsapi.AddFlags(c.Logging, fs)
	if c.Gate != nil {
		c.Gate.AddFlag(fs)
	}
}

// AddGoFlags is AddFlags for a command parsed with the standard flag
// package, which the driver keeps so that its single-dash flags still work.
func (c *Command) AddGoFlags(fs *flag.FlagSet) {
	logsapi.AddGoFlags(c.Logging, fs)
	if c.Gate != nil {
		pfs := pflag.NewFlagSet("", pflag.ContinueOnError)
		c.Gate.AddFlag(pfs)
		fs.Var(pfs.Lookup("feature-gates").Value, "feature-gates", pfs.Lookup("feature-gates").Usage)
	}
}

// Start applies the parsed logging flags and returns a context carrying
// the logger that SIGINT or SIGTERM cancels. Call stop when done; a second
// signal then kills the process as Go does by default.
func (c *Command) Start() (ctx context.Context, stop context.CancelFunc, err error) {
	if err := c.applyLogging(); err != nil {
		return nil, nil, err
	}
	logger := klog.Background().WithName(c.Name)
	ctx, stop = signal.NotifyContext(klog.NewContext(context.Background(), logger), syscall.SIGINT, syscall.SIGTERM)
	logger.Info("Starting", "version", c.Version)
	return ctx, stop, nil
}

func (c *Command) applyLogging() error {
	if c.gateErr != nil {
		return fmt.Errorf("logging feature gates: %w", c.gateErr)
	}
	var opts *logsapi.LoggingOptions
	if c.logOutput != nil {
		opts = &logsapi.LoggingOptions{ErrorStream: c.logOutput, InfoStream: c.logOutput}
	}
	var gate featuregate.FeatureGate
	if c.Gate != nil {
		gate = c.Gate
	}
	if err := logsapi.ValidateAndApplyWithOptions(c.Logging, opts, gate); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	return nil
}

// RunE is a component's whole life after its flags are parsed: start,
// run until the work ends or a signal arrives, log the error if there is
// one, flush the logs. For a cobra command's RunE.
func (c *Command) RunE(run func(ctx context.Context) error) error {
	ctx, stop, err := c.Start()
	if err == nil {
		err = run(ctx)
		stop()
	}
	if err != nil {
		klog.Background().WithName(c.Name).Error(err, "Exiting")
	}
	klog.Flush()
	return err
}

// Run is RunE for a main: it exits 1 when run failed.
func (c *Command) Run(run func(ctx context.Context) error) {
	if err := c.RunE(run); err != nil {
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}
