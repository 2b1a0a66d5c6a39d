package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// runProcess runs the command line in a process of its own, the test
// binary (see TestMain), whose own processes run it too: trial starts
// os.Executable. It returns the exit status, stdout and stderr.
func runProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// trialRun is the output of one trial command.
type trialRun struct {
	code           int
	stdout, stderr string
	kept           []string // the files of its first trial's folder, right after it ran
}

// The two trials the tests read: each runs once, whoever asks first.
var (
	passingOnce, brokenOnce sync.Once
	passing, broken         trialRun
)

// passingTrial runs a small trial with crm serve: three kills (one of the
// server: seed 6 draws it), two work processes, 24 rows.
func passingTrial(t *testing.T) trialRun {
	passingOnce.Do(func() {
		code, stdout, stderr := runProcess(t, "trial", "--kills", "3", "--seed", "6", "--workers", "2", "--rows", "24", "--json")
		passing = trialRun{code: code, stdout: stdout, stderr: stderr}
	})
	return passing
}

// brokenTrial runs a trial against a receiver that ignores the
// Idempotency-Key and cuts every other connection after it made the task:
// a lost reply, retried, is a second task.
func brokenTrial(t *testing.T) trialRun {
	brokenOnce.Do(func() {
		srv := httptest.NewServer(&duplicatingReceiver{})
		defer srv.Close()
		dir := filepath.Join(t.TempDir(), "trials")
		code, stdout, stderr := runProcess(t, "trial", "--kills", "1", "--seed", "1", "--workers", "1", "--rows", "6", "--crm-url", srv.URL, "--dir", dir, "--json")
		broken = trialRun{code: code, stdout: stdout, stderr: stderr}
		entries, _ := os.ReadDir(filepath.Join(dir, "trial-1"))
		for _, e := range entries {
			broken.kept = append(broken.kept, e.Name())
		}
	})
	return broken
}

// duplicatingReceiver breaks the receiver contract as a CRM that ignores
// the Idempotency-Key does: every POST /tasks makes a new task, and every
// other one loses its answer (the connection is cut once the task is
// made), so that the retry makes another. It answers GET /contract and
// GET /tasks?key=KEY as crm serve does.
type duplicatingReceiver struct {
	mu    sync.Mutex
	tasks []system.Task
}

func (d *duplicatingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/tasks":
		key, err := receiver.ParseIdempotencyKey(r.Header.Get("Idempotency-Key"))
		body, rerr := io.ReadAll(r.Body)
		if err != nil || rerr != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		task := system.Task{ID: int64(len(d.tasks) + 1), Key: key, Payload: string(body)}
		d.tasks = append(d.tasks, task)
		lose := task.ID%2 == 1
		d.mu.Unlock()
		if lose {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": task.ID, "key": task.Key, "payload": json.RawMessage(task.Payload)})
	case r.Method == http.MethodGet && r.URL.Path == "/contract":
		json.NewEncoder(w).Encode(receiver.Contract{Identity: "duplicating", MaxKeyLength: receiver.MaxKeyLength, MaxBodyBytes: receiver.MaxBodyBytes})
	case r.Method == http.MethodGet && r.URL.Path == "/tasks":
		found := []any{}
		d.mu.Lock()
		for _, t := range d.tasks {
			if t.Key == r.URL.Query().Get("key") {
				found = append(found, map[string]any{"id": t.ID, "key": t.Key, "payload": json.RawMessage(t.Payload)})
			}
		}
		d.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"tasks": found})
	default:
		http.NotFound(w, r)
	}
}

// trialJSON is the part of trial's JSON the tests read.
type trialJSON struct {
	Kills         int            `json:"kills"`
	KillsByTarget map[string]int `json:"kills_by_target"`
	Landed        map[string]int `json:"landed"`
	Sent          int            `json:"sent"`
	Blocked       int            `json:"blocked"`
	Violations    int            `json:"violations"`
	Problems      []struct {
		Where string `json:"where"`
		What  string `json:"what"`
	} `json:"problems"`
	Dir     *string `json:"dir"`
	KillLog []struct {
		Target   string `json:"target"`
		Landed   string `json:"landed"`
		LastLine string `json:"last_line"`
	} `json:"kill_log"`
}

