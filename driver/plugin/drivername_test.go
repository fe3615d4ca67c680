package plugin

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{name: "zonepath.csi.dev"},
		{name: "nocap.zonepath.csi.dev"},
		{name: "a"},
		{name: "Zone-Path.example.COM"},
		{name: strings.Repeat("a", 63)},
		{name: "", wantErr: "required"},
		{name: strings.Repeat("a", 64), wantErr: "more than 63"},
		{name: ".zonepath", wantErr: "domain name notation"},
		{name: "zonepath-", wantErr: "domain name notation"},
		{name: "zone path", wantErr: "domain name notation"},
		{name: "zone/path", wantErr: "domain name notation"},
	}
	for _, tc := range tests {
		err := ValidateName(tc.name)
		if tc.wantErr == "" && err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", tc.name, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ValidateName(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}
