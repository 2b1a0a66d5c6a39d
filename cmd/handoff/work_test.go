package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// approveRows records n approvals, case-0 to case-(n-1), in the app
// database at path.
func approveRows(t *testing.T, path string, n int) {
	t.Helper()
	app, err := system.Open(t.Context(), path, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for i := range n {
		if _, err := app.RecordApproval(t.Context(), fmt.Sprint("case-", i), "Call back"); err != nil {
			t.Fatal(err)
		}
	}
}

// lease claims the oldest eligible row of the app database at path as
// worker, leaves its lease in place (as a worker in the middle of a send
// does), and returns its key.
func lease(t *testing.T, path, worker string) string {
	t.Helper()
	app, err := system.Open(t.Context(), path, system.Options{Worker: worker})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	c, d, err := app.ClaimNext(t.Context(), 0)
	if err != nil || d.Result != system.ResultPending {
		t.Fatalf("claiming a row: %v, %+v", err, d)
	}
	return c.Key
}

// delivered fails the test unless every row of the app database is sent
// or, when pendingOK, pending; no row may be left leased unless crashed
// (a process died holding it), the CRM must hold one task per sent key and
// no other, and check must pass.
func delivered(t *testing.T, appPath, crmPath string, rows int, pendingOK, crashed bool) (sent int) {
	t.Helper()
	snap, tasks := filesState(t, appPath, crmPath)
	if len(snap.Outbox) != rows {
		t.Errorf("%d outbox rows, want %d", len(snap.Outbox), rows)
	}
	taskOf := map[string]int64{}
	for _, task := range tasks {
		if _, twice := taskOf[task.Key]; twice {
			t.Errorf("the CRM holds two tasks for %s", task.Key)
		}
		taskOf[task.Key] = task.ID
	}
	for _, r := range snap.Outbox {
		switch {
		case r.LeaseOwner != "" && !crashed:
			t.Errorf("%s is %s and still leased by %s", r.Key, r.State, r.LeaseOwner)
		case r.State == system.Sent:
			sent++
			if taskOf[r.Key] != r.RemoteID {
				t.Errorf("%s is sent as task %d, the CRM holds task %d for it", r.Key, r.RemoteID, taskOf[r.Key])
			}
		case r.State != system.Pending || !pendingOK && !crashed:
			t.Errorf("%s is %s (%s), want sent", r.Key, r.State, r.LastError)
		}
	}
	if len(tasks) != sent {
		t.Errorf("the CRM holds %d tasks for %d sent rows", len(tasks), sent)
	}
	if code, stdout, stderr := runCLI(t, "check", "--app", appPath, "--crm", crmPath); code != 0 {
		t.Errorf("check: exit %d: %s%s", code, stdout, stderr)
	}
	return sent
}

func TestWorkUntilIdle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		rows, workers int
		logFormat     string
		logLine       string
	}{
		{5, 1, "text", "msg=delivery worker=w:1 key=harbor:create-followup:v1:case-0 result=sent attempt=1 remote_id=1 last_error=\"\""},
		{100, 4, "json", `"msg":"delivery","worker":"w:`},
	} {
		t.Run(fmt.Sprintf("%d rows, %d workers", tt.rows, tt.workers), func(t *testing.T) {
			dir := t.TempDir()
			app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
			approveRows(t, app, tt.rows)
			mustRun(t, "crm", "init", "--crm", crm)
			code, stdout, stderr := runCLI(t, "work", "--app", app, "--crm", crm, "--workers", fmt.Sprint(tt.workers), "--worker", "w",
				"--until-idle", "--log-format", tt.logFormat)
			if code != 0 {
				t.Fatalf("work: exit %d: %s%s", code, stdout, stderr)
			}
			if want := fmt.Sprintf("work: %s by %s in ", words.HowMany(tt.rows, "delivery"), words.HowMany(tt.workers, "worker")); !strings.Contains(stdout, want) ||
				!strings.Contains(stdout, fmt.Sprintf("; the attempts ended sent %d\n", tt.rows)) ||
				!strings.Contains(stdout, fmt.Sprintf("outbox: 0 pending, %d sent, 0 blocked", tt.rows)) {
				t.Errorf("work: stdout %q, want %q and the outbox", stdout, want)
			}
			if n := strings.Count(stderr, "delivery"); n != tt.rows || !strings.Contains(stderr, tt.logLine) {
				t.Errorf("work: %d log lines of deliveries, want %d, one with %q:\n%s", n, tt.rows, tt.logLine, stderr)
			}
			delivered(t, app, crm, tt.rows, false, false)
		})
	}
}

