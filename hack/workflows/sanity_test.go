package workflows

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// stubs stand in for the binary the action builds and for the commands
// sanity.sh asks about its privileges: the binary records how it was run
// (through sudo or not) and its arguments, NUL-separated.
var stubs = map[string]string{
	"bin/zonepath-sanity": stubBinary,
	"bin/zonepath-e2e":    stubBinary,
	"stubs/sudo": `#!/bin/sh
[ "$1" = -n ] || { echo "sudo without -n would ask for a password" >&2; exit 1; }
shift
if [ "$1" = true ]; then [ "$STUB_SUDO" = ok ]; exit; fi
[ "$1" = -- ] && shift
VIA_SUDO=yes exec "$@"
`,
	"stubs/id": `#!/bin/sh
case "$1" in -u) echo "$STUB_UID" ;; -un) echo runner ;; *) exit 1 ;; esac
`,
}

// stubBinary records how it ran and its arguments.
const stubBinary = `#!/bin/sh
printf '%s\0' "via-sudo=${VIA_SUDO:-no}" "$@" >"$STUB_OUT"
`

// sanityRun is one run of an action's script: its environment and what the stub
// binary received.
type sanityRun struct {
	argv    []string // the stub's record: via-sudo=..., then its arguments
	stderr  string
	err     error
	workdir string
}

// runSanity runs `sanity.sh run` of the zonepath-sanity action.
func runSanity(t *testing.T, env map[string]string) sanityRun {
	t.Helper()
	return runAction(t, ".github/actions/zonepath-sanity/sanity.sh", env)
}

// runAction copies an action's script and the scripts it sources into a
// tree of its own (they find the binary at ../../../bin from themselves)
// and runs `SCRIPT run` there with the stubs.
func runAction(t *testing.T, script string, env map[string]string) sanityRun {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{script, ".github/actions/lib/words.sh"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(data)
	}
	for name, body := range stubs {
		files[name] = body
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "argv")
	cmd := exec.Command(filepath.Join(dir, script), "run")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "stubs")+":"+os.Getenv("PATH"), "STUB_OUT="+out,
		"ZP_ENDPOINT=unix:///tmp/csi.sock", "STUB_UID=0", "STUB_SUDO=ok")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+strings.ReplaceAll(v, "DIR", dir))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r := sanityRun{workdir: dir}
	r.err = cmd.Run()
	r.stderr = stderr.String()
	if data, err := os.ReadFile(out); err == nil {
		r.argv = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return r
}

// check fails t unless the run ended as the case wants: with wantErr, the
// script exited before the binary, saying so on stderr; else the binary
// ran with exactly want, in which DIR stands for the run's tree. No input
// may have run a command (the cases' $(touch DIR/pwned)). It reports
// whether the binary ran.
func (r sanityRun) check(t *testing.T, wantErr string, want []string) bool {
	t.Helper()
	if fileExists(filepath.Join(r.workdir, "pwned")) {
		t.Fatal("an input ran a command")
	}
	if wantErr != "" {
		if r.err == nil || r.argv != nil || !strings.Contains(r.stderr, wantErr) {
			t.Fatalf("err %v, binary ran with %q, stderr %q; want exit before the binary, %q", r.err, r.argv, r.stderr, wantErr)
		}
		return false
	}
	if r.err != nil {
		t.Fatalf("script: %v\n%s", r.err, r.stderr)
	}
	var expanded []string
	for _, w := range want {
		expanded = append(expanded, strings.ReplaceAll(w, "DIR", r.workdir))
	}
	if !slices.Equal(r.argv, expanded) {
		t.Errorf("binary got\n%q\nwant\n%q", r.argv, expanded)
	}
	return true
}

// base is what sanity.sh passes before the args input, with no config
// and no JUnit report.
var base = []string{"--csi.endpoint", "unix:///tmp/csi.sock", "--ginkgo.no-color"}

