package main

import (
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/system"
)

// The command table and its help.

func TestHelpForEveryCommand(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			code, help, stderr := runCLI(t, "help", c.name)
			if code != 0 || stderr != "" {
				t.Fatalf("help %s: got exit %d, stderr %q; want 0 and none", c.name, code, stderr)
			}
			for _, h := range []string{"-h", "--help"} {
				if code, stdout, stderr := runCLI(t, c.name, h); code != 0 || stdout != help || stderr != "" {
					t.Errorf("%s %s: got exit %d, stderr %q, stdout\n%s\nwant 0 and the help of help %s:\n%s", c.name, h, code, stderr, stdout, c.name, help)
				}
			}
			for _, want := range []string{"usage: " + c.usageLine() + "\n", c.summary, "\n  0  " + c.done + "\n", "\n  2  " + usageExit + "\n"} {
				if !strings.Contains(help, want) {
					t.Errorf("help %s: no %q in\n%s", c.name, want, help)
				}
			}
			if got, want := strings.Contains(help, "\n  1  "), c.failed != ""; got != want || !strings.Contains(help, c.failed) {
				t.Errorf("help %s: exit status 1 listed %v, want %v (%q):\n%s", c.name, got, want, c.failed, help)
			}
			if got, want := strings.Contains(help, "\n  3  "), c.attention != ""; got != want || !strings.Contains(help, c.attention) {
				t.Errorf("help %s: exit status 3 listed %v, want %v (%q):\n%s", c.name, got, want, c.attention, help)
			}
			if !strings.Contains(help, c.operands) {
				t.Errorf("help %s does not say what its arguments are (%q):\n%s", c.name, c.operands, help)
			}
		})
	}
}

// TestUsageLinesNameEveryFlag keeps the table's usage lines true to the
// flags each command defines: every flag is in the usage line and the
// help, and every flag the usage line or the number checks name exists.
func TestUsageLinesNameEveryFlag(t *testing.T) {
	named := regexp.MustCompile(`--([a-z][a-z-]*)`)
	for _, c := range commands {
		fs, err := c.flagSet(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, help, _ := runCLI(t, "help", c.name)
		var defined []string
		fs.VisitAll(func(f *flag.Flag) {
			defined = append(defined, f.Name)
			if !strings.Contains(c.args, "[--"+f.Name) && !strings.Contains(c.args, "(--"+f.Name) && !strings.HasPrefix(c.args, "--"+f.Name) && !strings.Contains(c.args, " --"+f.Name) {
				t.Errorf("%s: the usage line %q does not name --%s", c.name, c.args, f.Name)
			}
			if !strings.Contains(help, "\n  --"+f.Name+" ") || !strings.Contains(help, f.Usage) {
				t.Errorf("help %s does not explain --%s:\n%s", c.name, f.Name, help)
			}
		})
		for _, m := range named.FindAllStringSubmatch(c.args, -1) {
			if !slices.Contains(defined, m[1]) {
				t.Errorf("%s: the usage line names --%s, which the command does not define", c.name, m[1])
			}
		}
		for _, name := range slices.Concat(c.atLeastOne, c.nonNegative, c.positive) {
			if !slices.Contains(defined, name) {
				t.Errorf("%s: the table checks --%s, which the command does not define", c.name, name)
			}
		}
	}
}

// TestCommandsDocumented: docs/cli.md shows every command's usage line in
// its synopsis, as the command table makes it, and gives every command a
// section of its own; and every command has a file of its own named after
// it (check-receiver in checkreceiver.go) that defines its run function.
func TestCommandsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var want strings.Builder
	want.WriteString("## Synopsis\n\n```\n")
	for _, c := range commands {
		want.WriteString(c.usageLine() + "\n")
	}
	want.WriteString("```\n")
	if !strings.Contains(doc, want.String()) {
		t.Errorf("docs/cli.md has no synopsis of the usage lines; want\n%s", want.String())
	}
	fset := token.NewFileSet()
	for _, c := range commands {
		if !regexp.MustCompile(`(?m)^##+ (.*, )?` + regexp.QuoteMeta(c.name) + `\b`).MatchString(doc) {
			t.Errorf("docs/cli.md has no section for %s", c.name)
		}
		file := strings.ReplaceAll(c.name, "-", "") + ".go"
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Errorf("command %s: %v (a command has a file of its own, named after it)", c.name, err)
			continue
		}
		fn := runtime.FuncForPC(reflect.ValueOf(c.run).Pointer()).Name()
		fn = fn[strings.LastIndex(fn, ".")+1:]
		if f.Scope.Lookup(fn) == nil {
			t.Errorf("command %s: %s does not define its run function %s", c.name, file, fn)
		}
	}
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
		{"work", "worker", "(default HOST:PID); a stable name lets a restarted process release its leases at once"},
		{"work", "lease", fmt.Sprintf("(default %v)", system.DefaultLease)},
		{"crm", "addr", "(default 127.0.0.1:8080)"},
	} {
		_, help, _ := runCLI(t, "help", tt.command)
		var line string
		for _, l := range strings.Split(help, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--"+tt.flag+" ") {
				line = l
			}
		}
		if !strings.HasSuffix(line, tt.want) || strings.Count(line, "(default") != 1 {
			t.Errorf("help %s: the line of --%s is %q; want it to end with %q, its only default", tt.command, tt.flag, line, tt.want)
		}
	}
	_, help, _ := runCLI(t, "help", "explore")
	if cpus := fmt.Sprintf("(default %d)", runtime.NumCPU()); strings.Contains(help, cpus) {
		t.Errorf("help explore shows this machine's CPUs, %s:\n%s", cpus, help)
	}
}
