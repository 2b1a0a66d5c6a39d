package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestProductLinksNoHarness: the binary that runs in production links
// neither rapid nor Go's testing package (which rapid brings, and whose
// flags it sets up), so nothing of the harness runs in it; the harness's
// commands are cmd/handoff-sim's.
func TestProductLinksNoHarness(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/outboxlab/handoff/system") {
		t.Fatalf("go list -deps does not list the handoff's own system package: %q", deps)
	}
	for _, banned := range []string{"testing", "pgregory.net/rapid", "github.com/outboxlab/handoff/internal/explore"} {
		for _, d := range deps {
			if d == banned || strings.HasPrefix(d, banned+"/") {
				t.Errorf("the product's binary links %s", d)
			}
		}
	}
}
