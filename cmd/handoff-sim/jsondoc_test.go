package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/cli/clitest"
)

// TestJSONDocumentation checks docs/json.md against real output of the
// harness's commands (see clitest.JSONDocumented).
func TestJSONDocumentation(t *testing.T) {
	t.Parallel()
	clitest.JSONDocumented(t, filepath.Join("..", "..", "docs", "json.md"), jsonOutputs)
}

// jsonOutputs lists every JSON output of the harness's commands, by its
// section in docs/json.md, with a function that produces real examples
// of it. Between them the examples must print every documented field,
// each with a value that is not null at least once. Documenting a new
// output is one section there and one entry here.
var jsonOutputs = []clitest.JSONOutput{
	{Section: "explore --json", Lines: false, Outputs: func(t *testing.T) []string {
		return []string{
			mustRun(t, "explore", "--checks", "3", "--seed", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "explore", "--checks", "3", "--seed", "1", "--transport", "http", "--shard", "2/3", "--parallel", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir()),
		}
	}},
	{Section: "explore --json, when the environment failed", Lines: false, Outputs: func(t *testing.T) []string {
		// Nothing listens on port 1: the server is not running.
		code, stdout, stderr := runCLI(t, "explore", "--backend", "postgres", "--postgres-url", "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "--json")
		if code != 4 {
			t.Fatalf("explore on a server that does not run: exit %d, want 4: %s", code, stderr)
		}
		return []string{stdout}
	}},
	{Section: "designs --json", Lines: false, Outputs: func(t *testing.T) []string {
		return []string{mustRun(t, "designs", "--json")}
	}},
	// Measuring the whole catalog takes seconds a seed: this is the
	// command's measuring on one cheap design (a tenth of a second).
	{Section: "designs --measure --json", Lines: false, Outputs: func(t *testing.T) []string {
		twoWrites, err := designs.Lookup("two-writes")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := measureDesigns(t.Context(), []designs.Design{twoWrites}, 1, 1, backend.SQLite, "", 0, true, &b, io.Discard); err != nil {
			t.Fatal(err)
		}
		return []string{b.String()}
	}},
	{Section: "prove --json", Lines: false, Outputs: func(t *testing.T) []string {
		// A bound of 50 is out of reach of a millisecond: the time limit
		// stops it, and it fails, printing what it completed.
		code, stopped, stderr := runCLI(t, "prove", "--depth", "50", "--time", "1ms", "--json", "--dir", t.TempDir())
		if code != 1 {
			t.Fatalf("prove stopped by its time limit: exit %d, want 1: %s", code, stderr)
		}
		return []string{
			mustRun(t, "prove", "--depth", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "prove", "--design", "no-lease", "--depth", "3", "--json", "--dir", t.TempDir()),
			stopped,
		}
	}},
}
