package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// fromLine matches "FROM image [AS name]"; entrypointLine an exec-form ENTRYPOINT.
var (
	fromLine       = regexp.MustCompile(`(?i)^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$`)
	entrypointLine = regexp.MustCompile(`(?i)^ENTRYPOINT\s+\[\s*"([^"]+)"`)
)

// dockerTargets returns the Dockerfile's image targets with the first
// ENTRYPOINT path of each. Stages named build, build-* and base-* are steps
// other stages start from, not images.
func dockerTargets(dockerfile string) (map[string]string, error) {
	targets := map[string]string{}
	current := ""
	sc := bufio.NewScanner(strings.NewReader(dockerfile))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if m := fromLine.FindStringSubmatch(line); m != nil {
			current = m[2]
			if current == "" {
				return nil, fmt.Errorf("line %d: stage from %s has no name (FROM ... AS <binary>)", n, m[1])
			}
			if current == "build" || strings.HasPrefix(current, "build-") || strings.HasPrefix(current, "base-") {
				current = ""
				continue
			}
			if _, dup := targets[current]; dup {
				return nil, fmt.Errorf("line %d: target %s defined twice", n, current)
			}
			targets[current] = ""
			continue
		}
		if m := entrypointLine.FindStringSubmatch(line); m != nil && current != "" && targets[current] == "" {
			targets[current] = m[1]
		}
	}
	return targets, sc.Err()
}

// checkDockerfile compares the Dockerfile's targets with the images make
// images builds from this repository: same names, same entrypoints.
func checkDockerfile(dockerfile string, images []string) error {
	targets, err := dockerTargets(dockerfile)
	if err != nil {
		return err
	}
	var problems []string
	for _, img := range images {
		ep, ok := targets[img]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("make images builds %s but the Dockerfile has no FROM ... AS %s", img, img))
		case ep != "/usr/local/bin/"+img:
			problems = append(problems, fmt.Sprintf("target %s: ENTRYPOINT %q, make images uses %q", img, ep, "/usr/local/bin/"+img))
		}
	}
	for t := range targets {
		if !slices.Contains(images, t) {
			problems = append(problems, fmt.Sprintf("Dockerfile target %s is no image make images builds", t))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func TestDockerfileTargets(t *testing.T) {
	data, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDockerfile(string(data), zonepathImages()); err != nil {
		t.Error(err)
	}
}

func TestCheckDockerfile(t *testing.T) {
	const good = `FROM golang AS build
FROM build AS build-a
FROM debian AS base-a
LABEL org.opencontainers.image.source=here
FROM base-a AS a
ENTRYPOINT ["/usr/local/bin/a"]
FROM distroless AS b
ENTRYPOINT ["/usr/local/bin/b", "-v"]
`
	tests := []struct {
		name, dockerfile, wantErr string
	}{
		{name: "matching", dockerfile: good},
		{name: "missing target", dockerfile: strings.Replace(good, "distroless AS b", "distroless AS build-b", 1), wantErr: "no FROM ... AS b"},
		{name: "extra target", dockerfile: good + "FROM scratch AS c\nENTRYPOINT [\"/usr/local/bin/c\"]\n", wantErr: "target c is no image"},
		{name: "other entrypoint", dockerfile: strings.Replace(good, `"/usr/local/bin/a"`, `"/a"`, 1), wantErr: `target a: ENTRYPOINT "/a"`},
		{name: "no entrypoint", dockerfile: strings.Replace(good, `ENTRYPOINT ["/usr/local/bin/a"]`, "", 1), wantErr: `target a: ENTRYPOINT ""`},
		{name: "unnamed stage", dockerfile: "FROM debian\n", wantErr: "line 1: stage from debian has no name"},
		{name: "duplicate", dockerfile: good + "from debian as a\n", wantErr: "line 9: target a defined twice"},
		{name: "a base not named base-* is a target", dockerfile: strings.Replace(good, "AS base-a", "AS basea", 1), wantErr: "target basea is no image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wanterr.Check(t, checkDockerfile(tc.dockerfile, []string{"a", "b"}), tc.wantErr)
		})
	}
}
