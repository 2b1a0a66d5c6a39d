package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/pgtest"
)

// What listens (crm serve, the page, the operations address) refuses
// requests over its limits and slow clients, prints no password, and
// says in its help what it exposes.

// serving runs the command line in-process, as a server that runs until
// the test ends, and returns every http:// address it printed in its
// first lines lines, with what it wrote on stdout and stderr so far.
func serving(t *testing.T, lines int, args ...string) (urls []string, stdout, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, io.MultiWriter(stdout, w), stderr)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr.String())
		}
	})
	read := bufio.NewScanner(out)
	for i := 0; i < lines && read.Scan(); i++ {
		if u := regexp.MustCompile(`http://[0-9.:\[\]]+`).FindString(read.Text()); u != "" {
			urls = append(urls, u)
		}
	}
	go io.Copy(io.Discard, out)
	if len(urls) < lines {
		t.Fatalf("%v printed %d addresses, want %d: %s", args, len(urls), lines, stderr.String())
	}
	return urls, stdout, stderr
}

// syncBuffer is a buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// request sends method path with extra header bytes and body to base,
// and returns the status.
func request(t *testing.T, method, target string, header int, body []byte, contentType string) int {
	t.Helper()
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if header > 0 {
		req.Header.Set("X-Padding", strings.Repeat("x", header))
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Idempotency-Key", `"k-1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestListenersRefuseWhatIsTooLarge: crm serve, its operations address
// and the page refuse headers over 16 KiB (431), and the bodies over
// their limits (413); crm serve counts each answer by result.
func TestListenersRefuseWhatIsTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, 1)
	mustRun(t, "crm", "init", "--crm", crm)
	urls, _, _ := serving(t, 2, "crm", "serve", "--crm", crm, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	ops, crmURL := urls[0], urls[1]
	page, _, _ := serving(t, 1, "ui", "--app", app, "--addr", "127.0.0.1:0")
	// A header of 17,000 bytes is past 16 KiB; one of 15,000, with the
	// request's line and other headers, is within it.
	tooLarge, within := 17_000, 15_000
	for _, tt := range []struct {
		method, url string
		header      int
		body        []byte
		contentType string
		want        int
	}{
		{"GET", crmURL + "/contract", tooLarge, nil, "", http.StatusRequestHeaderFieldsTooLarge},
		{"GET", ops + "/metrics", tooLarge, nil, "", http.StatusRequestHeaderFieldsTooLarge},
		{"GET", page[0] + "/", tooLarge, nil, "", http.StatusRequestHeaderFieldsTooLarge},
		{"POST", crmURL + "/tasks", 0, bytes.Repeat([]byte(" "), 100<<10), "application/json", http.StatusRequestEntityTooLarge},
		{"POST", page[0] + "/login", 0, []byte("token=" + strings.Repeat("x", 20<<10)), "application/x-www-form-urlencoded", http.StatusRequestEntityTooLarge},
		{"POST", crmURL + "/tasks", 0, []byte(`{"a":1}`), "application/json", http.StatusCreated},
		{"POST", crmURL + "/tasks", 0, []byte(`{"a":1}`), "application/json", http.StatusCreated},
		{"POST", crmURL + "/tasks", 0, []byte(`{"a":2}`), "application/json", http.StatusUnprocessableEntity},
		{"GET", ops + "/healthz", 0, nil, "", http.StatusOK},
		{"GET", ops + "/healthz", within, nil, "", http.StatusOK},
		{"GET", page[0] + "/", within, nil, "", http.StatusOK},
		{"GET", crmURL + "/contract", within, nil, "", http.StatusOK},
		{"GET", ops + "/readyz", 0, nil, "", http.StatusOK},
	} {
		if got := request(t, tt.method, tt.url, tt.header, tt.body, tt.contentType); got != tt.want {
			t.Errorf("%s %s with %d header bytes and a body of %d: %d, want %d", tt.method, tt.url, tt.header, len(tt.body), got, tt.want)
		}
	}
	m := scrape(t, ops+"/metrics")
	for result, want := range map[string]float64{"created": 1, "replayed": 1, "conflict": 1, "too_large": 1, "read": 1, "in_flight": 0} {
		if got := m[fmt.Sprintf(`handoff_receiver_requests_total{result=%q}`, result)]; got != want {
			t.Errorf("handoff_receiver_requests_total{result=%q} is %v, want %v", result, got, want)
		}
	}
	if m["handoff_receiver_create_duration_seconds_count"] != 4 {
		t.Errorf("handoff_receiver_create_duration_seconds_count is %v, want the 4 creates", m["handoff_receiver_create_duration_seconds_count"])
	}
}

// TestServerLimits: a client that sends its headers too slowly is cut
// off, as is one that sends a request too slowly: the server closes the
// connection, long before the client would have given up on it (a
// deadline of a minute, not a bound on the server's time: a loaded
// machine may take longer than the limit to close it).
func TestServerLimits(t *testing.T) {
	t.Parallel()
	limits := serverLimits{readHeader: 200 * time.Millisecond, read: 400 * time.Millisecond, write: time.Second, idle: time.Second, maxHeaderBytes: 1 << 10}
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}), limits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serveUntil(ctx, srv, ln)
	for _, tt := range []struct {
		name, sent string
		within     time.Duration
	}{
		{"headers never ended", "GET / HTTP/1.1\r\nHost: x\r\n", limits.readHeader},
		{"a body never sent", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", limits.read},
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := io.WriteString(conn, tt.sent); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		_, err = io.Copy(io.Discard, conn) // until the server closes it
		took := time.Since(start)
		conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the server held the connection for %v and did not close it, want it cut after %v", tt.name, took, tt.within)
		}
	}
}

