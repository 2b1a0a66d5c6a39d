package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
)

// The command table, its help, and the exit-status rule.

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
		fs, err := c.flagSet(context.Background())
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
		for _, name := range append(slices.Clone(c.atLeastOne), c.nonNegative...) {
			if !slices.Contains(defined, name) {
				t.Errorf("%s: the table checks --%s, which the command does not define", c.name, name)
			}
		}
	}
}

func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: got exit %d, stderr %q; want 0 and none", args, code, stderr)
		}
		for _, c := range commands {
			if !strings.Contains(stdout, "\n  "+c.name+" ") || !strings.Contains(stdout, c.summary) {
				t.Errorf("%v does not list %s:\n%s", args, c.name, stdout)
			}
		}
	}
	_, help, _ := runCLI(t, "help")
	if code, stdout, stderr := runCLI(t); code != 2 || stdout != "" || stderr != help {
		t.Errorf("no arguments: got exit %d, stdout %q, stderr\n%s\nwant 2 and the list of commands on stderr", code, stdout, stderr)
	}
}

// TestExitStatusRule checks the one rule: 2 for a usage error (bad flags,
// unknown command, design or fault names, numbers out of range), printed
// as one line and a pointer to the command's help; 1 for refused or failed
// work, one line; 0 done.
func TestExitStatusRule(t *testing.T) {
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	if code, _, stderr := runCLI(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	tests := []struct {
		args []string
		code int
		want string // in the first line of stderr
	}{
		{[]string{"launch"}, 2, `unknown command "launch"`},
		{[]string{"help", "launch"}, 2, `unknown command "launch"`},
		{[]string{"help", "explore", "designs"}, 2, "help takes one command"},
		{[]string{"version", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"explore", "--checks", "0"}, 2, "--checks is 0, want 1 or more"},
		{[]string{"explore", "--checks", "-3"}, 2, "--checks is -3, want 1 or more"},
		{[]string{"explore", "--steps", "0"}, 2, "--steps is 0, want 1 or more"},
		{[]string{"explore", "--checks", "many"}, 2, `invalid value "many" for flag -checks`},
		{[]string{"explore", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"explore", "--design", "nope"}, 2, `unknown design "nope"`},
		{[]string{"designs", "nope"}, 2, `unknown design "nope"`},
		{[]string{"designs", "--measure", "0"}, 2, "--measure is 0, want 1 or more"},
		{[]string{"designs", "--measure", "-1"}, 2, "--measure is -1, want 1 or more"},
		{[]string{"designs", "--measure", "1", "two-writes"}, 2, "give no names"},
		{[]string{"designs", "--backend", "postgres"}, 2, "without --measure it has nothing to do"},
		{[]string{"designs", "--measure", "1", "--backend", "oracle"}, 2, `unknown backend "oracle"`},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "meteor"}, 2, `unknown fault "meteor"`},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "foreign-task"}, 2, "exists only in scenarios"},
		{[]string{"deliver", "--app", app}, 2, "missing --crm"},
		{[]string{"approve", "--app", app, "--case", "casé", "--title", "t"}, 1, `case id "casé" has 'é' at character 4`},
		{[]string{"deliver", "--app", filepath.Join(dir, "missing.db"), "--crm", crm}, 1, "does not exist"},
		{[]string{"version"}, 0, ""},
		{[]string{"designs", "two-writes"}, 0, ""},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, tt.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		wantLines := map[int]int{0: 1, 1: 1, 2: 2}[tt.code]
		if tt.code == 0 && stderr == "" {
			lines = nil
			wantLines = 0
		}
		if code != tt.code || len(lines) != wantLines || wantLines > 0 && !strings.Contains(lines[0], tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want %d, %d line(s), the first with %q", tt.args, code, stderr, tt.code, wantLines, tt.want)
			continue
		}
		if tt.code == 2 && !strings.HasPrefix(lines[1], "see handoff help") {
			t.Errorf("%v: the second line is %q, want a pointer to handoff help", tt.args, lines[1])
		}
	}
	if _, err := os.Stat(crm); !os.IsNotExist(err) {
		t.Errorf("a usage error of deliver created %s", crm)
	}
}

