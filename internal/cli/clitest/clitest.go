// Package clitest checks a program's command table against its help, its
// flags, its files and docs/cli.md, for the tests of either binary
// (cmd/handoff, cmd/handoff-sim). It imports testing, so only tests
// import it.
package clitest

import (
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/cli"
)

// Run runs the program's command line in-process and returns its exit
// status, stdout and stderr.
type Run func(t testing.TB, args ...string) (int, string, string)

// Table checks the registered command table of the program called name:
// every command's help, its usage line against the flags it defines, the
// synopsis and a section of docs/cli.md (at doc, under the heading
// synopsis), a file of its own in the working directory, the list of the
// program's help, and one wording for every bound.
func Table(t *testing.T, name string, run Run, doc, synopsis string) {
	t.Run("help", func(t *testing.T) { helpForEveryCommand(t, run) })
	t.Run("usage lines", func(t *testing.T) { usageLinesNameEveryFlag(t, run) })
	t.Run("documented", func(t *testing.T) { commandsDocumented(t, doc, synopsis) })
	t.Run("top-level help", func(t *testing.T) { topLevelHelp(t, run) })
	t.Run("bounds", func(t *testing.T) { everyBoundUsesOneWording(t, name, run) })
}

// helpForEveryCommand: help COMMAND, COMMAND -h and COMMAND --help print
// the same help, with the table's usage line, summary and exit statuses.
func helpForEveryCommand(t *testing.T, run Run) {
	for _, c := range cli.Commands() {
		t.Run(c.Name, func(t *testing.T) {
			code, help, stderr := run(t, "help", c.Name)
			if code != 0 || stderr != "" {
				t.Fatalf("help %s: got exit %d, stderr %q; want 0 and none", c.Name, code, stderr)
			}
			for _, h := range []string{"-h", "--help"} {
				if code, stdout, stderr := run(t, c.Name, h); code != 0 || stdout != help || stderr != "" {
					t.Errorf("%s %s: got exit %d, stderr %q, stdout\n%s\nwant 0 and the help of help %s:\n%s", c.Name, h, code, stderr, stdout, c.Name, help)
				}
			}
			for _, want := range []string{"usage: " + c.UsageLine() + "\n", c.Summary, "\n  0  " + c.Done + "\n", "\n  2  " + cli.UsageExit + "\n"} {
				if !strings.Contains(help, want) {
					t.Errorf("help %s: no %q in\n%s", c.Name, want, help)
				}
			}
			if got, want := strings.Contains(help, "\n  1  "), c.Failed != ""; got != want || !strings.Contains(help, c.Failed) {
				t.Errorf("help %s: exit status 1 listed %v, want %v (%q):\n%s", c.Name, got, want, c.Failed, help)
			}
			if got, want := strings.Contains(help, "\n  3  "), c.Attention != ""; got != want || !strings.Contains(help, c.Attention) {
				t.Errorf("help %s: exit status 3 listed %v, want %v (%q):\n%s", c.Name, got, want, c.Attention, help)
			}
			if got, want := strings.Contains(help, "\n  4  "), c.Environment; got != want {
				t.Errorf("help %s: exit status 4 listed %v, want %v:\n%s", c.Name, got, want, help)
			}
			if !strings.Contains(help, c.Operands) {
				t.Errorf("help %s does not say what its arguments are (%q):\n%s", c.Name, c.Operands, help)
			}
		})
	}
}