func decodeTrial(t *testing.T, r trialRun) trialJSON {
	t.Helper()
	var got trialJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("trial --json: exit %d, %v:\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return got
}

// TestTrial runs a small trial end to end: real crm serve and work
// processes, a SIGKILL of a worker and of the server, a drain and the
// checks: no violation, every row sent or blocked, and the folder gone.
func TestTrial(t *testing.T) {
	t.Parallel()
	r := passingTrial(t)
	got := decodeTrial(t, r)
	if r.code != 0 || got.Violations != 0 || len(got.Problems) != 0 {
		t.Fatalf("trial: exit %d, %d violations %+v:\n%s", r.code, got.Violations, got.Problems, r.stderr)
	}
	if got.Kills != 3 || len(got.KillLog) != 3 || got.KillsByTarget["server"] < 1 || got.KillsByTarget["worker"] < 1 {
		t.Errorf("trial: %d kills, by target %v; want 3, the server among them", got.Kills, got.KillsByTarget)
	}
	if got.Sent+got.Blocked != 24 || got.Sent == 0 {
		t.Errorf("trial: %d sent and %d blocked, want 24 rows, sent mostly", got.Sent, got.Blocked)
	}
	for _, k := range got.KillLog {
		if k.Landed == "" || k.LastLine == "" {
			t.Errorf("a kill without where it landed: %+v", k)
		}
	}
	dir := regexp.MustCompile(`files in (\S+);`).FindStringSubmatch(r.stderr)
	if dir == nil || got.Dir != nil {
		t.Fatalf("trial: stderr %q, dir %v; want the folder named, and not kept", r.stderr, got.Dir)
	}
	if _, err := os.Stat(dir[1]); !os.IsNotExist(err) {
		t.Errorf("a passing trial left %s (%v)", dir[1], err)
	}
}

// TestTrialCatchesDuplicates: a trial against a receiver that makes a
// task per request reports the duplicate tasks, exits 1, and keeps its
// files with a line per kill.
func TestTrialCatchesDuplicates(t *testing.T) {
	t.Parallel()
	r := brokenTrial(t)
	got := decodeTrial(t, r)
	if r.code != 1 || got.Violations == 0 {
		t.Fatalf("trial against a duplicating receiver: exit %d, %d violations; want 1 and some:\n%s", r.code, got.Violations, r.stderr)
	}
	if !strings.Contains(got.Problems[0].Where, "invariant 1") || !strings.Contains(r.stderr, "(seed 1): 1 kill, ") || !strings.Contains(r.stderr, " "+words.HowMany(got.Violations, "violation")+", ") {
		t.Errorf("trial: problems %+v, stderr %q; want invariant 1 first, and the kill and violations counted", got.Problems, r.stderr)
	}
	if got.Dir == nil || got.KillsByTarget["server"] != 0 {
		t.Fatalf("trial: dir %v, kills %v; want the files kept, no server killed", got.Dir, got.KillsByTarget)
	}
	for _, f := range []string{"app.db", "kills.log", "worker-1.log", "drain.log"} {
		if !slices.Contains(r.kept, f) {
			t.Errorf("the kept files %v, want %s among them", r.kept, f)
		}
	}
}

// TestTrialUsageErrors: bad flags are usage errors, and an existing
// --dir is refused; nothing is started or created.
func TestTrialUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("taken", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trial"}, 2, "missing --kills"},
		{[]string{"trial", "--kills", "-1"}, 2, "--kills is -1, want 0 or more"},
		{[]string{"trial", "--kills", "1", "--trials", "0"}, 2, "--trials is 0, want 1 or more"},
		{[]string{"trial", "--kills", "1", "--workers", "0"}, 2, "--workers is 0, want 1 or more"},
		{[]string{"trial", "--kills", "1", "--rows", "0"}, 2, "--rows is 0, want 1 or more"},
		{[]string{"trial", "--kills", "1", "--crm-url", "ftp://127.0.0.1/"}, 2, "is not http or https"},
		{[]string{"trial", "--kills", "1", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"trial", "--kills", "1", "--dir", "taken"}, 1, "--dir taken already exists"},
		{[]string{"trial", "--kills", "1", "--backend", "mysql"}, 2, `unknown backend "mysql"`},
		{[]string{"trial", "--kills", "1", "--backend", "postgres", "--postgres-url", "mysql://x"}, 2, "is not a PostgreSQL URL"},
		{[]string{"trial", "--kills", "1", "--backend", "postgres", "--postgres-url", "postgres://u:secret@127.0.0.1:1/x"}, 4,
			"cannot connect to postgres://u:xxxxx@127.0.0.1:1/x: 127.0.0.1:1 (127.0.0.1): dial error"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: got exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("refused trials left %v (%v)", entries, err)
	}
}

// TestTrialRefusesANonReceiver: a --crm-url that does not state a
// receiver's contract at GET /contract stops the trial before it makes a
// folder or starts a worker: exit 1, with the reason.
func TestTrialRefusesANonReceiver(t *testing.T) {
	t.Setenv("HANDOFF_RUN_MAIN", "1") // were a process started, it would be the command line
	dir := filepath.Join(t.TempDir(), "trials")
	code, stdout, stderr := runCLI(t, "trial", "--kills", "2", "--seed", "1", "--crm-url", closedPort(t), "--dir", dir)
	if code != 1 || !strings.Contains(stderr, "is a handoff receiver (handoff crm serve) listening there?") || stdout != "" {
		t.Errorf("trial against a closed port: exit %d, stdout %q, stderr %q; want 1 and the reason alone", code, stdout, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a trial against a closed port made its folder (%v)", err)
	}
}

// TestTrialOnPostgres runs the small trial of TestTrial with the app
// database in PostgreSQL, each work process with a pool of its own: no
// violation, every row sent or blocked, and the schema it made dropped.
func TestTrialOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the trials on SQLite run the same command; run without -short for PostgreSQL's")
	}
	server := pgtest.Server(t)
	cmd := exec.Command(os.Args[0], "trial", "--kills", "3", "--seed", "6", "--workers", "2", "--rows", "24", "--json",
		"--backend", "postgres", "--postgres-url", server)
	cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		t.Fatal(err)
	}
	got := decodeTrial(t, trialRun{code: code, stdout: stdout.String(), stderr: stderr.String()})
	if code != 0 || got.Violations != 0 {
		t.Fatalf("trial: exit %d, %d violations %+v:\n%s", code, got.Violations, got.Problems, stderr.String())
	}
	if got.Kills != 3 || got.Sent+got.Blocked != 24 || got.Sent == 0 {
		t.Errorf("trial: %d kills, %d sent and %d blocked; want 3 kills and 24 rows, sent mostly", got.Kills, got.Sent, got.Blocked)
	}
	// The trial's schemas are named after its process: another suite's
	// trials on the same server are theirs.
	db, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var left int
	if err := db.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1`, fmt.Sprintf("trial\\_%d\\_%%", cmd.Process.Pid)).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d schemas of the trial (process %d) left: a passing trial must drop its own", left, cmd.Process.Pid)
	}
}
