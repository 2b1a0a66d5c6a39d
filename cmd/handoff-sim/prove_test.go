package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProveUsageErrors: prove refuses bad input with exit status 2, one
// line that says what is wrong, and a pointer to its help, before it
// runs anything.
func TestProveUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--reduce", "all"}, `--reduce is "all", want both, keys, none, workers`},
		{[]string{"--cases", "3"}, "--cases is 3, want 1 or 2"},
		{[]string{"--cases", "0"}, "--cases is 0, want 1 or 2"},
		{[]string{"--workers", "A,A"}, `--workers is "A,A", want names such as A,B,P`},
		{[]string{"--workers", "A,"}, `--workers is "A,", want names such as A,B,P`},
		{[]string{"--workers", "default"}, `--workers is "default"`},
		{[]string{"--design", "nope"}, `unknown design "nope"`},
		{[]string{"--time", "1d"}, `--time is "1d", not a duration`},
		{[]string{"--depth", "many"}, `invalid value "many" for flag -depth`},
		{[]string{"--dir", filepath.Join(dir, "missing")}, "no such file or directory"},
		{[]string{"--save", file}, "a file, not a folder"},
		{[]string{"--report", dir}, "a folder, not a file"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"prove"}, tt.args...)...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || stdout != "" || len(lines) != 2 || !strings.Contains(lines[0], tt.want) || lines[1] != "see handoff-sim help prove" {
			t.Errorf("prove %v: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// TestProveRealDesign: prove on the real design completes its bound and
// says what it proved.
func TestProveRealDesign(t *testing.T) {
	out := mustRun(t, "prove", "--depth", "2", "--dir", t.TempDir())
	for _, want := range []string{
		"design handoff: no sequence of up to 2 steps breaks an invariant\n",
		"  bound:       depth 2, 2 completed\n",
		"  alphabet:    cases case-1, case-2; workers A, B, P; configs config retention=60000",
		"  reduction:   both\n",
		"  transitions: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary has no %q:\n%s", want, out)
		}
	}
}

// TestProveCatchesAFragileDesign: prove finds a fragile design's shortest
// counterexample, exits 0, and saves it as a corpus file with its report
// beside it.
func TestProveCatchesAFragileDesign(t *testing.T) {
	save := t.TempDir()
	out := mustRun(t, "prove", "--design", "lease-never-expires", "--depth", "4", "--save", save, "--dir", t.TempDir())
	if !strings.Contains(out, "design lease-never-expires breaks invariant 7 in 3 steps, and no shorter sequence does\n") ||
		!strings.Contains(out, "  bound:       depth 4, 2 completed\n") {
		t.Errorf("the summary does not say it was caught in 3 steps after completing 2:\n%s", out)
	}
	for _, name := range []string{"found-lease-never-expires-invariant-7.txt", "found-lease-never-expires-invariant-7.html"} {
		if _, err := os.Stat(filepath.Join(save, name)); err != nil {
			t.Errorf("not saved: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(save, "found-lease-never-expires-invariant-7.txt"))
	if err != nil || !strings.HasPrefix(string(b), "# Found by exhaustive search: design lease-never-expires breaks invariant 7") {
		t.Errorf("the saved scenario does not say how it was found: %v\n%s", err, b)
	}
}

// TestProveStoppedFails: a search its time limit stops fails, and says
// which depth it completed.
func TestProveStoppedFails(t *testing.T) {
	code, out, stderr := runCLI(t, "prove", "--depth", "50", "--time", "1ms", "--dir", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "handoff-sim prove: stopped by the time limit with depth ") || !strings.Contains(stderr, " of 50 completed; to run it again: ") {
		t.Errorf("exit %d, stderr %q; want 1 and what it completed", code, stderr)
	}
	if !strings.Contains(out, "(stopped by the time limit at depth ") {
		t.Errorf("the summary does not say it stopped:\n%s", out)
	}
}

// TestProveLanes: prove with lanes in processes of their own reaches the
// same states, runs the same transitions and finds the same shortest
// counterexample as in one lane.
func TestProveLanes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: lanes in processes of their own; run without -short")
	}
	// withoutTime is a summary without its line of time and steps
	// replayed, which the lanes change, and without the diff of where the
	// model and the system first disagreed, which go-cmp prints
	// differently in every process.
	withoutTime := func(summary string) string {
		summary, _, _ = strings.Cut(summary, "the model and the system first disagreed")
		var kept []string
		for _, l := range strings.Split(summary, "\n") {
			if !strings.HasPrefix(l, "  time:") && !strings.HasPrefix(l, "  transitions:") {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "\n")
	}
	for _, args := range [][]string{{"--depth", "2"}, {"--design", "no-lease", "--depth", "3"}} {
		one := mustRun(t, append([]string{"prove", "--parallel", "1", "--dir", t.TempDir()}, args...)...)
		two := mustRun(t, append([]string{"prove", "--parallel", "2", "--dir", t.TempDir()}, args...)...)
		if withoutTime(one) != withoutTime(two) {
			t.Errorf("prove %v: one lane printed\n%s\ntwo lanes\n%s", args, one, two)
		}
	}
}
