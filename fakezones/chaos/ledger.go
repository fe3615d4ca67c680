package chaos

import (
	"slices"
	"sync"
	"time"
)

// Kill is one component killed and back.
type Kill struct {
	Component string
	// At is when SIGKILL was sent.
	At time.Time
	// Back is how long from At until the restarted process served again.
	Back time.Duration
}

// Exit is a component that died without being killed, and was restarted.
type Exit struct {
	Component string
	At        time.Time
	// Why is what its log says last, or lostCSI.
	Why string
}

// lostCSI is the exit of an upstream sidecar whose CSI driver went away:
// csi-lib-utils ends the process on a lost connection, by design, for
// kubelet to restart the container, as the killer does.
const lostCSI = "lost its CSI connection and exited, as upstream sidecars do (kubelet would restart it)"

// Op is one operation that reached its end state: a claim Bound, a
// snapshot ReadyToUse, deleted objects gone.
type Op struct {
	Cycle, What string
	Start, End  time.Time
}

// Cycle is one snapshot → restore cycle of the workload.
type Cycle struct {
	Name, Scenario string
	// Start is when its first object was made, End when its last one
	// was gone (zero while any is left).
	Start, End time.Time
	// Outcome is "ok", or what went wrong, or "cut short" when the run
	// ended first.
	Outcome string
	// Notes are what the cycle saw on the way: a lost reply, an edit
	// between attempts, the driver's final answer.
	Notes []string
}

// Outcomes of a cycle besides failures.
const (
	OutcomeOK       = "ok"
	OutcomeCutShort = "cut short"
)

// Ledger records what the run did, for the report: kills, exits,
// operations, cycles, the origin of backend objects, restores and the
// findings of checks made while it ran. Safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	kills    []Kill
	exits    []Exit
	ops      []Op
	cycles   []*Cycle
	origins  Origins
	restores []Restore
	findings []Finding
	lost     int
	edits    int
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger { return &Ledger{origins: Origins{}} }

// Kill records a kill.
func (l *Ledger) Kill(k Kill) { l.locked(func() { l.kills = append(l.kills, k) }) }

// Exit records a component that died on its own.
func (l *Ledger) Exit(e Exit) { l.locked(func() { l.exits = append(l.exits, e) }) }

// Done records an operation of cycle that started at start and reached
// its end state now.
func (l *Ledger) Done(cycle, what string, start time.Time) {
	l.locked(func() { l.ops = append(l.ops, Op{Cycle: cycle, What: what, Start: start, End: time.Now()}) })
}

// StartCycle records the start of a cycle and returns it; only its own
// goroutine changes it, through the ledger's methods.
func (l *Ledger) StartCycle(name, scenario string) *Cycle {
	c := &Cycle{Name: name, Scenario: scenario, Start: time.Now()}
	l.locked(func() { l.cycles = append(l.cycles, c) })
	return c
}

// Outcome records how a cycle's scenario ended.
func (l *Ledger) Outcome(c *Cycle, outcome string) { l.locked(func() { c.Outcome = outcome }) }

// EndCycle records that the last object of a cycle is gone.
func (l *Ledger) EndCycle(c *Cycle) { l.locked(func() { c.End = time.Now() }) }

// Note adds what a cycle saw on its way.
func (l *Ledger) Note(c *Cycle, note string) { l.locked(func() { c.Notes = append(c.Notes, note) }) }

// Origin records that cycle made the backend object id.
func (l *Ledger) Origin(id, cycle string) {
	if id != "" {
		l.locked(func() { l.origins[id] = cycle })
	}
}

// Restore records a restored claim as bound.
func (l *Ledger) Restore(r Restore) { l.locked(func() { l.restores = append(l.restores, r) }) }

// Finding records a broken rule found while the run went on.
func (l *Ledger) Finding(f Finding) { l.locked(func() { l.findings = append(l.findings, f) }) }

// LostReply counts a reply the driver's fault rules threw away.
func (l *Ledger) LostReply(n int) { l.locked(func() { l.lost += n }) }

// Edit counts an admin edit made between a lost reply and its retry.
func (l *Ledger) Edit() { l.locked(func() { l.edits++ }) }

func (l *Ledger) locked(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// Snapshot is a copy of the ledger at one moment.
type Snapshot struct {
	Kills       []Kill
	Exits       []Exit
	Ops         []Op
	Cycles      []Cycle
	Origins     Origins
	Restores    []Restore
	Findings    []Finding
	LostReplies int
	Edits       int
}

// Snapshot copies the ledger.
func (l *Ledger) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Snapshot{Kills: slices.Clone(l.kills), Exits: slices.Clone(l.exits), Ops: slices.Clone(l.ops),
		Origins: Origins{}, Restores: slices.Clone(l.restores), Findings: slices.Clone(l.findings), LostReplies: l.lost, Edits: l.edits}
	for _, c := range l.cycles {
		cc := *c
		cc.Notes = slices.Clone(c.Notes)
		s.Cycles = append(s.Cycles, cc)
	}
	for k, v := range l.origins {
		s.Origins[k] = v
	}
	return s
}