// TestWorkRefusesWrongFiles: work delivers only from an existing app
// database to an existing CRM, the one the app delivers to.
func TestWorkRefusesWrongFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "t")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	mustRun(t, "crm", "init", "--crm", "other.db")
	mustRun(t, "deliver", "--app", "app.db", "--crm", "crm.db")
	before := folder(t, dir)
	refused(t, "the app database missing.db does not exist", "work", "--app", "missing.db", "--crm", "crm.db", "--until-idle")
	refused(t, "the CRM database typo.db does not exist; create it with handoff crm init --crm typo.db", "work", "--app", "app.db", "--crm", "typo.db", "--until-idle")
	refused(t, "delivers to CRM", "work", "--app", "app.db", "--crm", "other.db", "--until-idle")
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused work changed the folder (-before +after):\n%s", diff)
	}
}

// startCLI starts the command line in a process of its own: the test
// binary, which runs main (see TestMain).
func startCLI(t *testing.T, stdout io.Writer, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // a test that stopped early left it running
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stderr
}

// TestWorkInterrupted sends SIGINT to a work process once it has
// delivered: it must stop claiming, finish and record what it has in
// flight, and exit 0, leaving every row sent or pending and none leased.
func TestWorkInterrupted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: delivers in a process of its own")
	}
	const rows = 1000
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	var stdout bytes.Buffer
	cmd, stderr := startCLI(t, &stdout, "work", "--app", app, "--crm", crm, "--workers", "4")
	lines := bufio.NewScanner(stderr)
	for lines.Scan() && !strings.Contains(lines.Text(), "msg=delivery") {
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil || !strings.Contains(stdout.String(), "(interrupted") {
		t.Fatalf("work after SIGINT: %v, stdout %q; want exit 0 and the summary", err, stdout.String())
	}
	sent := delivered(t, app, crm, rows, true, false)
	t.Logf("%d of %d rows sent before the interrupt", sent, rows)
}

// TestWorkProcesses runs three work processes at once on the same files:
// every row is sent once, as one task.
func TestWorkProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: delivers in processes of their own")
	}
	const rows, processes = 150, 3
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	var wg sync.WaitGroup
	outputs, logs := make([]bytes.Buffer, processes), make([]bytes.Buffer, processes)
	errs := make([]error, processes)
	for i := range processes {
		cmd, stderr := startCLI(t, &outputs[i], "work", "--app", app, "--crm", crm, "--workers", "2", "--until-idle", "--lease", "2s", "--send-timeout", "1s")
		wg.Go(func() {
			io.Copy(&logs[i], stderr)
			errs[i] = cmd.Wait()
		})
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		var n int
		if _, serr := fmt.Sscanf(outputs[i].String(), "work: %d deliver", &n); err != nil || serr != nil {
			t.Errorf("process %d: %v, %v; stdout %q, the last of stderr %q", i, err, serr, outputs[i].String(), lastLines(logs[i].String(), 3))
		}
		total += n
	}
	if total < rows {
		t.Errorf("the processes made %d deliveries in all, fewer than the %d rows", total, rows)
	}
	delivered(t, app, crm, rows, false, false)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// filesState reads the app database at appPath and the CRM at crmPath
// read-only: the app's snapshot and the CRM's tasks.
func filesState(t *testing.T, appPath, crmPath string) (system.Snapshot, []system.Task) {
	t.Helper()
	app, err := system.OpenReadOnly(t.Context(), appPath)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	snap, err := app.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	crm, err := system.OpenCRMReadOnly(t.Context(), crmPath)
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	tasks, err := crm.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap, tasks
}

// TestWorkSummarySaysAttempts: work's summary counts how each attempt
// ended, an attempt that ended pending as one to retry, apart from the
// outbox's own counts of rows, so the two cannot be read as one.
func TestWorkSummarySaysAttempts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/contract" {
			fmt.Fprint(w, `{"idempotency_retention_seconds":0,"max_key_length":255,"max_body_bytes":65536,"identity":"busy"}`)
			return
		}
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	app := filepath.Join(t.TempDir(), "app.db")
	approveRows(t, app, 1)
	code, stdout, stderr := runCLI(t, "work", "--app", app, "--crm-url", srv.URL, "--until-idle", "--max-attempts", "2", "--backoff-base", "0")
	if code != 0 {
		t.Fatalf("work: exit %d: %s%s", code, stdout, stderr)
	}
	first, rest, _ := strings.Cut(stdout, "\n")
	if !strings.Contains(first, "the attempts ended blocked 1, to retry 1") || strings.Contains(first, "pending") ||
		!strings.Contains(rest, "outbox: 0 pending, 0 sent, 1 blocked") {
		t.Errorf("work's summary:\n%s\nwant the attempts (blocked 1, to retry 1) apart from the outbox (1 blocked)", stdout)
	}
}