// TestSanityArgs: the args input of the action takes several lines and
// shell-style quoted words, and no input is ever evaluated: what looks
// like a command substitution arrives as a literal word and runs nothing.
func TestSanityArgs(t *testing.T) {
	tests := []struct {
		name, args string
		want       []string // after base; nil with wantErr
		wantErr    string
	}{
		{name: "none", args: "", want: []string{}},
		{name: "one line, as a folded >- block gives it", args: "--csi.testvolumeaccesstype=block --zonepath.upstream=false",
			want: []string{"--csi.testvolumeaccesstype=block", "--zonepath.upstream=false"}},
		{name: "several lines with a quoted pattern", args: "--ginkgo.focus \"Node Service\"\n  --csi.testnodevolumeattachlimit\n\n--csi.mountdir '/tmp/a dir'\n",
			want: []string{"--ginkgo.focus", "Node Service", "--csi.testnodevolumeattachlimit", "--csi.mountdir", "/tmp/a dir"}},
		{name: "backslash and nested quotes", args: `--ginkgo.focus=Node\ Service "it's" '"q"'`,
			want: []string{"--ginkgo.focus=Node Service", "it's", `"q"`}},
		{name: "command substitution stays literal", args: "--ginkgo.focus \"$(touch DIR/pwned)\" `touch DIR/pwned` ; touch DIR/pwned",
			want: []string{"--ginkgo.focus", "$(touch DIR/pwned)", "`touch", "DIR/pwned`", ";", "touch", "DIR/pwned"}},
		{name: "variables stay literal", args: "--csi.mountdir $HOME ${PATH}", want: []string{"--csi.mountdir", "$HOME", "${PATH}"}},
		{name: "unmatched quote", args: "--ginkgo.focus \"Node Service\n--x", wantErr: "unmatched quote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runSanity(t, map[string]string{"ZP_ARGS": tc.args})
			r.check(t, tc.wantErr, append(append([]string{"via-sudo=no"}, base...), tc.want...))
		})
	}
}

// TestSanityPrivilege: not root, the binary runs through passwordless
// sudo when there is one (GitHub's runners), so it reaches a socket only
// root may open; as root, or with sudo "false", it runs directly; the
// JUnit report it writes through sudo stays the caller's file.
func TestSanityPrivilege(t *testing.T) {
	tests := []struct {
		name, uid, sudo, input string
		wantSudo               string // via-sudo= of the stub's record
		wantErr                string
	}{
		{name: "root", uid: "0", sudo: "ok", wantSudo: "no"},
		{name: "root, sudo true", uid: "0", sudo: "ok", input: "true", wantSudo: "no"},
		{name: "runner with passwordless sudo", uid: "1001", sudo: "ok", wantSudo: "yes"},
		{name: "runner, sudo true", uid: "1001", sudo: "ok", input: "true", wantSudo: "yes"},
		{name: "runner, sudo false", uid: "1001", sudo: "ok", input: "false", wantSudo: "no"},
		{name: "runner without passwordless sudo", uid: "1001", sudo: "asks", wantSudo: "no"},
		{name: "runner without sudo, sudo true", uid: "1001", sudo: "asks", input: "true", wantErr: "sudo is missing or asks for a password"},
		{name: "unknown value", uid: "1001", sudo: "ok", input: "yes", wantErr: "auto, true or false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"STUB_UID": tc.uid, "STUB_SUDO": tc.sudo, "ZP_JUNIT": "DIR/out/junit.xml"}
			if tc.input != "" {
				env["ZP_SUDO"] = tc.input
			}
			r := runSanity(t, env)
			want := slices.Concat([]string{"via-sudo=" + tc.wantSudo}, base, []string{"--ginkgo.junit-report", "DIR/out/junit.xml"})
			if !r.check(t, tc.wantErr, want) {
				return
			}
			junit := filepath.Join(r.workdir, "out/junit.xml")
			if _, err := os.Stat(junit); (err == nil) != (tc.wantSudo == "yes") {
				t.Errorf("JUnit file created before the run: %v, want %v (only when the binary runs through sudo)", err == nil, tc.wantSudo == "yes")
			}
		})
	}
}

// TestCISanityActionArgs: the args ci.yaml gives the action (several
// lines, quoted paths) reach the binary as the words they mean.
func TestCISanityActionArgs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/ci.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `json:"uses"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Uses == "./.github/actions/zonepath-sanity" {
				args = append(args, s.With["args"])
			}
		}
	}
	if len(args) != 1 {
		t.Fatalf("ci.yaml uses the zonepath-sanity action %d times, want 1", len(args))
	}
	r := runSanity(t, map[string]string{"ZP_ARGS": args[0]})
	r.check(t, "", append(append([]string{"via-sudo=no"}, base...), "--csi.testnodevolumeattachlimit",
		"--csi.testvolumemutableparameters", "sanity/testdata/mutable-parameters.yaml",
		"--csi.mountdir", "/tmp/zonepath-action/mnt", "--csi.stagingdir", "/tmp/zonepath-action/staging"))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