// usageLinesNameEveryFlag keeps the table's usage lines true to the
// flags each command defines: every flag is in the usage line and the
// help, and every flag the usage line or the number checks name exists.
func usageLinesNameEveryFlag(t *testing.T, run Run) {
	named := regexp.MustCompile(`--([a-z][a-z-]*)`)
	for _, c := range cli.Commands() {
		fs, err := c.FlagSet(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, help, _ := run(t, "help", c.Name)
		var defined []string
		fs.VisitAll(func(f *flag.Flag) {
			defined = append(defined, f.Name)
			if !strings.Contains(c.Args, "[--"+f.Name) && !strings.Contains(c.Args, "(--"+f.Name) && !strings.HasPrefix(c.Args, "--"+f.Name) && !strings.Contains(c.Args, " --"+f.Name) {
				t.Errorf("%s: the usage line %q does not name --%s", c.Name, c.Args, f.Name)
			}
			if !strings.Contains(help, "\n  --"+f.Name+" ") || !strings.Contains(help, f.Usage) {
				t.Errorf("help %s does not explain --%s:\n%s", c.Name, f.Name, help)
			}
		})
		for _, m := range named.FindAllStringSubmatch(c.Args, -1) {
			if !slices.Contains(defined, m[1]) {
				t.Errorf("%s: the usage line names --%s, which the command does not define", c.Name, m[1])
			}
		}
		for _, name := range slices.Concat(c.AtLeastOne, c.NonNegative, c.Positive) {
			if !slices.Contains(defined, name) {
				t.Errorf("%s: the table checks --%s, which the command does not define", c.Name, name)
			}
		}
	}
}

// commandsDocumented: docs/cli.md shows every command's usage line in the
// program's synopsis, as the command table makes it, and gives every
// command a section of its own; and every command has a file of its own
// named after it (check-receiver in checkreceiver.go) that defines its
// run function (help's is the machinery's own).
func commandsDocumented(t *testing.T, docPath, synopsis string) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var want strings.Builder
	want.WriteString(synopsis + "\n\n```\n")
	for _, c := range cli.Commands() {
		want.WriteString(c.UsageLine() + "\n")
	}
	want.WriteString("```\n")
	if !strings.Contains(doc, want.String()) {
		t.Errorf("%s has no synopsis of the usage lines; want\n%s", docPath, want.String())
	}
	fset := token.NewFileSet()
	for _, c := range cli.Commands() {
		if !regexp.MustCompile(`(?m)^##+ (.*, )?` + regexp.QuoteMeta(c.Name) + `\b`).MatchString(doc) {
			t.Errorf("%s has no section for %s", docPath, c.Name)
		}
		fn := runtime.FuncForPC(reflect.ValueOf(c.Run).Pointer()).Name()
		if strings.HasSuffix(fn, "/internal/cli.Help") {
			continue
		}
		file := strings.ReplaceAll(c.Name, "-", "") + ".go"
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Errorf("command %s: %v (a command has a file of its own, named after it)", c.Name, err)
			continue
		}
		fn = fn[strings.LastIndex(fn, ".")+1:]
		if f.Scope.Lookup(fn) == nil {
			t.Errorf("command %s: %s does not define its run function %s", c.Name, file, fn)
		}
	}
}

// topLevelHelp: help, -h and --help list every command with its summary
// on stdout; no arguments at all print the same list on stderr, exit 2.
func topLevelHelp(t *testing.T, run Run) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, stdout, stderr := run(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: got exit %d, stderr %q; want 0 and none", args, code, stderr)
		}
		for _, c := range cli.Commands() {
			if !strings.Contains(stdout, "\n  "+c.Name+" ") || !strings.Contains(stdout, c.Summary) {
				t.Errorf("%v does not list %s:\n%s", args, c.Name, stdout)
			}
		}
	}
	_, help, _ := run(t, "help")
	if code, stdout, stderr := run(t); code != 2 || stdout != "" || stderr != help {
		t.Errorf("no arguments: got exit %d, stdout %q, stderr\n%s\nwant 2 and the list of commands on stderr", code, stdout, stderr)
	}
}

// everyBoundUsesOneWording: every number the command table bounds is
// refused in the same words, "--NAME is VALUE, want …", before anything
// else the command would check.
func everyBoundUsesOneWording(t *testing.T, name string, run Run) {
	for _, c := range cli.Commands() {
		for _, tt := range []struct {
			flags       []string
			value, want string
		}{
			{c.AtLeastOne, "0", "is 0, want 1 or more"},
			{c.NonNegative, "-1s", "is -1s, want 0 or more"},
			{c.Positive, "0s", "is 0s, want more than 0"},
		} {
			for _, f := range tt.flags {
				want := fmt.Sprintf("%s %s: --%s %s\nsee %s help %s\n", name, c.Name, f, tt.want, name, c.Name)
				if code, _, stderr := run(t, c.Name, "--"+f, tt.value); code != 2 || stderr != want {
					t.Errorf("%s --%s %s: got exit %d, stderr %q; want 2 and %q", c.Name, f, tt.value, code, stderr, want)
				}
			}
		}
	}
}
