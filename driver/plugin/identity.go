package plugin

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// GetPluginInfo implements csi.IdentityServer.
func (p *Plugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: p.cfg.Name, VendorVersion: p.cfg.Version}, nil
}

// MaxNameLength is the CSI limit on a plugin name (GetPluginInfoResponse).
const MaxNameLength = 63

// nameRE is CSI's "domain name notation": alphanumerics, '-' and '.',
// beginning and ending with an alphanumeric. Not validation's
// IsDNS1123Subdomain: CSI allows upper case and caps the length at 63.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-.a-zA-Z0-9]*[a-zA-Z0-9])?$`)

// ValidateName checks a driver name the way the CSI spec defines it for
// GetPluginInfo: at most 63 characters, alphanumerics with '-' and '.'
// between, beginning and ending with an alphanumeric. A driver that
// reported a bad name would be refused only later, by kubelet's plugin
// registration or the CSIDriver object, far from the flag that caused it.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a CSI driver name is required")
	case len(name) > MaxNameLength:
		return fmt.Errorf("CSI driver name %q has %d characters, more than %d", name, len(name), MaxNameLength)
	case !nameRE.MatchString(name):
		return fmt.Errorf("CSI driver name %q is not in domain name notation: letters, digits, '-' and '.', beginning and ending with a letter or digit", name)
	}
	return nil
}

// Probe implements csi.IdentityServer: the plugin is ready once New
// returned, since the state is loaded there.
func (p *Plugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// GetPluginCapabilities implements csi.IdentityServer. Each capability can
// be switched off so the driver can play one that lacks it.
func (p *Plugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	var services []csi.PluginCapability_Service_Type
	if p.controllerService() {
		services = append(services, csi.PluginCapability_Service_CONTROLLER_SERVICE)
	}
	if p.volumeAccessibility() {
		services = append(services, csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS)
	}
	if p.snapshotAccessibility() {
		services = append(services, csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS)
	}
	if p.groupController() {
		services = append(services, csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE)
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: wrapAll(services, func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	})}, nil
}

// wrapAll wraps each capability type in its message: the three
// Get*Capabilities responses differ only in the wrapping.
func wrapAll[T, M any](types []T, wrap func(T) M) []M {
	out := make([]M, 0, len(types))
	for _, t := range types {
		out = append(out, wrap(t))
	}
	return out
}

func (p *Plugin) controllerService() bool {
	return p.cfg.ServeController && !p.cfg.DisableControllerService
}

// volumeAccessibility: the plugin advertises
// VOLUME_ACCESSIBILITY_CONSTRAINTS.
func (p *Plugin) volumeAccessibility() bool { return !p.cfg.DisableVolumeAccessibility }

// snapshotAccessibility: the plugin advertises
// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS. Snapshot topology is only meaningful
// when the plugin creates snapshots, so it is off without the controller
// service.
func (p *Plugin) snapshotAccessibility() bool {
	return p.controllerService() && !p.cfg.DisableSnapshotAccessibility
}

// groupController: group snapshots are cut by the controller, so the
// service is off without it.
func (p *Plugin) groupController() bool {
	return p.controllerService() && !p.cfg.DisableGroupController
}

// Capabilities that DisableCapabilities can switch off.
const (
	CapControllerService     = "CONTROLLER_SERVICE"
	CapVolumeAccessibility   = "VOLUME_ACCESSIBILITY_CONSTRAINTS"
	CapSnapshotAccessibility = "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"
	CapGroupController       = "GROUP_CONTROLLER_SERVICE"
	CapVolumeHealth          = "GET_VOLUME_HEALTH"
	CapListVolumeHealth      = "LIST_VOLUME_HEALTH"
	CapStorageHealth         = "GET_STORAGE_HEALTH"
)

// capSwitch is a capability DisableCapabilities knows and the Config
// field that switches it off.
type capSwitch struct {
	name string
	off  *bool
}

// capSwitches lists them in the order an unknown name's error does.
func (c *Config) capSwitches() []capSwitch {
	return []capSwitch{
		{CapControllerService, &c.DisableControllerService},
		{CapVolumeAccessibility, &c.DisableVolumeAccessibility},
		{CapSnapshotAccessibility, &c.DisableSnapshotAccessibility},
		{CapModifyVolume, &c.DisableModifyVolume},
		{CapGroupController, &c.DisableGroupController},
		{CapVolumeHealth, &c.DisableVolumeHealth},
		{CapListVolumeHealth, &c.DisableListVolumeHealth},
		{CapStorageHealth, &c.DisableStorageHealth},
	}
}

// DisableCapabilities switches off the named plugin or controller
// capabilities, so that the driver plays one that lacks them. Blank names
// are ignored; an unknown name is an error naming it.
func (c *Config) DisableCapabilities(names []string) error {
	switches := c.capSwitches()
	for _, n := range names {
		name := strings.TrimSpace(n)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(switches, func(s capSwitch) bool { return s.name == name })
		if i < 0 {
			known := make([]string, len(switches))
			for j, s := range switches {
				known[j] = s.name
			}
			return fmt.Errorf("unknown capability %q (known: %s)", n, strings.Join(known, ", "))
		}
		*switches[i].off = true
	}
	return nil
}
