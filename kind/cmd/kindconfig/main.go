package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var (
		in, out, base string
		w             Workarounds
	)
	flag.StringVar(&in, "in", "", "kind cluster config to read (required)")
	flag.StringVar(&out, "out", "", "generated config to write (required)")
	flag.StringVar(&base, "base", ".", "directory relative extraMounts hostPaths are relative to")
	flag.StringVar(&w.RuncWrapper, "runc-wrapper", "", "host path of runc-drop-missing-caps to use as the nodes' runc")
	flag.BoolVar(&w.RestrictOOMScoreAdj, "restrict-oom-score-adj", false, "set containerd's restrict_oom_score_adj")
	flag.BoolVar(&w.AllowCgroupV1, "allow-cgroup-v1", false, "set kubelet's failCgroupV1: false")
	flag.BoolVar(&w.SimpleCNI, "simple-cni", false, "disable kind's default CNI (no kindnetd image)")
	flag.Parse()
	if err := run(in, out, base, w); err != nil {
		fmt.Fprintln(os.Stderr, "kindconfig:", err)
		os.Exit(1)
	}
}

func run(in, out, base string, w Workarounds) error {
	if in == "" || out == "" {
		return fmt.Errorf("--in and --out are required")
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	c, err := Parse(in, data)
	if err != nil {
		return err
	}
	Generate(c, base, w)
	rendered, err := Marshal(c, in)
	if err != nil {
		return fmt.Errorf("rendering %s: %w", in, err)
	}
	return os.WriteFile(out, rendered, 0o644)
}
