package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestStatusText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		results map[string]int
		rate    float64
		workers int
		want    string
	}{
		{map[string]int{}, 0, 4, "work: sent 0, retrying 0, blocked 0, stale 0 | 0.0/s, 4 workers"},
		{map[string]int{"sent": 120, "pending": 3, "blocked": 1, "stale": 2}, 45.25, 8, "work: sent 120, retrying 3, blocked 1, stale 2 | 45.2/s, 8 workers"},
		{map[string]int{"sent": 10000, "error": 7}, 234.5, 8, "work: sent 10000, retrying 0, blocked 0, stale 0, failed 7 | 234.5/s, 8 workers"},
	} {
		got := statusText(tt.results, tt.rate, tt.workers)
		if got != tt.want {
			t.Errorf("statusText(%v, %v, %d): got %q, want %q", tt.results, tt.rate, tt.workers, got, tt.want)
		}
		if len(got) >= 80 {
			t.Errorf("statusText(%v): %d columns, want fewer than 80", tt.results, len(got))
		}
	}
}

func TestRate(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		window []sample
		want   float64
	}{
		{nil, 0},
		{[]sample{{at, 5}}, 0},
		{[]sample{{at, 5}, {at, 9}}, 0},
		{[]sample{{at, 10}, {at.Add(time.Second), 20}, {at.Add(2 * time.Second), 50}}, 20},
	} {
		if got := rate(tt.window); got != tt.want {
			t.Errorf("rate(%v): got %v, want %v", tt.window, got, tt.want)
		}
	}
}

// TestStatusLine: a log line clears the status line and is written
// whole; a draw rewrites the line in place, once per change; clear erases
// it.
func TestStatusLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	s := &statusLine{w: &b}
	s.Write([]byte("first log line\n")) // nothing shown: nothing to clear
	s.draw("status 1")
	s.draw("status 1")
	s.Write([]byte("second log line\n"))
	s.draw("status 2")
	s.draw("status 3")
	s.clear()
	s.clear()
	want := "first log line\n" + "\rstatus 1\x1b[K" + "\r\x1b[K" + "second log line\n" + "\rstatus 2\x1b[K" + "\rstatus 3\x1b[K" + "\r\x1b[K"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// statusDraw and statusClear match what a status line writes.
var (
	statusDraw  = regexp.MustCompile("\rwork: sent [0-9]+, retrying [0-9]+, blocked [0-9]+, stale [0-9]+ \\| [0-9.]+/s, [0-9]+ workers\x1b\\[K")
	statusClear = regexp.MustCompile("\r\x1b\\[K")
)

// TestWorkStatusLine runs work with stderr taken for a terminal: the
// status line is drawn, and erased before every log line and at the end,
// so that without it the log lines are what they are without a terminal.
// It replaces the package's terminal check and redraw interval, which
// every run of work reads, so it runs alone, before the parallel tests:
// beside them, another test's work took its stderr for a terminal too,
// and drew the status line into a JSON log.
func TestWorkStatusLine(t *testing.T) {
	defer func(every time.Duration) { statusEvery = every }(statusEvery)
	statusEvery = time.Millisecond
	stderrIsTerminal = func(io.Writer) bool { return true }
	defer func() { stderrIsTerminal = isTerminal }()
	const rows = 40
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	code, stdout, stderr := runCLI(t, "work", "--app", app, "--crm", crm, "--workers", "2", "--worker", "w", "--until-idle")
	if code != 0 {
		t.Fatalf("work: exit %d: %s%s", code, stdout, stderr)
	}
	draws := statusDraw.FindAllString(stderr, -1)
	if len(draws) < 2 {
		t.Fatalf("%d status lines drawn, want two or more: %q", len(draws), stderr)
	}
	if !strings.HasPrefix(draws[0], "\rwork: sent 0, ") {
		t.Errorf("the first status line: %q, want it drawn before any delivery", draws[0])
	}
	logs := statusClear.ReplaceAllString(statusDraw.ReplaceAllString(stderr, ""), "")
	lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
	deliveries := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "time=") || strings.ContainsAny(l, "\r\x1b") {
			t.Errorf("a log line broken by the status line: %q", l)
		}
		if strings.Contains(l, "msg=delivery") {
			deliveries++
		}
	}
	if deliveries != rows {
		t.Errorf("%d delivery log lines, want %d", deliveries, rows)
	}
	// A status line is followed by another, or erased: a log line never
	// starts where one ends, and none is left at the end.
	for _, loc := range statusDraw.FindAllStringIndex(stderr, -1) {
		if rest := stderr[loc[1]:]; !strings.HasPrefix(rest, "\r") {
			t.Errorf("a status line followed by %q, want it erased first", rest[:min(len(rest), 40)])
			break
		}
	}
}

// TestWorkPipeHasNoStatusLine runs work in a process of its own whose
// stderr is a pipe: no status line, no terminal control, only log lines.
func TestWorkPipeHasNoStatusLine(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) {
		t.Error("a pipe or a buffer taken for a terminal")
	}
	w.Close()
	const rows = 5
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	var stdout bytes.Buffer
	cmd, stderr := startCLI(t, &stdout, "work", "--app", app, "--crm", crm, "--workers", "2", "--until-idle")
	logs, err := io.ReadAll(stderr)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("work: %v: %s", err, logs)
	}
	if bytes.ContainsAny(logs, "\r\x1b") {
		t.Errorf("terminal control on a pipe: %q", logs)
	}
	if n := bytes.Count(logs, []byte("msg=delivery")); n != rows {
		t.Errorf("%d delivery log lines, want %d:\n%s", n, rows, logs)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(logs), "\n"), "\n") {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("not a log line: %q", l)
		}
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("outbox: 0 pending, %d sent", rows)) {
		t.Errorf("work: stdout %q", stdout.String())
	}
}
