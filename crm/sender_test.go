package crm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// sender returns a Sender to ts.
func sender(t *testing.T, url string) *crm.Sender {
	t.Helper()
	s, err := crm.NewSender(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSenderMapsAnswers(t *testing.T) {
	task := `{"id":7,"key":"k","payload":{}}`
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		wantID     int64
		want       error
		hint       time.Duration // 0: no hint; else at least this
	}{
		{"201", 201, "", task, 7, nil, 0},
		{"200", 200, "", task, 7, nil, 0},
		{"201 for another key", 201, "", `{"id":7,"key":"other","payload":{}}`, 0, system.ErrRejected, 0},
		{"201 not a task", 201, "", `{"ok":true}`, 0, system.ErrRejected, 0},
		{"201 not JSON", 201, "", `hello`, 0, system.ErrRejected, 0},
		{"201 id not an integer", 201, "", `{"id":7.5,"key":"k","payload":{}}`, 0, system.ErrRejected, 0},
		{"201 id 0", 201, "", `{"id":0,"key":"k","payload":{}}`, 0, system.ErrRejected, 0},
		{"201 without the payload", 201, "", `{"id":7,"key":"k"}`, 0, system.ErrRejected, 0},
		{"201 with more after the task", 201, "", task + `{"id":8,"key":"k","payload":{}}`, 0, system.ErrRejected, 0},
		{"202 with a task", 202, "", task, 0, system.ErrRejected, 0},
		{"204", 204, "", ``, 0, system.ErrRejected, 0},
		{"409", 409, "", `{}`, 0, system.ErrTransient, 0},
		{"422", 422, "", `{}`, 0, system.ErrKeyConflict, 0},
		{"429 in seconds", 429, "30", `{}`, 0, system.ErrTransient, 30 * time.Second},
		{"503 as a date", 503, date, `{}`, 0, system.ErrTransient, 80 * time.Second},
		{"503 without Retry-After", 503, "", `{}`, 0, system.ErrTransient, 0},
		{"503 with a bad Retry-After", 503, "soon", `{}`, 0, system.ErrTransient, 0},
		{"500", 500, "", `{}`, 0, system.ErrTransient, 0},
		{"502", 502, "", `{}`, 0, system.ErrTransient, 0},
		{"400", 400, "", `{}`, 0, system.ErrRejected, 0},
		{"401", 401, "", `{}`, 0, system.ErrRejected, 0},
		{"403", 403, "", `{}`, 0, system.ErrRejected, 0},
		{"404", 404, "", `{}`, 0, system.ErrRejected, 0},
		{"413", 413, "", `{}`, 0, system.ErrRejected, 0},
		{"302", 302, "", ``, 0, system.ErrRejected, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/tasks" || r.Method != "POST" || r.Header.Get("Idempotency-Key") != `"k"` || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s %v", r.Method, r.URL, r.Header)
				}
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				if tt.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer ts.Close()
			id, err := sender(t, ts.URL).CreateTask(t.Context(), "k", `{}`)
			if id != tt.wantID || !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %d, %v; want %d, %v", id, err, tt.wantID, tt.want)
			}
			var hint *system.RetryHint
			switch {
			case tt.hint == 0 && errors.As(err, &hint):
				t.Errorf("a hint: %v", err)
			case tt.hint > 0 && (!errors.As(err, &hint) || hint.After < tt.hint):
				t.Errorf("hint: %v, want at least %v", err, tt.hint)
			}
		})
	}
}

func TestSenderTransportFailures(t *testing.T) {
	ctx := t.Context()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // connection refused
	if _, err := sender(t, closed.URL).CreateTask(ctx, "k", `{}`); !errors.Is(err, system.ErrTransient) {
		t.Errorf("refused: %v", err)
	}
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := sender(t, slow.URL).CreateTask(short, "k", `{}`); !errors.Is(err, system.ErrTransient) {
		t.Errorf("timeout: %v", err)
	}
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id":1,`))
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer cut.Close()
	if _, err := sender(t, cut.URL).CreateTask(ctx, "k", `{}`); !errors.Is(err, system.ErrTransient) {
		t.Errorf("closed before the full answer: %v", err)
	}
	if _, err := sender(t, cut.URL).CreateTask(ctx, "bad\nkey", `{}`); !errors.Is(err, system.ErrRejected) {
		t.Errorf("a key that is no header: %v", err)
	}
}

func TestNewSenderRefuses(t *testing.T) {
	for _, u := range []string{"ftp://crm.example", "crm.example/tasks", "", "http://", "http://crm.example/?q=1", "://x"} {
		if _, err := crm.NewSender(u, nil); err == nil {
			t.Errorf("NewSender(%q): no error", u)
		}
	}
	if _, err := crm.NewSender("https://crm.example/v1", nil); err != nil {
		t.Errorf("https with a path: %v", err)
	}
}

