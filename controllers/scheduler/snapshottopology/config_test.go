package snapshottopology

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// TestExampleConfig loads testdata/scheduler-config.yaml the way
// kube-scheduler loads --config, validates it, and builds its profile's
// framework (restricted to the plugins this test registers) to prove that
// the multiPoint entry runs SnapshotTopology at PreFilter and Filter.
func TestExampleConfig(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, "testdata/scheduler-config.yaml")
	if err != nil {
		t.Fatalf("loading: %v", err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("validating: %v", err)
	}
	if len(cfg.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1", len(cfg.Profiles))
	}
	registry := frameworkruntime.Registry{
		queuesort.Name:     queuesort.New,
		defaultbinder.Name: defaultbinder.New,
		Name: func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return newPlugin(ctx, h, newEnv(t).dyn, false)
		},
	}
	profile := onlyRegistered(cfg.Profiles[0], registry)
	client := fake.NewClientset()
	fw, err := frameworkruntime.NewFramework(ctx, registry, &profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)))
	if err != nil {
		t.Fatalf("building the profile's framework: %v", err)
	}
	plugins := fw.ListPlugins()
	for point, set := range map[string]config.PluginSet{"PreFilter": plugins.PreFilter, "Filter": plugins.Filter} {
		if !slices.ContainsFunc(set.Enabled, func(p config.Plugin) bool { return p.Name == Name }) {
			t.Errorf("%s not enabled at %s: %v", Name, point, set.Enabled)
		}
	}
}

// onlyRegistered drops, from the defaulted profile, the in-tree plugins
// the registry does not hold, leaving its multiPoint entries otherwise as
// loaded.
func onlyRegistered(p config.KubeSchedulerProfile, r frameworkruntime.Registry) config.KubeSchedulerProfile {
	keep := func(set config.PluginSet) config.PluginSet {
		set.Enabled = slices.DeleteFunc(slices.Clone(set.Enabled), func(pl config.Plugin) bool { return r[pl.Name] == nil })
		return set
	}
	plugins := &config.Plugins{MultiPoint: keep(p.Plugins.MultiPoint)}
	p.Plugins = plugins
	p.PluginConfig = nil
	return p
}
