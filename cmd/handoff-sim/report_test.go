package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report, and the reports replay and explore write.

// TestReport writes the report of a fragile design's counterexample
// beside a copy of it, and at --out.
func TestReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text, err := os.ReadFile(filepath.Join("..", "..", "corpus", "fragile", "no-fencing.txt"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "no-fencing.txt")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", file)
	want := "wrote " + filepath.Join(dir, "no-fencing.html") + ": 6 steps, design no-fencing broke invariant 8 (every recorded outcome comes from the holder of the row's current fence)\n"
	if code != 0 || stdout != want {
		t.Fatalf("report: exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
	}
	page, err := os.ReadFile(filepath.Join(dir, "no-fencing.html"))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "design no-fencing broke invariant 8 at step 6") {
		t.Errorf("the report beside the file: %v", err)
	}
	out := filepath.Join(dir, "sub", "elsewhere.html")
	if code, stdout, _ := runCLI(t, "report", "--out", out, file); code != 0 || !strings.HasPrefix(stdout, "wrote "+out+": ") {
		t.Errorf("report --out: exit %d, %q", code, stdout)
	}
	if again, err := os.ReadFile(out); err != nil || string(again) != string(page) {
		t.Errorf("the same file gave another report (%v)", err)
	}
}

// TestReportBadInput: a usage error names what is wrong and writes
// nothing; a file that cannot be read fails.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(file, []byte("approve case=a title=b\n----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "report takes one scenario file, got 0"},
		{[]string{"report", file, file}, 2, "report takes one scenario file, got 2"},
		{[]string{"report", "--out", file, file}, 2, "--out names the scenario file itself"},
		{[]string{"report", "--transport", "pigeon", file}, 2, "--transport"},
		{[]string{"report", filepath.Join(dir, "missing.txt")}, 2, "no such file"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("bad input left files: %v", entries)
	}
	if text, _ := os.ReadFile(file); string(text) != "approve case=a title=b\n----\n" {
		t.Errorf("the scenario file changed: %q", text)
	}
}

// TestReplayWritesReports: a named file that fails gets a report beside
// it, and replay says where; --report writes it elsewhere; a file that
// passes gets none.
func TestReplayWritesReports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wrong, right := filepath.Join(dir, "wrong.txt"), filepath.Join(dir, "right.txt")
	if err := os.WriteFile(wrong, []byte("approve case=case-104 title=\"Call back\"\n----\napproved something else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("..", "..", "corpus", "lost-reply-demo.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(right, text, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "replay", "--quiet", wrong, right)
	if code != 1 || !strings.Contains(stderr, "wrote the report of "+wrong+": "+filepath.Join(dir, "wrong.html")) {
		t.Errorf("replay: exit %d, stderr %q", code, stderr)
	}
	// The mismatch shows the lines that differ, not both outputs whole.
	if !strings.Contains(stderr, "output differs (-want +got):\n-approved something else\n+approved harbor:create-followup:v1:case-104") {
		t.Errorf("replay does not show the lines that differ:\n%s", stderr)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "wrong.html")); err != nil || !strings.Contains(string(page), "1 output differs from the file") {
		t.Errorf("the report of the failing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "right.html")); !os.IsNotExist(err) {
		t.Errorf("a file that passed got a report (%v)", err)
	}
	elsewhere := filepath.Join(t.TempDir(), "r.html")
	if code, _, stderr := runCLI(t, "replay", "--quiet", "--report", elsewhere, wrong); code != 1 || !strings.Contains(stderr, "wrote the report of "+wrong+": "+elsewhere) {
		t.Errorf("replay --report: exit %d, stderr %q", code, stderr)
	}
}

// TestExploreReport: explore --report writes what the run reached as
// charts, without a failure too.
func TestExploreReport(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.html")
	code, _, stderr := runCLI(t, "explore", "--checks", "3", "--seed", "1", "--parallel", "1", "--report", path, "--dir", t.TempDir())
	if code != 0 || !strings.Contains(stderr, "wrote the report: "+path) {
		t.Fatalf("explore --report: exit %d, stderr %q", code, stderr)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"design handoff: what 3 sequences reached", "Faults that took effect", "Outbox transitions", "Attempts, by their number", "0: not reached"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
