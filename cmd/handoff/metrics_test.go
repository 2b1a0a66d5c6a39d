package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// scrape reads the metrics at url, in Prometheus's text format, as
// "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	m := map[string]float64{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("a metric line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// answer is how the test's receiver answers a create of a key: with a
// status of its own, or, when 0, as the CRM does.
type answer struct {
	status     int
	retryAfter string
}

// scriptedReceiver serves the CRM at crmPath over HTTP, but answers the
// creates of the keys in script as it says.
func scriptedReceiver(t *testing.T, crmPath string, script map[string]answer) *httptest.Server {
	t.Helper()
	server := crmServer(t, crmPath)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := receiver.ParseIdempotencyKey(r.Header.Get("Idempotency-Key"))
		if a, ok := script[key]; ok && r.Method == http.MethodPost {
			if a.retryAfter != "" {
				w.Header().Set("Retry-After", a.retryAfter)
			}
			http.Error(w, "scripted", a.status)
			return
		}
		server.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// inspected is what inspect --json says, as the metrics test reads it.
type inspected struct {
	Counts map[string]int `json:"counts"`
	Outbox []struct {
		Key           string  `json:"key"`
		State         string  `json:"state"`
		Attempts      int     `json:"attempts"`
		LastError     *string `json:"last_error"`
		ApprovedAt    *string `json:"approved_at"`
		LastAttemptAt *string `json:"last_attempt_at"`
		NextAttemptAt *string `json:"next_attempt_at"`
		LeaseOwner    *string `json:"lease_owner"`
		LeaseUntil    *string `json:"lease_until"`
	} `json:"outbox"`
}

// inspectJSON runs inspect --json on app and decodes it.
func inspectJSON(t *testing.T, app string) inspected {
	t.Helper()
	_, out, _ := runCLI(t, "inspect", "--app", app, "--limit", "0", "--json")
	var v inspected
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	return v
}

// stamp reads a time of inspect's JSON.
func stampOf(t *testing.T, s *string) time.Time {
	t.Helper()
	if s == nil {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestWorkMetrics scrapes a running work process whose receiver answers
// each kind of outcome, and checks every metric against what inspect
// --json says of the same files; then its health checks, and /readyz
// once the receiver is gone.
func TestWorkMetrics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, 10)
	mustRun(t, "crm", "init", "--crm", crm)
	srv := scriptedReceiver(t, crm, map[string]answer{
		keyOf("case-5"): {status: http.StatusUnprocessableEntity},                    // conflict: blocked
		keyOf("case-6"): {status: http.StatusForbidden},                              // rejected: blocked
		keyOf("case-7"): {status: http.StatusServiceUnavailable, retryAfter: "3600"}, // transient, back in an hour
		keyOf("case-8"): {status: http.StatusServiceUnavailable, retryAfter: "1"},    // transient twice: blocked
	})
	// case-0 is leased by a worker that runs elsewhere; case-1 by one
	// whose lease has run out, which work takes over.
	held := lease(t, app, "elsewhere")
	crashed, err := system.Open(t.Context(), app, system.Options{Worker: "crashed", Lease: 2 * time.Millisecond, SendTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, d, err := crashed.ClaimNext(t.Context(), 0); err != nil || d.Key != keyOf("case-1") {
		t.Fatalf("the crashed worker's claim: %+v, %v", d, err)
	}
	crashed.Close()
	if held != keyOf("case-0") {
		t.Fatalf("the leased row is %s, want case-0", held)
	}
	cmd, stderr := startCLI(t, io.Discard, "work", "--app", app, "--crm-url", srv.URL, "--workers", "2", "--max-attempts", "2", "--metrics-addr", "127.0.0.1:0")
	lines := bufio.NewScanner(stderr)
	var metricsURL string
	for metricsURL == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "url=http://"); ok {
			metricsURL = "http://" + strings.Fields(u)[0]
		}
	}
	go io.Copy(io.Discard, stderr)
	if metricsURL == "" {
		t.Fatal("work logged no metrics URL")
	}
	base := strings.TrimSuffix(metricsURL, "/metrics")

	// Wait until every row but the two pending ones is final.
	var v inspected
	for deadline := time.Now().Add(time.Minute); ; {
		v = inspectJSON(t, app)
		if v.Counts["pending"] == 2 && v.Counts["sent"]+v.Counts["blocked"] == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox did not settle: %v", v.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m := scrape(t, metricsURL)
	now := time.Now()
	v = inspectJSON(t, app)

	// What the database holds, against inspect.
	check := func(name string, want float64) {
		t.Helper()
		got, ok := m[name]
		if !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s is %v (found %v), inspect says %v", name, got, ok, want)
		}
	}
	for _, st := range []string{"pending", "sent", "blocked"} {
		check(fmt.Sprintf(`handoff_outbox_rows{state=%q}`, st), float64(v.Counts[st]))
	}
	blockedBy := map[string]int{}
	attempts, leased := 0, 0
	var oldest time.Time
	outcomes := map[string]int{}
	backoff := 0.0
	for _, r := range v.Outbox {
		attempts += r.Attempts
		lastError := ""
		if r.LastError != nil {
			lastError = *r.LastError
		}
		switch r.State {
		case "blocked":
			blockedBy[lastError]++
		case "pending":
			if oldest.IsZero() {
				oldest = stampOf(t, r.ApprovedAt)
			}
			if r.LeaseOwner != nil && stampOf(t, r.LeaseUntil).After(now) {
				leased++
			}
		}
		switch {
		case r.State == "sent":
			outcomes["sent"]++
		case lastError == "conflict" || lastError == "rejected":
			outcomes[lastError]++
		case lastError == "transient":
			outcomes["transient"] += r.Attempts
			if r.State == "pending" {
				backoff += stampOf(t, r.NextAttemptAt).Sub(stampOf(t, r.LastAttemptAt)).Seconds()
			}
		}
	}
	for _, e := range system.BlockedErrors {
		check(fmt.Sprintf(`handoff_outbox_blocked_rows{last_error=%q}`, e), float64(blockedBy[e]))
		check(fmt.Sprintf(`handoff_rows_blocked_total{last_error=%q}`, e), float64(blockedBy[e]))
	}
	check("handoff_outbox_leased_rows", float64(leased))
	if age := m["handoff_outbox_oldest_pending_age_seconds"]; math.Abs(age-now.Sub(oldest).Seconds()) > 2 {
		t.Errorf("handoff_outbox_oldest_pending_age_seconds is %v, inspect says the oldest pending row was approved %v ago", age, now.Sub(oldest))
	}

	// What this process did, against inspect: every attempt it counted
	// came to an outcome; two attempts were counted by the test's own
	// claims (case-0's live lease, case-1's crashed one).
	total := 0.0
	for _, o := range []string{"sent", "transient", "conflict", "rejected", "stale", "error"} {
		check(fmt.Sprintf(`handoff_delivery_attempts_total{outcome=%q}`, o), float64(outcomes[o]))
		total += m[fmt.Sprintf(`handoff_delivery_attempts_total{outcome=%q}`, o)]
	}
	check("handoff_send_duration_seconds_count", float64(attempts-2))
	if total != float64(attempts-2) {
		t.Errorf("the attempts' outcomes add up to %v, inspect counts %d attempts, 2 of them the test's", total, attempts)
	}
	check("handoff_lease_takeovers_total", 1)
	check("handoff_leases_released_total", 0)
	// case-7 waits out its hour, case-8 waited out a second before its
	// second attempt blocked it.
	check("handoff_backoff_waits_total", 2)
	if got := m["handoff_backoff_wait_seconds_total"]; math.Abs(got-(backoff+1)) > 1 {
		t.Errorf("handoff_backoff_wait_seconds_total is %v, inspect says %v for the pending row and 1 for case-8", got, backoff)
	}

	// Health: the process and what it needs answer; then the receiver
	// goes, and /readyz says so.
	for _, tt := range []struct {
		path   string
		status int
		body   string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "app database: ok\nreceiver: ok"},
	} {
		if status, body := httpGet(t, base+tt.path); status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, status, body, tt.status, tt.body)
		}
	}
	srv.Close()
	if status, body := httpGet(t, base+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "app database: ok\nreceiver: not ready") {
		t.Errorf("GET /readyz with the receiver gone: %d %q, want 503 and the receiver not ready", status, body)
	}
	if status, _ := httpGet(t, base+"/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz with the receiver gone: %d, want 200: the process runs", status)
	}
	_ = cmd
}

// httpGet answers GET url: the status and the body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
