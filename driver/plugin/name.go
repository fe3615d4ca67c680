package plugin

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxNameLength is the CSI limit on a plugin name (GetPluginInfoResponse).
const MaxNameLength = 63

// nameRE is CSI's "domain name notation": alphanumerics, '-' and '.',
// beginning and ending with an alphanumeric.
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

// Capabilities that DisableCapabilities can switch off.
const (
	CapControllerService     = "CONTROLLER_SERVICE"
	CapVolumeAccessibility   = "VOLUME_ACCESSIBILITY_CONSTRAINTS"
	CapSnapshotAccessibility = "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"
)

// DisableCapabilities switches off the named plugin capabilities, so that
// the driver plays one that lacks them. Blank names are ignored; an
// unknown name is an error naming it.
func (c *Config) DisableCapabilities(names []string) error {
	for _, n := range names {
		switch strings.TrimSpace(n) {
		case "":
		case CapControllerService:
			c.DisableControllerService = true
		case CapVolumeAccessibility:
			c.DisableVolumeAccessibility = true
		case CapSnapshotAccessibility:
			c.DisableSnapshotAccessibility = true
		default:
			return fmt.Errorf("unknown capability %q (known: %s, %s, %s)", n, CapControllerService, CapVolumeAccessibility, CapSnapshotAccessibility)
		}
	}
	return nil
}
