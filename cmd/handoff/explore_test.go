package main

import (
	"encoding/json"
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
