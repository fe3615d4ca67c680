package plugin

import (
	"fmt"
	"regexp"
)

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
