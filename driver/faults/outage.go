package faults

import (
	"errors"
	"maps"
)

// An outage rule takes down the zones of a topology segment:
//
//	- name: zone-b-down
//	  match:
//	    segment: {topology.kubernetes.io/zone: zone-b}
//	  action:
//	    outage: true
//
// Unlike the other actions it is not a fault of single calls: the driver
// asks Down for every zone an operation needs (a volume's, a snapshot
// copy's, a requested one) and treats a zone that is down as a real
// storage back end would treat a lost site. What that means for each RPC
// is the plugin's business (driver/plugin/outage.go); this package only
// holds the declaration, so that it is switched on and off like every
// other fault, by rewriting a rules file: best one of its own (NewFiles),
// so that the rewrite leaves the other files' rules and counters alone.

// compileOutage checks an outage rule: a segment and nothing else, since
// an outage concerns zones, not calls, nor a window of them.
func (r *rule) compileOutage(spec *Rule) error {
	m, a := spec.Match, spec.Action
	switch {
	case len(m.Segment) == 0:
		return errors.New("match.segment: required with action.outage")
	case m.RPC != "" || m.Name != "" || m.Nth != 0 || m.Count != 0:
		return errors.New("match: an outage takes only match.segment (it concerns zones, not calls)")
	case a.Code != "" || a.Delay != "" || a.Mutate != nil || a.Message != "" || a.When != "":
		return errors.New("action: outage excludes code, message, when, delay and mutate")
	}
	for k := range m.Segment {
		if k == "" {
			return errors.New("match.segment: empty topology key")
		}
	}
	r.segment = maps.Clone(m.Segment)
	r.outage = true
	return nil
}

// Down reports whether an outage rule takes down seg: some outage
// segment's pairs all appear in seg. A region-only outage segment thus
// takes down every zone of the region. A nil Injector has no outages.
func (i *Injector) Down(seg map[string]string) bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, s := range i.files {
		for _, r := range s.rules {
			if r.outage && containsAll(seg, r.segment) {
				return true
			}
		}
	}
	return false
}

// Outages lists the segments the active outage rules take down, in the
// order the rules apply (Stats).
func (i *Injector) Outages() []map[string]string {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []map[string]string
	for _, s := range i.files {
		for _, r := range s.rules {
			if r.outage {
				out = append(out, maps.Clone(r.segment))
			}
		}
	}
	return out
}
