package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/cli/clitest"
	"github.com/outboxlab/handoff/system"
)

// TestCommandTable checks the product's command table against its help,
// its flags, its files and docs/cli.md's synopsis of handoff.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	clitest.Table(t, "handoff", runCLI, filepath.Join("..", "..", "docs", "cli.md"), "## Synopsis")
}

// TestHelpDefaults: a flag's help shows its default value, unless its
// usage says what the default is because the value depends on the machine
// or the run: help is the same wherever it is read.
func TestHelpDefaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		command, flag string
		want          string // the end of the flag's line
	}{
		{"work", "worker", "(default HOST:PID); a stable name lets a restarted process release its leases at once"},
		{"work", "lease", fmt.Sprintf("(default %v)", system.DefaultLease)},
		{"crm", "addr", "(default 127.0.0.1:8080)"},
	} {
		_, help, _ := runCLI(t, "help", tt.command)
		line := clitest.FlagLine(help, tt.flag)
		if !strings.HasSuffix(line, tt.want) || strings.Count(line, "(default") != 1 {
			t.Errorf("help %s: the line of --%s is %q; want it to end with %q, its only default", tt.command, tt.flag, line, tt.want)
		}
	}
}
