package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/pgtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliTimeout bounds a command a test runs in-process: one that never
// ends (a worker that never finds the outbox idle) is interrupted and
// fails its test, instead of holding the package until go test's own
// timeout.
const cliTimeout = 2 * time.Minute

// runCLI runs the command line in-process and returns its exit status,
// stdout and stderr.
func runCLI(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("handoff %s: still running after %v, interrupted", strings.Join(args, " "), cliTimeout)
	}
	return code, stdout.String(), stderr.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	for _, args := range [][]string{
		{},
		{"launch"},
		{"approve", "--app", app, "--title", "t"},
		{"approve", "--app", app, "--case", "c", "--title", "t", "extra"},
		{"deliver", "--app", app},
		{"deliver", "--app", app, "--crm", "crm.db", "--fault", "meteor"},
		{"inspect"},
		{"explore", "--checks", "many"},
		{"explore", "--design", "nonexistent"},
		{"explore", "--transport", "pigeon"},
		{"explore", "--transport", "http", "--design", "check-then-create"},
		{"replay", "--transport", "HTTP"},
		{"demo", "--json=maybe"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: got exit %d and stderr %q, want 2 and a message", args, code, stderr)
		}
	}
	if _, err := os.Stat(app); !os.IsNotExist(err) {
		t.Errorf("a usage error created %s", app)
	}
}

// TestApproveDeliverInspect runs the by-hand commands on an app database
// that approve creates, a file or a PostgreSQL schema named by URL (the
// CRM is a file on both), and reads the outcome with inspect --json.
func TestApproveDeliverInspect(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { approveDeliverInspect(t, filepath.Join(t.TempDir(), "app.db")) })
	t.Run("postgres", func(t *testing.T) { approveDeliverInspect(t, pgtest.URL(t)) })
}

