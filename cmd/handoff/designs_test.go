package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// The catalog of designs, and --measure.

func TestDesigns(t *testing.T) {
	code, stdout, _ := runCLI(t, "designs")
	if code != 0 || strings.Count(stdout, "\n") != len(designs.All()) || !strings.Contains(stdout, "check-then-create") {
		t.Errorf("designs: exit %d, want %d lines:\n%s", code, len(designs.All()), stdout)
	}
	code, stdout, _ = runCLI(t, "designs", "two-writes")
	if code != 0 || !strings.Contains(stdout, "caught by invariant 2 in 1 step") {
		t.Errorf("designs two-writes: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "designs", "three-writes"); code != 2 || !strings.Contains(stderr, "unknown design") {
		t.Errorf("designs three-writes: got exit %d, %q; want 2", code, stderr)
	}
	if code, _, _ := runCLI(t, "designs", "--measure", "-1"); code != 2 {
		t.Errorf("designs --measure -1: got exit %d, want 2", code)
	}
}

func TestDesignsJSONCatalog(t *testing.T) {
	code, stdout, stderr := runCLI(t, "designs", "--json")
	var got []catalogEntry
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("designs --json: exit %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	all := designs.All()
	if len(got) != len(all) {
		t.Fatalf("designs --json: got %d designs, want %d", len(got), len(all))
	}
	for i, d := range all {
		g := got[i]
		if g.Name != d.Name || g.Summary != d.Summary || g.Fragile != (d.Doc != "") {
			t.Errorf("designs --json [%d]: got %+v, want %s", i, g, d.Name)
		}
		if g.Fragile && (g.Invariant == nil || *g.Invariant != d.Invariant || *g.MinimalSteps != d.MinimalSteps || *g.Failure != d.Failure || *g.Doc != d.Doc) ||
			!g.Fragile && (g.Invariant != nil || g.Doc != nil) {
			t.Errorf("designs --json %s: got %+v", d.Name, g)
		}
	}
	code, stdout, _ = runCLI(t, "designs", "--json", "no-budget")
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || len(got) != 1 || got[0].Name != "no-budget" {
		t.Errorf("designs --json no-budget: exit %d, %v:\n%s", code, err, stdout)
	}
}
