package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/cli/clitest"
	"github.com/outboxlab/handoff/internal/explore"
)

// TestCommandTable checks the harness's command table against its help,
// its flags, its files and docs/cli.md's synopsis of handoff-sim.
func TestCommandTable(t *testing.T) {
	clitest.Table(t, "handoff-sim", runCLI, filepath.Join("..", "..", "docs", "cli.md"), "### Synopsis of handoff-sim")
}

// TestHelpDefaults: a flag's help shows its default value, unless its
// usage says what the default is because the value depends on the machine
// or the run: help is the same wherever it is read.
func TestHelpDefaults(t *testing.T) {
	for _, tt := range []struct {
		command, flag string
		want          string // the end of the flag's line
	}{
		{"explore", "parallel", "(default: the number of CPUs)"},
		{"explore", "seed", "(default: a fresh one, printed in the summary)"},
		{"explore", "checks", fmt.Sprintf("random sequences to try (default %d)", explore.DefaultChecks)},
		{"explore", "shard", "(default 1/1)"},
	} {
		_, help, _ := runCLI(t, "help", tt.command)
		line := clitest.FlagLine(help, tt.flag)
		if !strings.HasSuffix(line, tt.want) || strings.Count(line, "(default") != 1 {
			t.Errorf("help %s: the line of --%s is %q; want it to end with %q, its only default", tt.command, tt.flag, line, tt.want)
		}
	}
	_, help, _ := runCLI(t, "help", "explore")
	if cpus := fmt.Sprintf("(default %d)", runtime.NumCPU()); strings.Contains(help, cpus) {
		t.Errorf("help explore shows this machine's CPUs, %s:\n%s", cpus, help)
	}
}
