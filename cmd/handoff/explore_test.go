package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// explore from the command line: its summary, JSON and reproduce line.

func TestExploreJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "explore", "--checks", "20", "--seed", "42", "--json", "--dir", t.TempDir())
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --json: exit %d, %v, stderr %s", code, err, stderr)
	}
	for _, k := range []string{"checks", "steps", "failures", "steps_per_second", "faults", "transitions", "seed"} {
		if _, ok := s[k]; !ok {
			t.Errorf("explore --json: no %q in %v", k, s)
		}
	}
	if s["checks"] != 20.0 || s["failures"] != 0.0 || s["seed"] != 42.0 {
		t.Errorf("explore --json: got %v", s)
	}
}

func TestExploreFragileDesign(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "explore", "--design", "drop-on-error", "--seed", "1", "--dir", t.TempDir())
	var lines []string // with runs of spaces folded, so that column widths do not matter
	for _, l := range strings.Split(stdout, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	folded := strings.Join(lines, "\n")
	for _, want := range []string{
		"caught: the minimal counterexample of drop-on-error, 2 steps",
		"# step result outbox attempts tasks for key\n1 approve case=case-1 title=\"Call back\" approved pending 0 0\n2 deliver fault=",
		"violation: invariant 2",
		"first disagreed at step 2 (-model +system)",
	} {
		if code != 0 || !strings.Contains(folded, want) {
			t.Fatalf("explore --design drop-on-error: exit %d, no %q in:\n%s%s", code, want, stdout, stderr)
		}
	}
	code, stdout, _ = runCLI(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir())
	var s struct {
		Design    string `json:"design"`
		Scenario  string `json:"scenario"`
		Violation struct {
			Invariant int `json:"invariant"`
			Steps     int `json:"steps"`
		} `json:"violation"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --design --json: exit %d, %v", code, err)
	}
	if s.Design != "two-writes" || s.Violation.Invariant != 2 || s.Violation.Steps != 1 || !strings.Contains(s.Scenario, "design name=two-writes") {
		t.Errorf("explore --design two-writes --json: got %+v", s)
	}
}

// TestInvokedAs: the command lines explore and trial print to run them
// again start as the program was started, or with go run ./cmd/handoff
// when go run or go test built it in a folder that is gone once it ends.
func TestInvokedAs(t *testing.T) {
	for _, tt := range []struct{ arg0, want string }{
		{"handoff", "handoff"},
		{"/usr/local/bin/handoff", "/usr/local/bin/handoff"},
		{"./handoff", "./handoff"},
		{"/home/ann/my tools/handoff", "'/home/ann/my tools/handoff'"},
		{"/tmp/go-build1554567133/b001/exe/handoff", "go run ./cmd/handoff"},
		{"/root/.cache/go-build/3f/3f0c-d/handoff", "go run ./cmd/handoff"},
		{"/tmp/go-build2718/b001/handoff.test", "go run ./cmd/handoff"},
	} {
		if got := invokedAs(tt.arg0); got != tt.want {
			t.Errorf("invokedAs(%q) = %q, want %q", tt.arg0, got, tt.want)
		}
	}
}

// TestExploreReproduceLineOfAnInstalledBinary runs explore as a binary
// started by its name, as from the PATH: the lines that say how to run it
// again name it so, not go run, which works only in the module's folder.
func TestExploreReproduceLineOfAnInstalledBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "handoff")
	copyTo(t, os.Args[0], exe)
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{"handoff", "explore", "--checks", "2", "--seed", "3", "--parallel", "1", "--dir", dir},
		Env: append(os.Environ(), "HANDOFF_RUN_MAIN=1")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("handoff explore: %v:\n%s", err, out)
	}
	if want := "; to run it again: handoff explore --design handoff --steps 50 --seed 3 --checks 2\n"; !strings.Contains(string(out), want) {
		t.Errorf("handoff explore: no %q in:\n%s", want, out)
	}
}