// TestSlowClientOfCRMServe: crm serve cuts off a client that has not sent
// its headers within its limit (5 s), not before: the server closes the
// connection, after the limit and long before the client would have
// given up (a minute).
func TestSlowClientOfCRMServe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out crm serve's header timeout (5 s)")
	}
	t.Parallel() // it mostly waits
	dir := t.TempDir()
	crm := filepath.Join(dir, "crm.db")
	mustRun(t, "crm", "init", "--crm", crm)
	urls, _, _ := serving(t, 1, "crm", "serve", "--crm", crm, "--addr", "127.0.0.1:0")
	conn, err := net.Dial("tcp", strings.TrimPrefix(urls[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /tasks HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = io.Copy(io.Discard, conn)
	took := time.Since(start)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("crm serve held a client that never ended its headers for %v and did not close it, want it cut after %v", took, defaultLimits.readHeader)
	}
	// The limit runs from the server's first read, which comes before the
	// client's first write: a second of slack below it.
	if took < defaultLimits.readHeader-time.Second {
		t.Errorf("crm serve cut off a client that never ended its headers after %v, before its limit of %v", took, defaultLimits.readHeader)
	}
}

// TestHelpSaysWhatIsExposed: the help of every command that listens says
// what it serves, to whom, and its limits.
func TestHelpSaysWhatIsExposed(t *testing.T) {
	t.Parallel()
	for command, wants := range map[string][]string{
		"crm":  {"without authentication", "POST /tasks", "GET /tasks/{id}", "every task's key and payload", "loopback by default", "(413)", "(431)", "--metrics-addr serves counts and times only"},
		"ui":   {"without authentication", "every row's key, title, payload", "read-only unless given a token", "loopback by default", "SameSite=Strict", "(413)", "(431)", "never on the command line"},
		"work": {"--metrics-addr HOST:PORT", "/metrics (Prometheus), /healthz and /readyz", "without authentication", "no keys, payloads or passwords"},
	} {
		_, help, _ := runCLI(t, "help", command)
		flat := strings.Join(strings.Fields(help), " ")
		for _, want := range wants {
			if !strings.Contains(flat, want) {
				t.Errorf("help %s does not say %q:\n%s", command, want, help)
			}
		}
	}
}

// TestNoPasswordShown: a PostgreSQL URL's password appears nowhere the
// page, work and their errors show: stdout, stderr, the page, the
// metrics, the health checks.
func TestNoPasswordShown(t *testing.T) {
	t.Parallel()
	const password = "s3cret-pw-9f7a"
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	app := u.String()
	dir := t.TempDir()
	crm := filepath.Join(dir, "crm.db")
	mustRun(t, "approve", "--app", app, "--case", "case-1", "--title", "Call back")
	mustRun(t, "crm", "init", "--crm", crm)
	var shown []string
	code, stdout, stderr := runCLI(t, "work", "--app", app, "--crm", crm, "--until-idle", "--metrics-addr", "127.0.0.1:0", "--workers", "1")
	if code != 0 {
		t.Fatalf("work: exit %d: %s", code, stderr)
	}
	shown = append(shown, stdout, stderr)
	urls, out, errOut := serving(t, 1, "ui", "--app", app, "--crm", crm, "--addr", "127.0.0.1:0")
	_, page := httpGet(t, urls[0]+"/")
	_, row := httpGet(t, urls[0]+"/row?key="+url.QueryEscape(keyOf("case-1")))
	shown = append(shown, page, row, out.String(), errOut.String())
	if !strings.Contains(page, html.EscapeString(u.Redacted())) {
		t.Errorf("the page does not name the app database as %s", u.Redacted())
	}
	bad := *u
	bad.Host = "127.0.0.1:1"
	_, _, refusal := runCLI(t, "ui", "--app", bad.String(), "--addr", "127.0.0.1:0")
	shown = append(shown, refusal)
	for i, s := range shown {
		if strings.Contains(s, password) {
			t.Errorf("output %d shows the password:\n%s", i, s)
		}
	}
}