func approveDeliverInspect(t *testing.T, app string) {
	crm := filepath.Join(t.TempDir(), "crm.db")
	steps := []struct {
		args   []string
		code   int
		stdout string // a part of stdout that must appear
	}{
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Call back"}, 0, "approved harbor:create-followup:v1:case-104: outbox row pending, 0 of 3 attempts"},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "lost-reply", "--create-crm"}, 0, "pending harbor:create-followup:v1:case-104: transient failure (attempt 1 of 3)"},
		{[]string{"deliver", "--app", app, "--crm", crm, "--fault", "crash-after-reply"}, 1, ""},
		{[]string{"deliver", "--app", app, "--crm", crm}, 0, "sent harbor:create-followup:v1:case-104: CRM task 1 (attempt 3 of 3)"},
		{[]string{"deliver", "--app", app, "--crm", crm}, 0, "idle: nothing pending"},
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Call back"}, 0, "outbox row sent, 3 of 3 attempts, CRM task 1"},
		{[]string{"inspect", "--app", app, "--crm", crm}, 0, "0 pending, 1 sent, 0 blocked"},
		{[]string{"check", "--app", app, "--crm", crm}, 0, ""},
		{[]string{"stale", "--app", app, "--older-than", "1h"}, 0, ""},
		{[]string{"upgrade", "--app", app}, 0, ""},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(stdout, s.stdout) {
			t.Fatalf("%v: got exit %d, stdout %q, stderr %q; want exit %d and %q", s.args, code, stdout, stderr, s.code, s.stdout)
		}
	}
	code, stdout, _ := runCLI(t, "inspect", "--app", app, "--crm", crm, "--json")
	var got struct {
		Counts map[string]int `json:"counts"`
		Outbox []struct {
			Key       string  `json:"key"`
			State     string  `json:"state"`
			Attempts  int     `json:"attempts"`
			RemoteID  *int64  `json:"remote_id"`
			LastError *string `json:"last_error"`
		} `json:"outbox"`
		CRMTasks []struct {
			ID  int64  `json:"id"`
			Key string `json:"key"`
		} `json:"crm_tasks"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if got.Counts["sent"] != 1 || len(got.Outbox) != 1 || got.Outbox[0].Attempts != 3 || got.Outbox[0].RemoteID == nil ||
		*got.Outbox[0].RemoteID != 1 || got.Outbox[0].LastError != nil || len(got.CRMTasks) != 1 {
		t.Errorf("inspect --json: got %+v", got)
	}
}

func TestRefusedInputLeavesDatabasesAsTheyWere(t *testing.T) {
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	garbage := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(garbage, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"approve", "--app", app, "--case", "case-104", "--title", "Call back"},
		{"deliver", "--app", app, "--crm", crm, "--fault", "offline", "--create-crm"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	before := readFiles(t, app, crm, garbage)
	for _, tt := range []struct {
		args   []string
		reason string
	}{
		{[]string{"approve", "--app", app, "--case", "case-104", "--title", "Another title"}, "key conflict"},
		{[]string{"approve", "--app", app, "--case", "case/104", "--title", "Call back"}, "invalid input"},
		{[]string{"approve", "--app", app, "--case", "case-105", "--title", " "}, "invalid input"},
		{[]string{"approve", "--app", crm, "--case", "case-105", "--title", "t"}, "not this kind"},
		{[]string{"approve", "--app", garbage, "--case", "case-105", "--title", "t"}, "not this kind"},
		{[]string{"deliver", "--app", filepath.Join(dir, "missing.db"), "--crm", crm}, "does not exist"},
		{[]string{"deliver", "--app", crm, "--crm", app}, "not this kind"},
		{[]string{"inspect", "--app", app, "--crm", filepath.Join(dir, "missing.db")}, "does not exist"},
		{[]string{"inspect", "--app", garbage}, "not this kind"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.reason) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: got exit %d, stderr %q; want 1 and one line with %q", tt.args, code, stderr, tt.reason)
		}
	}
	if after := readFiles(t, app, crm, garbage); !equalFiles(before, after) {
		t.Error("refused commands changed a database file")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Error("a refused command created missing.db")
	}
}

func readFiles(t *testing.T, paths ...string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = b
	}
	return m
}

func equalFiles(a, b map[string][]byte) bool {
	for p := range a {
		if !bytes.Equal(a[p], b[p]) {
			return false
		}
	}
	return len(a) == len(b)
}

func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	code, stdout, _ := runCLI(t, "demo", "--dir", dir, "--json")
	var d struct {
		OperationKey string `json:"operation_key"`
		NetworkCalls *int   `json:"network_calls"`
		Steps        []struct {
			Step         string `json:"step"`
			Result       string `json:"result"`
			CRMTaskCount int    `json:"crm_task_count"`
			Attempts     int    `json:"attempts"`
			RemoteID     *int64 `json:"remote_id"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); code != 0 || err != nil {
		t.Fatalf("demo --json: exit %d, %v", code, err)
	}
	if d.NetworkCalls == nil || *d.NetworkCalls != 0 || len(d.Steps) != 3 || d.Steps[0].RemoteID != nil ||
		d.Steps[1].Result != "sent" || *d.Steps[1].RemoteID != 1 || d.Steps[2].Result != "idle" {
		t.Errorf("demo --json: got %+v", d)
	}
	if code, _, stderr := runCLI(t, "demo", "--dir", dir); code != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("demo on an existing folder: got exit %d, %q; want 1", code, stderr)
	}
}

func TestExploreJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "explore", "--checks", "20", "--seed", "42", "--json", "--dir", t.TempDir())
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --json: exit %d, %v, stderr %s", code, err, stderr)
	}
	for _, k := range []string{"checks", "steps", "failures", "steps_per_second", "faults", "transitions", "seed"} {
		if _, ok := s[k]; !ok {
			t.Errorf("explore --json: no %q in %v", k, s)
		}
	}
	if s["checks"] != 20.0 || s["failures"] != 0.0 || s["seed"] != 42.0 {
		t.Errorf("explore --json: got %v", s)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	if code, stdout, stderr := runCLI(t, "replay", "--quiet"); code != 0 || !strings.Contains(stdout, "every output matches") {
		t.Fatalf("replay of the embedded corpus: exit %d, %s%s", code, stdout, stderr)
	}
	file := filepath.Join(t.TempDir(), "wrong.txt")
	text := "approve case=case-104 title=\"Call back\"\n----\napproved something else\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "replay", file); code != 1 || !strings.Contains(stderr, file+":1: ") {
		t.Errorf("replay of a wrong expectation: got exit %d, stderr %q; want 1 and file:line", code, stderr)
	}
}

