package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// TestEveryAttemptCountedOnce drives a running work through every
// outcome an attempt can come to (sent, transient, conflict, rejected,
// stale: a settle whose fence another worker took; error: a settle the
// app database refused after the send) and compares its metrics with the
// requests the receiver saw: each request is one attempt, counted once,
// under its outcome, and timed once.
func TestEveryAttemptCountedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits out the app database's busy timeout (5 s) for the error outcome")
	}
	t.Parallel() // it mostly waits
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, 6) // case-0 first: the oldest, as the thief's claim below needs
	mustRun(t, "crm", "init", "--crm", crm)
	// case-1 is answered as the CRM answers: created.
	stale, transient, conflict, rejected, failed := keyOf("case-0"), keyOf("case-2"), keyOf("case-3"), keyOf("case-4"), keyOf("case-5")
	server := crmServer(t, crm)
	var mu sync.Mutex
	answered := map[int]int{} // the receiver's answers to creates, by status
	locked := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := receiver.ParseIdempotencyKey(r.Header.Get("Idempotency-Key"))
		if r.Method != http.MethodPost {
			server.ServeHTTP(w, r)
			return
		}
		status := 0
		switch key {
		case transient:
			status = http.StatusServiceUnavailable
		case conflict:
			status = http.StatusUnprocessableEntity
		case rejected:
			status = http.StatusForbidden
		case stale:
			// Another worker, whose clock is an hour on, takes the row
			// (the oldest pending) while this send is under way: the
			// settle that follows has lost its fence.
			thief, err := system.Open(r.Context(), app, system.Options{Worker: "thief", Harness: system.Harness{Now: func() time.Time { return time.Now().Add(time.Hour) }}})
			if err == nil {
				var d system.Delivery
				if _, d, err = thief.ClaimNext(r.Context(), 0); err == nil && d.Key != stale {
					err = fmt.Errorf("the thief claimed %s", d.Key)
				}
				thief.Close()
			}
			if err != nil {
				t.Errorf("taking %s from its worker: %v", stale, err)
			}
		case failed:
			// The app database is locked, once, from before this answer
			// until past two busy timeouts: the answer the worker
			// records next (this one's or the one before, which it
			// records while it sends this) fails after its attempt was
			// counted.
			mu.Lock()
			first := !locked
			locked = true
			mu.Unlock()
			if first {
				if err := holdWriteLock(app, 2*system.DefaultBusyTimeout+time.Second); err != nil {
					t.Errorf("locking the app database: %v", err)
				}
			}
		}
		rec := &statusOf{ResponseWriter: w, status: http.StatusOK}
		if status != 0 {
			http.Error(rec, "scripted", status)
		} else {
			server.ServeHTTP(rec, r)
		}
		mu.Lock()
		answered[rec.status]++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	_, stderr := startCLI(t, io.Discard, "work", "--app", app, "--crm-url", srv.URL, "--workers", "1", "--max-attempts", "2",
		"--backoff-base", "0", "--metrics-addr", "127.0.0.1:0")
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
	// Every row final but the stolen one, which the thief holds; the
	// row whose answer was not recorded is tried again.
	for deadline := time.Now().Add(time.Minute); ; {
		v := inspectJSON(t, app)
		if v.Counts["pending"] == 1 && v.Counts["sent"]+v.Counts["blocked"] == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox did not settle: %v", v.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m := scrape(t, metricsURL)
	counted := func(outcome string) int {
		return int(m[fmt.Sprintf(`handoff_delivery_attempts_total{outcome=%q}`, outcome)])
	}
	mu.Lock()
	defer mu.Unlock()
	requests := 0
	for _, n := range answered {
		requests += n
	}
	// Each answer is one attempt under the outcome it came to: its own,
	// or error for the one whose recording failed.
	created := answered[http.StatusCreated] + answered[http.StatusOK]
	for _, tt := range []struct {
		outcomes []string
		answers  int
	}{
		{[]string{"sent", "stale"}, created},
		{[]string{"transient"}, answered[http.StatusServiceUnavailable]},
		{[]string{"conflict"}, answered[http.StatusUnprocessableEntity]},
		{[]string{"rejected"}, answered[http.StatusForbidden]},
	} {
		n := 0
		for _, o := range tt.outcomes {
			n += counted(o)
		}
		if n > tt.answers || n == 0 {
			t.Errorf("%v counted %d attempts, the receiver answered %d of them (%v)", tt.outcomes, n, tt.answers, answered)
		}
	}
	all := 0
	for _, o := range []string{"sent", "transient", "conflict", "rejected", "stale", "error"} {
		all += counted(o)
	}
	if counted("stale") != 1 || counted("error") != 1 || all != requests || int(m["handoff_send_duration_seconds_count"]) != requests {
		t.Errorf("%d stale, %d error, %d attempts counted and %v sends timed; want 1, 1, and the %d requests the receiver answered (%v)",
			counted("stale"), counted("error"), all, m["handoff_send_duration_seconds_count"], requests, answered)
	}
}

// statusOf is a ResponseWriter that keeps the status written.
type statusOf struct {
	http.ResponseWriter
	status int
}

func (s *statusOf) WriteHeader(status int) {
	s.status = status
	s.ResponseWriter.WriteHeader(status)
}

// holdWriteLock takes the app database at path's write lock, as another
// process's long transaction would, and gives it back after d.
func holdWriteLock(path string, d time.Duration) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("BEGIN IMMEDIATE"); err != nil {
		db.Close()
		return err
	}
	go func() {
		time.Sleep(d)
		_, _ = db.Exec("ROLLBACK")
		db.Close()
	}()
	return nil
}
