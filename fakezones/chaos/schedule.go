package chaos

import (
	"math/rand/v2"
	"slices"
)

// Victims are the components a chaos run kills, by their names in the
// cluster's state file: the controller-side driver, the provisioner,
// snapshotter and attacher sidecars (not the resizer),
// zonepath-scheduler, snapshot-controller, kube-apiserver and etcd. kwok,
// kube-controller-manager and the kubelet stand-in are the test bed, not
// the system under test: they are restarted when they die, never killed.
var Victims = []string{
	"zonepath-controller", "provisioner", "snapshotter", "attacher",
	"scheduler", "snapshot-controller", "kube-apiserver", "etcd",
}

// Schedule is the order of kills: rounds in which every victim is killed
// once, each round in a fresh random order from the seed, and never the
// same component twice in a row (across a round's boundary too), so that
// each kill finds the component it kills serving again. The same seed
// gives the same order, so a run that found something can be repeated.
type Schedule struct {
	victims []string
	rng     *rand.Rand
	round   []string
	last    string
}

// NewSchedule is the schedule of victims (at least one) for seed.
func NewSchedule(victims []string, seed uint64) *Schedule {
	return &Schedule{victims: slices.Clone(victims), rng: rand.New(rand.NewPCG(seed, 0x5943))}
}

// Next is the component to kill next.
func (s *Schedule) Next() string {
	if len(s.round) == 0 {
		s.round = slices.Clone(s.victims)
		s.rng.Shuffle(len(s.round), func(i, j int) { s.round[i], s.round[j] = s.round[j], s.round[i] })
		if len(s.round) > 1 && s.round[0] == s.last {
			// Swap with a random other place rather than the next one,
			// so that the first slot's distribution stays even.
			j := 1 + s.rng.IntN(len(s.round)-1)
			s.round[0], s.round[j] = s.round[j], s.round[0]
		}
	}
	s.last, s.round = s.round[0], s.round[1:]
	return s.last
}
