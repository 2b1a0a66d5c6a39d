package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// harnessPackages are what the product's binary must not link, each with
// why: the harness's packages, and what they bring with them. A package
// under one of them (path/...) counts as it; the more specific entries
// come first, so that a failure names the most precise reason.
var harnessPackages = []struct{ path, why string }{
	{"testing/synctest", "the bubble the running mode runs a design in"},
	{"testing", "Go's testing package, whose flags and globals a test sets up (rapid brings it)"},
	{"pgregory.net/rapid", "the harness's random search"},
	{"github.com/outboxlab/handoff/internal/sim", "the scenario harness"},
	{"github.com/outboxlab/handoff/internal/explore", "the harness's explorations"},
	{"github.com/outboxlab/handoff/internal/exhaustive", "the small-scope proof"},
	{"github.com/outboxlab/handoff/internal/running", "the running mode"},
	{"github.com/outboxlab/handoff/internal/lanes", "explorations in processes of their own"},
	{"github.com/outboxlab/handoff/internal/sqlwrap", "the harness's wrapper of SQLite connections, which cuts and keeps them"},
	{"github.com/outboxlab/handoff/designs", "the designs the harness verifies, fragile ones included"},
}

// TestProductLinksNoHarness: the binary that runs in production links
// nothing of the harness, neither its packages nor rapid nor Go's testing
// package, so nothing of the harness runs in it; the harness's commands
// are cmd/handoff-sim's. It asks the go command on PATH for every package
// the binary links.
func TestProductLinksNoHarness(t *testing.T) {
	t.Parallel()
	const product = "github.com/outboxlab/handoff/cmd/handoff"
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", product).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", product, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/outboxlab/handoff/system") {
		t.Fatalf("go list -deps does not list the handoff's own system package: %q", deps)
	}
	for _, d := range deps {
		for _, h := range harnessPackages {
			if d == h.path || strings.HasPrefix(d, h.path+"/") {
				t.Errorf("the product's binary links %s: %s", d, h.why)
				break
			}
		}
	}
}
