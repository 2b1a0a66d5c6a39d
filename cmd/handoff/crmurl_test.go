package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// serveCRMFile serves the CRM database at path with a real crm.Server on
// a loopback port until the test ends, and returns its URL.
func serveCRMFile(t *testing.T, path string, retention time.Duration) string {
	t.Helper()
	c, err := system.OpenCRM(t.Context(), path, system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := receiver.NewServer(c, retention)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		c.Close()
	})
	return ts.URL
}

// closedPort returns a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestCRMURL delivers with deliver and work to CRMs behind URLs: the same
// CRM by file or by URL is one binding, another CRM behind a URL is
// refused, and so is a URL that is not a receiver, leaving the app file
// as it was.
func TestCRMURL(t *testing.T) {
	dir, crms := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	for _, c := range []string{"case-1", "case-2", "case-3", "case-4"} {
		mustRun(t, "approve", "--app", "app.db", "--case", c, "--title", "Call back")
	}
	crm, other := filepath.Join(crms, "crm.db"), filepath.Join(crms, "other.db")
	mustRun(t, "crm", "init", "--crm", crm)
	mustRun(t, "crm", "init", "--crm", other)
	url, otherURL := serveCRMFile(t, crm, 0), serveCRMFile(t, other, 0)
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	key := system.KeyPrefix

	for _, s := range []struct {
		args []string
		code int
		want string // in stdout or stderr
	}{
		{[]string{"deliver", "--app", "app.db", "--crm-url", "ftp://127.0.0.1/"}, 2, `--crm-url: crm: the receiver URL "ftp://127.0.0.1/" is not http or https`},
		{[]string{"deliver", "--app", "app.db", "--crm-url", "127.0.0.1:8080"}, 2, "want http(s)://HOST[:PORT][/PATH]"},
		{[]string{"work", "--app", "app.db", "--crm-url", "http://user@127.0.0.1/", "--until-idle"}, 2, "must have a host and no user"},
		{[]string{"deliver", "--app", "app.db", "--crm", crm, "--crm-url", url}, 2, "give one of --crm PATH and --crm-url URL, not both"},
		{[]string{"work", "--app", "app.db", "--until-idle"}, 2, "missing --crm PATH or --crm-url URL"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", url, "--create-crm"}, 2, "--create-crm goes with --crm PATH, not --crm-url"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", closedPort(t)}, 1, "does not answer GET /contract (Get "},
		{[]string{"work", "--app", "app.db", "--crm-url", notFound.URL, "--until-idle"}, 1, "does not answer GET /contract (404 Not Found): is a handoff receiver (handoff crm serve) listening there?"},
		{[]string{"deliver", "--app", "missing.db", "--crm-url", url}, 1, "the app database missing.db does not exist"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", url}, 0, "sent " + key + "case-1: CRM task 1 (attempt 1 of 3)"},
		{[]string{"deliver", "--app", "app.db", "--crm", crm}, 0, "sent " + key + "case-2: CRM task 2"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", otherURL}, 1, "delivers to CRM"},
		{[]string{"work", "--app", "app.db", "--crm-url", otherURL, "--until-idle"}, 1, "delivers to CRM"},
		{[]string{"deliver", "--app", "app.db", "--crm", other}, 1, "delivers to CRM"},
		{[]string{"work", "--app", "app.db", "--crm-url", url + "/", "--until-idle", "--workers", "2"}, 0, "outbox: 0 pending, 4 sent, 0 blocked"},
		{[]string{"check", "--app", "app.db", "--crm", crm}, 0, "ok"},
	} {
		before := folder(t, dir)
		code, stdout, stderr := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(stdout+stderr, s.want) {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want %d and %q", s.args, code, stdout, stderr, s.code, s.want)
		}
		if diff := cmp.Diff(before, folder(t, dir)); s.code != 0 && diff != "" {
			t.Errorf("%v changed the folder (-before +after):\n%s", s.args, diff)
		}
	}
}

// TestReadContract: a receiver is taken only when GET /contract states
// its identity; anything else is errNoContract.
func TestReadContract(t *testing.T) {
	t.Parallel()
	crm := filepath.Join(t.TempDir(), "crm.db")
	mustRun(t, "crm", "init", "--crm", crm)
	answer := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, tt := range []struct {
		name, url string
		ok        bool
	}{
		{"crm.Server", serveCRMFile(t, crm, time.Hour), true},
		{"nothing listening", closedPort(t), false},
		{"404", notFound.URL, false},
		{"not JSON", answer("hello"), false},
		{"no identity", answer(`{"idempotency_retention_seconds":0}`), false},
		{"no retention", answer(`{"identity":"abc"}`), false},
	} {
		r, err := newRemoteCRM(tt.url, 1)
		if err != nil {
			t.Fatal(err)
		}
		err = r.readContract(t.Context(), 5*time.Second)
		if tt.ok && (err != nil || r.contract.Identity == "" || r.contract.RetentionSeconds != 3600) {
			t.Errorf("%s: got %v, contract %+v; want its identity and 1h", tt.name, err, r.contract)
		}
		if !tt.ok && !errors.Is(err, errNoContract) {
			t.Errorf("%s: got %v, want errNoContract", tt.name, err)
		}
	}
}

// TestCRMURLRetention: the retention a receiver states at GET /contract
// reaches the claims of deliver and work. With 1 s, shorter than the send
// timeout, a row claimed once may not be sent again: it blocks with
// retention-expired, where a CRM file (which forgets nothing) takes it.
func TestCRMURLRetention(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "Call back")
	mustRun(t, "approve", "--app", "app.db", "--case", "case-2", "--title", "Call back")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	url := serveCRMFile(t, filepath.Join(dir, "crm.db"), time.Second)
	key := system.KeyPrefix
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"deliver", "--app", "app.db", "--crm-url", url, "--fault", "offline"}, "pending " + key + "case-1: transient failure (attempt 1 of 3)"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", url, "--fault", "offline"}, "blocked " + key + "case-1: retention-expired after 1 attempt;"},
		{[]string{"deliver", "--app", "app.db", "--crm-url", url, "--fault", "offline"}, "pending " + key + "case-2: transient failure (attempt 1 of 3)"},
		{[]string{"work", "--app", "app.db", "--crm-url", url, "--until-idle", "--worker", "w"}, "outbox: 0 pending, 0 sent, 2 blocked"},
	} {
		if out := mustRun(t, s.args...); !strings.Contains(out, s.want) {
			t.Errorf("%v: got %q, want %q", s.args, out, s.want)
		}
	}
}

