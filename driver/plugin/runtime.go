package plugin

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector target the driver runs with
// unless GOGC is set. Its live heap is small (records, encoded list
// entries) and its CPU goes to building and encoding responses, so it
// trades memory for CPU: at the default of 100 a large listing spends much
// of its CPU collecting garbage (driver/README.md, "Garbage collection").
const DefaultGCPercent = 400

// ApplyRuntimeDefaults sets DefaultGCPercent when GOGC is not set. The
// binary calls it at start; benchmarks that run the driver in-process call
// it too, so they measure the driver as it ships.
func ApplyRuntimeDefaults() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
