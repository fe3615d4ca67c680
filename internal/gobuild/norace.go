//go:build !race

package gobuild

const raceEnabled = false
