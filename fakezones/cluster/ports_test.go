package cluster

import "testing"

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"32768\t60999\n", 32768, 60999, true},
		{"1024 65535", 1024, 65535, true},
		{"60999 32768", 0, 0, false},
		{"32768", 0, 0, false},
		{"a b", 0, 0, false},
	} {
		lo, hi, ok := parseRange(tc.in)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("parseRange(%q) = %d, %d, %v; want %d, %d, %v", tc.in, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

func TestPickPortsOutsideEphemeralRange(t *testing.T) {
	taken := map[int]bool{20000: true, 20001: true}
	for _, tc := range []struct {
		name   string
		lo, hi int
		free   func(int) bool
		err    bool
	}{
		{"default range", 32768, 60999, func(int) bool { return true }, false},
		{"range from the lowest port up leaves only the top", 20000, 65530, func(int) bool { return true }, false},
		{"ports in use are skipped", 20005, 65535, func(p int) bool { return !taken[p] }, false},
		{"everything in use", 32768, 60999, func(int) bool { return false }, true},
		{"whole range ephemeral", 1024, 65535, func(int) bool { return true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickPorts(3, tc.lo, tc.hi, tc.free)
			if tc.err {
				if err == nil {
					t.Fatalf("pickPorts = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for _, p := range got {
				if p < lowestPort || (p >= tc.lo && p <= tc.hi) || !tc.free(p) || seen[p] {
					t.Errorf("pickPorts = %v: %d is below %d, in %d-%d, taken or repeated", got, p, lowestPort, tc.lo, tc.hi)
				}
				seen[p] = true
			}
			if len(got) != 3 {
				t.Errorf("pickPorts = %v, want 3 ports", got)
			}
		})
	}
}
