package running_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/running"
)

// TestDocsName: docs/spec.md states every history check, and
// docs/designs.md has a row for every fragile running design naming the
// check its catalog entry says catches it.
func TestDocsName(t *testing.T) {
	spec, err := os.ReadFile("../../docs/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 8; n++ {
		check := fmt.Sprintf("H%d", n)
		if running.CheckName(check) == "" {
			t.Errorf("%s has no name in running.CheckName", check)
		}
		if !strings.Contains(string(spec), "- **"+check+".**") {
			t.Errorf("docs/spec.md does not state %s", check)
		}
	}
	catalog, err := os.ReadFile("../../docs/designs.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range designs.RunningFragile {
		row := fmt.Sprintf("| %s | ", d.Name)
		i := strings.Index(string(catalog), row)
		if i < 0 {
			t.Errorf("docs/designs.md has no row for %s", d.Name)
			continue
		}
		line, _, _ := strings.Cut(string(catalog[i:]), "\n")
		if !strings.Contains(line, "| "+d.Failure+" | "+d.CaughtBy+":") {
			t.Errorf("docs/designs.md's row for %s does not say %s, caught by %s: %s", d.Name, d.Failure, d.CaughtBy, line)
		}
	}
}