// TestFlagErrorPrintedOnce checks that a flag error is one message, not the
// flag package's message and defaults followed by the command's own.
func TestFlagErrorPrintedOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"explore", "--checks", "many"}, `invalid value "many" for flag -checks`},
		{[]string{"demo", "--json=maybe"}, `invalid boolean value "maybe" for -json`},
		{[]string{"approve", "--app"}, "flag needs an argument: -app"},
		{[]string{"replay", "--loud"}, "flag provided but not defined: -loud"},
	} {
		_, _, stderr := runCLI(t, tt.args...)
		if strings.Count(stderr, tt.msg) != 1 || strings.Contains(stderr, "Usage") || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%v: got stderr\n%s\nwant %q once, no defaults, and a pointer", tt.args, stderr, tt.msg)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := runCLI(t, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "handoff ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("version: got exit %d, stdout %q, stderr %q; want 0 and one line", code, stdout, stderr)
	}
	info := func(version string, settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{}
		b.Main.Version = version
		for i := 0; i < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	for _, tt := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "handoff (devel)"},
		{info(""), true, "handoff (devel)"},
		{info("(devel)"), true, "handoff (devel)"},
		{info("v1.2.0"), true, "handoff v1.2.0"},
		{info("v1.2.0", "vcs.modified", "true", "vcs.time", "2026-01-02T03:04:05Z", "vcs.revision", "abc123", "vcs", "git"), true,
			"handoff v1.2.0 (revision abc123, 2026-01-02T03:04:05Z, modified)"},
		{info("(devel)", "vcs.revision", "abc123", "vcs.modified", "false"), true, "handoff (devel) (revision abc123)"},
	} {
		if got := versionLine(tt.info, tt.ok); got != tt.want {
			t.Errorf("versionLine: got %q, want %q", got, tt.want)
		}
	}
}

func TestDeliverFaultHelpListsEveryFault(t *testing.T) {
	_, help, _ := runCLI(t, "help", "deliver")
	for _, k := range faults.DeliveryKinds {
		if !strings.Contains(help, string(k)) {
			t.Errorf("help deliver does not mention --fault %s:\n%s", k, help)
		}
	}
	if !strings.Contains(help, string(faults.ForeignTask)+" only in scenarios") {
		t.Errorf("help deliver does not say foreign-task is for scenarios only:\n%s", help)
	}
}

// TestDeliverRefusesForeignTask checks that deliver will not put a task
// with foreign content into a real CRM file, and changes nothing.
func TestDeliverRefusesForeignTask(t *testing.T) {
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	for _, args := range [][]string{
		{"approve", "--app", app, "--case", "case-104", "--title", "Call back"},
		{"deliver", "--app", app, "--crm", crm, "--fault", "offline", "--create-crm"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	before := readFiles(t, app, crm)
	code, _, stderr := runCLI(t, "deliver", "--app", app, "--crm", crm, "--fault", "foreign-task")
	if code != 2 || !strings.Contains(stderr, "foreign content into the CRM file") {
		t.Errorf("deliver --fault foreign-task: got exit %d, %q; want 2 and why", code, stderr)
	}
	if !equalFiles(before, readFiles(t, app, crm)) {
		t.Error("deliver --fault foreign-task changed a database file")
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

func TestEnumerateSkipsFragileScenarios(t *testing.T) {
	fragile := filepath.Join("..", "..", "corpus", "fragile", "two-writes.txt")
	real := filepath.Join("..", "..", "corpus", "duplicate-request.txt")
	code, stdout, stderr := runCLI(t, "enumerate", fragile)
	if code != 1 || !strings.Contains(stderr, "skipped "+fragile+": a scenario of the fragile design two-writes") ||
		!strings.Contains(stderr, "handoff enumerate: nothing to enumerate") || stdout != "" {
		t.Errorf("enumerate of a fragile scenario: got exit %d, stdout %q, stderr %q; want 1, the skip and nothing to enumerate", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "enumerate", fragile, real)
	if code != 0 || !strings.Contains(stderr, "skipped "+fragile) || !strings.Contains(stdout, "in 1 scenarios") ||
		!strings.Contains(stdout, "skipped 1 scenarios of fragile designs") {
		t.Errorf("enumerate of a fragile and a real scenario: got exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestREADMECommandLine keeps the README's command-line block equal to the
// usage lines of the command table.
func TestREADMECommandLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("## The command line\n\n```\n")
	for _, c := range commands {
		want.WriteString(c.usageLine() + "\n")
	}
	want.WriteString("```\n")
	if !strings.Contains(string(b), want.String()) {
		t.Errorf("README.md has no block of the usage lines; want\n%s", want.String())
	}
}