// TestCRMURLOldApp: an app database an older handoff wrote, which
// delivered before identities existed, binds only to a receiver that holds
// the tasks it recorded as sent, read at GET /tasks/{id}.
func TestCRMURLOldApp(t *testing.T) {
	dir := inOldFiles(t)
	mustRun(t, "crm", "init", "--crm", "fresh.db")
	fresh, old := serveCRMFile(t, filepath.Join(dir, "fresh.db"), 0), serveCRMFile(t, filepath.Join(dir, "old-crm.db"), 0)
	refused(t, "records harbor:create-followup:v1:case-1 as sent as task 1, which "+fresh+" does not hold", "deliver", "--app", "old-app.db", "--crm-url", fresh)
	if out := mustRun(t, "deliver", "--app", "old-app.db", "--crm-url", old); !strings.Contains(out, "sent harbor:create-followup:v1:case-3: CRM task 2") {
		t.Errorf("deliver of the upgraded app to its own CRM: got %q", out)
	}
	refused(t, "delivers to CRM", "deliver", "--app", "old-app.db", "--crm", "fresh.db")
}

// TestWorkThroughCRMServe runs work against a real handoff crm serve
// process on a free port, then stops the server with SIGTERM: every row
// is sent once, as one task, and the server exits 0.
func TestWorkThroughCRMServe(t *testing.T) {
	t.Parallel()
	const rows = 20
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, rows)
	mustRun(t, "crm", "init", "--crm", crm)
	out, w := io.Pipe()
	server, _ := startCLI(t, w, "crm", "serve", "--crm", crm, "--addr", "127.0.0.1:0", "--retention", "1h")
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("crm serve printed no address: %v", err)
	}
	go io.Copy(io.Discard, out)
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`).FindString(line)
	if url == "" {
		t.Fatalf("no address in %q", line)
	}
	code, stdout, stderr := runCLI(t, "work", "--app", app, "--crm-url", url, "--workers", "4", "--until-idle")
	if code != 0 || !strings.Contains(stdout, "outbox: 0 pending, 20 sent, 0 blocked") {
		t.Errorf("work --crm-url: exit %d: %s%s", code, stdout, lastLines(stderr, 3))
	}
	if err := server.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := server.Wait(); err != nil {
		t.Errorf("crm serve after SIGTERM: %v, want exit 0", err)
	}
	w.Close()
	delivered(t, app, crm, rows, false, false)
}

// TestCheckKnowsTheWorkersBudget: rows that workers with --max-attempts 5
// sent on their fifth attempt pass check, which cannot know the flag: a
// claim records a budget above the default in the app database.
func TestCheckKnowsTheWorkersBudget(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "Call back")
	mustRun(t, "crm", "init", "--crm", "crm.db")
	c, err := system.OpenCRM(t.Context(), filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := receiver.NewServer(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	var posts atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && posts.Add(1) < 5 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	code, out, log := runCLI(t, "work", "--app", "app.db", "--crm-url", ts.URL, "--until-idle", "--max-attempts", "5", "--backoff-base", "0")
	if code != 0 || !strings.Contains(out, "0 pending, 1 sent, 0 blocked") {
		t.Errorf("work: exit %d, %q", code, out)
	}
	// The receiver's failures are one WARN with the first cause, which
	// the row does not keep, and one INFO with the count once it answers
	// again: not a line per failed attempt.
	for _, want := range []string{`level=WARN msg="receiver stopped answering"`, `cause="system: transient failure: 503 Service Unavailable`,
		`level=INFO msg="receiver answering again"`, "failed_sends=4"} {
		if strings.Count(log, want) != 1 {
			t.Errorf("work's log has %q %d times, want once:\n%s", want, strings.Count(log, want), log)
		}
	}
	if n := strings.Count(log, "result=pending"); n > 0 {
		t.Errorf("work's log has %d lines for failed attempts, want none:\n%s", n, log)
	}
	if out := mustRun(t, "check", "--app", "app.db", "--crm", "crm.db"); !strings.Contains(out, "ok (integrity") {
		t.Errorf("check after five attempts: got %q", out)
	}
	if out := mustRun(t, "inspect", "--app", "app.db", "--crm", "crm.db"); !strings.Contains(out, "sent, 5 of 5 attempts") {
		t.Errorf("inspect after five attempts: got %q, want the row sent on the fifth of 5 attempts", out)
	}
	if out := mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "Call back"); !strings.Contains(out, "sent, 5 of 5 attempts") {
		t.Errorf("approve again after five attempts: got %q, want the row sent on the fifth of 5 attempts", out)
	}
}
