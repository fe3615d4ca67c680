package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Memory is the peak resident memory of a cluster's processes.
type Memory struct {
	// Total is the sum of every running process's peak, in bytes: an
	// upper bound of what they needed at once.
	Total int64
	// Processes are the peaks by process name, largest first.
	Processes []ProcessMemory
}

// ProcessMemory is one process's peak resident memory, in bytes.
type ProcessMemory struct {
	Name string
	Peak int64
}

// PeakMemory measures the peak resident memory of every running process
// of the cluster; a process that ended meanwhile is left out.
func (s *State) PeakMemory() Memory {
	var m Memory
	for _, p := range s.Running() {
		peak, err := p.PeakRSS()
		if err != nil {
			continue
		}
		m.Total += peak
		m.Processes = append(m.Processes, ProcessMemory{Name: p.Name, Peak: peak})
	}
	slices.SortStableFunc(m.Processes, func(a, b ProcessMemory) int { return cmp.Compare(b.Peak, a.Peak) })
	return m
}

// String says the total, per node, and the three largest processes, for
// up's last lines.
func (m Memory) String(nodes int) string {
	var top []string
	for _, p := range m.Processes[:min(3, len(m.Processes))] {
		top = append(top, fmt.Sprintf("%s %s", p.Name, mib(p.Peak)))
	}
	return fmt.Sprintf("peak RSS %s in %d processes, %.2f MiB per node (largest: %s)",
		mib(m.Total), len(m.Processes), float64(m.Total)/float64(max(nodes, 1))/(1<<20), strings.Join(top, ", "))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
