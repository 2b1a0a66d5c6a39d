package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/internal/cli/clitest"
	"github.com/outboxlab/handoff/system"
)

// TestJSONDocumentation checks docs/json.md against real output of the
// product's commands (see clitest.JSONDocumented).
func TestJSONDocumentation(t *testing.T) {
	t.Parallel()
	clitest.JSONDocumented(t, filepath.Join("..", "..", "docs", "json.md"), jsonOutputs)
}

// jsonOutputs lists every JSON output of the product's commands, by its
// section in docs/json.md, with a function that produces real examples
// of it. Between them the examples must print every documented field,
// each with a value that is not null at least once. Documenting a new
// output is one section there and one entry here.
var jsonOutputs = []clitest.JSONOutput{
	{Section: "demo --json", Lines: false, Outputs: func(t *testing.T) []string {
		return []string{mustRun(t, "demo", "--dir", filepath.Join(t.TempDir(), "demo"), "--json")}
	}},
	{Section: "inspect --json", Lines: false, Outputs: func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db")) // the same CRM before it held a task
		mustRun(t, "deliver", "--app", app, "--crm", crm)
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		mustRun(t, "reconcile", "case-105", "--app", app, "--absent", "--reason", "not in the CRM")
		mustRun(t, "approve", "--app", app, "--case", "case-106", "--title", "Call back")
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline") // case-105 again: a last error
		lease(t, app, "w")                                                      // case-106
		return []string{
			mustRun(t, "inspect", "--app", app, "--json"),
			mustRun(t, "inspect", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "inspect", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{Section: "check --json", Lines: false, Outputs: func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db"))
		mustRun(t, "deliver", "--app", app, "--crm", crm)
		return []string{
			mustRun(t, "check", "--app", app, "--json"),
			mustRun(t, "check", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "check", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{Section: "stale --json", Lines: false, Outputs: func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		none := mustRun(t, "stale", "--app", app, "--older-than", "1h", "--json")
		for range 3 {
			mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		}
		mustRun(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		lease(t, app, "w")
		return []string{none, attentionJSON(t, "stale", "--app", app, "--older-than", "0s", "--json")}
	}},
	{Section: "trial --json", Lines: false, Outputs: func(t *testing.T) []string {
		return []string{passingTrial(t).stdout, brokenTrial(t).stdout}
	}},
	{Section: "check-receiver --json", Lines: false, Outputs: func(t *testing.T) []string {
		code, none, stderr := runCLI(t, "check-receiver", notFound(t), "--json")
		if code != 1 || !strings.Contains(none, `"ok": false`) {
			t.Fatalf("check-receiver of an endpoint that is no receiver: exit %d, want 1 and ok false: %s%s", code, none, stderr)
		}
		return []string{mustRun(t, "check-receiver", servedCRM(t, 0), "--json"), none}
	}},
	// Two runs of work print the lines of a worker's start and stop and
	// of deliveries sent, retried and blocked; the lines no run can be
	// made to print on demand (a database that refuses a claim, a failure
	// after the attempt was counted) come from the pool's own logging.
	{Section: "work --log-format json", Lines: true, Outputs: func(t *testing.T) []string {
		dir := t.TempDir()
		app, other, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "other.db"), filepath.Join(dir, "crm.db")
		flaky := filepath.Join(dir, "flaky.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "approve", "--app", other, "--case", "case-105", "--title", "Call back")
		mustRun(t, "approve", "--app", flaky, "--case", "case-106", "--title", "Call back")
		mustRun(t, "approve", "--app", flaky, "--case", "case-107", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		// A worker of a process that ended holds case-104's lease.
		ended := exec.Command(os.Args[0], "-test.run=^$")
		if err := ended.Run(); err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		lease(t, app, fmt.Sprintf("%s:%d:1", host, ended.Process.Pid))
		var lines []string
		for _, args := range [][]string{
			{"--app", app, "--crm", crm, "--metrics-addr", "127.0.0.1:0"},
			{"--app", other, "--crm-url", failingReceiver(t), "--max-attempts", "2", "--backoff-base", "0"},
			{"--app", flaky, "--crm-url", recoveringReceiver(t, filepath.Join(dir, "flaky-crm.db")), "--backoff-base", "1ms"},
		} {
			code, _, stderr := runCLI(t, append(append([]string{"work"}, args...), "--workers", "1", "--worker", "w", "--until-idle", "--log-format", "json")...)
			if code != 0 {
				t.Fatalf("work %v: exit %d: %s", args, code, stderr)
			}
			lines = append(lines, strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")...)
		}
		o, err := system.Open(t.Context(), app, system.Options{Worker: "w:1"})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		var b strings.Builder
		p := &system.Pool{Log: newLogger(&b, "json")}
		p.ClaimRefused(o, fmt.Errorf("%w: claiming the next row: database is locked", system.ErrBusy))
		p.LogDelivery(t.Context(), o, nil, system.Delivery{}, &system.AttemptError{Key: system.KeyPrefix + "case-104", Attempt: 1, MaxAttempts: 3,
			Err: errors.New("local: recording the answer: database is busy")})
		return append(lines, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")...)
	}},
}

// recoveringReceiver is the CRM at path over HTTP, made there, answering
// its first POST /tasks 503: the worker sees it stop answering, then
// answer again.
func recoveringReceiver(t *testing.T, path string) string {
	t.Helper()
	mustRun(t, "crm", "init", "--crm", path)
	srv := crmServer(t, path)
	var posts atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && posts.Add(1) == 1 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// failingReceiver is a receiver that states its contract and answers
// every POST /tasks 500: every delivery to it fails, transiently.
func failingReceiver(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/contract":
			json.NewEncoder(w).Encode(receiver.Contract{Identity: "failing", MaxKeyLength: receiver.MaxKeyLength, MaxBodyBytes: receiver.MaxBodyBytes})
		default:
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// problemJSON runs the command line, fails the test unless it exits 1 for
// a problem with the files, and returns its stdout.
func problemJSON(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 1 || !strings.Contains(stdout, `"problems": [`) {
		t.Fatalf("%v: exit %d, want 1 and problems: %s%s", args, code, stdout, stderr)
	}
	return stdout
}

// attentionJSON runs the command line, fails the test unless it exits 3
// for something that needs a person, and returns its stdout.
func attentionJSON(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 3 {
		t.Fatalf("%v: exit %d, want 3: %s%s", args, code, stdout, stderr)
	}
	return stdout
}