func TestSenderRetention(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: 48 * time.Hour})
	ts := serve(t, c, 24*time.Hour)
	s := sender(t, ts.URL)
	if got := s.Retention(); got != 24*time.Hour {
		t.Errorf("Retention %v", got)
	}
	ts.Close()
	if got := s.Retention(); got != 24*time.Hour {
		t.Errorf("Retention after the server stopped %v: not kept", got)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	if got := sender(t, down.URL).Retention(); got != 0 {
		t.Errorf("Retention without a contract %v, want 0", got)
	}
	down.Close()
}

// TestSenderRefusesABadContract: a contract whose retention is missing,
// negative, past what a Duration holds or not a number is no contract,
// nor is a good one in an answer other than 200: Contract says so, and
// Retention is 0 (forever, to the outbox) until a good one is read.
func TestSenderRefusesABadContract(t *testing.T) {
	good := `{"idempotency_retention_seconds":60}`
	for _, tt := range []struct {
		status int
		body   string
	}{
		{200, `{}`}, {200, `{"idempotency_retention_seconds":-1}`}, {200, `{"idempotency_retention_seconds":9223372036854775807}`},
		{200, `{"idempotency_retention_seconds":"60"}`}, {200, `not json`},
		{404, good}, {500, good}, {201, good},
	} {
		body := fmt.Sprintf("%d %s", tt.status, tt.body)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			w.Write([]byte(tt.body))
		}))
		s := sender(t, ts.URL)
		if got, err := s.Contract(t.Context()); err == nil {
			t.Errorf("contract %s: read as %v, want an error", body, got)
		}
		if got := s.Retention(); got != 0 {
			t.Errorf("contract %s: Retention %v, want 0", body, got)
		}
		ts.Close()
	}
}

// loseFirstReply lets h act on the first request, then closes the
// connection before any answer is written.
func loseFirstReply(h http.Handler) http.Handler {
	var lost atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tasks" || lost.Swap(true) {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	})
}

func TestDeliveryOverHTTP(t *testing.T) {
	ctx := t.Context()
	c, _ := openCRM(t, system.CRMOptions{})
	srv, err := crm.NewServer(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(loseFirstReply(srv))
	defer ts.Close()
	app, err := system.Open(ctx, filepath.Join(t.TempDir(), "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	key, err := app.RecordApproval(ctx, "case-104", "Call back about the repair")
	if err != nil {
		t.Fatal(err)
	}
	// No connection is reused: net/http would itself resend a request with
	// an Idempotency-Key once on a reused connection closed before any
	// answer, and DeliverOne would see the replay.
	s, err := crm.NewSender(ts.URL, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := app.DeliverOne(ctx, s)
	if err != nil || d.Result != system.ResultPending || d.LastError != system.LastErrorTransient {
		t.Fatalf("the lost reply: %+v, %v; want pending, transient", d, err)
	}
	if got := tasks(t, c); len(got) != 1 || got[0].Key != key {
		t.Fatalf("the server did not act on the lost request: %+v", got)
	}
	d, err = app.DeliverOne(ctx, s)
	if err != nil || d.Result != system.ResultSent || d.RemoteID != tasks(t, c)[0].ID || d.Attempts != 2 {
		t.Fatalf("the retry: %+v, %v; want sent to task %d", d, err, tasks(t, c)[0].ID)
	}
	if got := tasks(t, c); len(got) != 1 {
		t.Fatalf("%d tasks, want 1", len(got))
	}
	// The receiver answered the retry with Idempotent-Replayed: the
	// row's history says the task was the lost attempt's. A first send
	// that creates its task is no replay.
	if _, err := app.RecordApproval(ctx, "case-105", "Call back about the invoice"); err != nil {
		t.Fatal(err)
	}
	if d, err := app.DeliverOne(ctx, s); err != nil || d.Result != system.ResultSent || d.Attempts != 1 {
		t.Fatalf("another row: %+v, %v; want sent at its first attempt", d, err)
	}
	for _, tt := range []struct {
		caseID string
		replay bool
	}{{"case-104", true}, {"case-105", false}} {
		k, err := system.NewApproval(tt.caseID, "x")
		if err != nil {
			t.Fatal(err)
		}
		h, err := app.History(ctx, k.Key)
		if err != nil {
			t.Fatal(err)
		}
		var sent []string
		for _, e := range h {
			if e.Action == system.EventSent {
				sent = append(sent, e.Reason)
			}
		}
		if len(sent) != 1 || strings.Contains(sent[0], "a replay") != tt.replay {
			t.Errorf("%s: the history's sends %q; want one, a replay: %v", tt.caseID, sent, tt.replay)
		}
	}
	if d, err := app.DeliverOne(ctx, s); err != nil || d.Result != system.Idle {
		t.Fatalf("after: %+v, %v", d, err)
	}
}

// TestRetryAfter: Retry-After in delay seconds, 0 included (retry at
// once), or as an HTTP date (a past one is 0); anything else is no value.
// Seconds past what a Duration holds wait the longest it can, never a
// negative time.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{"9223372036854775807", time.Duration(1<<62) / time.Second * time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		if got, ok := crm.RetryAfter(tt.value, now); got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v, %t; want %v, %t", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}