// TestOverHTTP replays and explores over HTTP from the command line: a
// file of a design that runs in process only is skipped with its reason,
// and the summaries name the transport.
func TestOverHTTP(t *testing.T) {
	real := filepath.Join("..", "..", "corpus", "lost-reply-demo.txt")
	own := filepath.Join("..", "..", "corpus", "fragile", "check-then-create.txt")
	code, stdout, stderr := runCLI(t, "replay", "--quiet", "--transport", "http", real, own)
	if code != 0 || !strings.Contains(stdout, "replayed 1 files, 4 steps over http: every output matches") ||
		!strings.Contains(stderr, "skipped "+own+": design check-then-create has a receiver of its own") {
		t.Errorf("replay --transport http: got exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "replay", "--transport", "http", own); code != 1 || !strings.Contains(stderr, "nothing to replay over http") {
		t.Errorf("replay --transport http of a design that runs in process only: got exit %d, stderr %q; want 1", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "explore", "--checks", "3", "--seed", "5", "--transport", "http", "--json", "--dir", t.TempDir())
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s["transport"] != "http" || s["sequences"] != 3.0 {
		t.Errorf("explore --transport http --json: exit %d, %v, %v, stderr %s", code, err, s, stderr)
	}
	if !strings.Contains(stderr, "exploring design handoff (http) with seed 5; to run it again: go run ./cmd/handoff explore --design handoff --steps 50 --transport http --seed 5") {
		t.Errorf("explore --transport http: stderr %q does not say how to run it again over http", stderr)
	}
}

func TestDesigns(t *testing.T) {
	code, stdout, _ := runCLI(t, "designs")
	if code != 0 || strings.Count(stdout, "\n") != len(designs.All()) || !strings.Contains(stdout, "check-then-create") {
		t.Errorf("designs: exit %d, want %d lines:\n%s", code, len(designs.All()), stdout)
	}
	code, stdout, _ = runCLI(t, "designs", "two-writes")
	if code != 0 || !strings.Contains(stdout, "caught by invariant 2 in 1 step") {
		t.Errorf("designs two-writes: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "designs", "three-writes"); code != 2 || !strings.Contains(stderr, "unknown design") {
		t.Errorf("designs three-writes: got exit %d, %q; want 2", code, stderr)
	}
	if code, _, _ := runCLI(t, "designs", "--measure", "-1"); code != 2 {
		t.Errorf("designs --measure -1: got exit %d, want 2", code)
	}
}

func TestExploreFragileDesign(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "explore", "--design", "drop-on-error", "--seed", "1", "--dir", t.TempDir())
	var lines []string // with runs of spaces folded, so that column widths do not matter
	for _, l := range strings.Split(stdout, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	folded := strings.Join(lines, "\n")
	for _, want := range []string{
		"caught: the minimal counterexample of drop-on-error, 2 steps",
		"# step result outbox attempts tasks for key\n1 approve case=case-1 title=\"Call back\" approved pending 0 0\n2 deliver fault=",
		"violation: invariant 2",
		"first disagreed at step 2 (-model +system)",
	} {
		if code != 0 || !strings.Contains(folded, want) {
			t.Fatalf("explore --design drop-on-error: exit %d, no %q in:\n%s%s", code, want, stdout, stderr)
		}
	}
	code, stdout, _ = runCLI(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir())
	var s struct {
		Design    string `json:"design"`
		Scenario  string `json:"scenario"`
		Violation struct {
			Invariant int `json:"invariant"`
			Steps     int `json:"steps"`
		} `json:"violation"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --design --json: exit %d, %v", code, err)
	}
	if s.Design != "two-writes" || s.Violation.Invariant != 2 || s.Violation.Steps != 1 || !strings.Contains(s.Scenario, "design name=two-writes") {
		t.Errorf("explore --design two-writes --json: got %+v", s)
	}
}

// TestEnumerate crashes the embedded corpus at every fault point through
// the CLI; with -short, one scenario file (TestCrashPointEnumeration
// crashes the whole corpus in the root package either way).
func TestEnumerate(t *testing.T) {
	t.Parallel()
	args := []string{"enumerate"}
	if testing.Short() {
		args = append(args, filepath.Join("..", "..", "corpus", "crash-after-reply.txt"))
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, " 0 failed") {
		t.Errorf("%s: exit %d:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
}
