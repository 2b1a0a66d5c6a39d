package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/bulk"
	"github.com/outboxlab/handoff/internal/metrics"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestDelivery: each delivery counts where the spec's tables say: an
// attempt's outcome, a row blocked, a takeover, a backoff.
func TestDelivery(t *testing.T) {
	app, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	m := metrics.NewWorker(app)
	for _, d := range []system.Delivery{
		{Result: system.ResultSent, TookOver: "w:9"},
		{Result: system.ResultPending, LastError: system.LastErrorTransient, Backoff: 1500 * time.Millisecond},
		{Result: system.ResultBlocked, LastError: system.LastErrorTransient},
		{Result: system.ResultBlocked, LastError: system.LastErrorConflict},
		{Result: system.ResultBlocked, LastError: system.LastErrorRejected},
		{Result: system.ResultBlocked, LastError: system.LastErrorBudgetExhausted},
		{Result: system.ResultStale},
		{Result: system.Idle},
	} {
		m.Delivery(d, nil)
	}
	m.Delivery(system.Delivery{}, &system.AttemptError{Key: "k", Attempt: 1, MaxAttempts: 3, Err: system.ErrBusy})
	m.Delivery(system.Delivery{}, system.ErrBusy) // a claim refused: no attempt
	body := get(t, m.Handler(slog.New(slog.DiscardHandler)))
	for _, want := range []string{
		`handoff_delivery_attempts_total{outcome="sent"} 1`,
		`handoff_delivery_attempts_total{outcome="transient"} 2`,
		`handoff_delivery_attempts_total{outcome="conflict"} 1`,
		`handoff_delivery_attempts_total{outcome="rejected"} 1`,
		`handoff_delivery_attempts_total{outcome="stale"} 1`,
		`handoff_delivery_attempts_total{outcome="error"} 1`,
		`handoff_rows_blocked_total{last_error="budget-exhausted"} 1`,
		`handoff_rows_blocked_total{last_error="transient"} 1`,
		`handoff_rows_blocked_total{last_error="deadline"} 0`,
		`handoff_lease_takeovers_total 1`,
		`handoff_backoff_waits_total 1`,
		`handoff_backoff_wait_seconds_total 1.5`,
		`handoff_outbox_rows{state="pending"} 0`,
		`handoff_outbox_oldest_pending_age_seconds 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in the metrics", want)
		}
	}
}

// TestScrapeOfAClosedDatabase: a scrape whose query fails still serves
// the counters, and says the outbox could not be read.
func TestScrapeOfAClosedDatabase(t *testing.T) {
	app, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.NewWorker(app)
	app.Close()
	body := get(t, m.Handler(slog.New(slog.DiscardHandler)))
	if !strings.Contains(body, "handoff_delivery_attempts_total") || strings.Contains(body, "handoff_outbox_rows{") {
		t.Errorf("a scrape of a closed database:\n%s", body)
	}
}

// get scrapes h.
func get(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// BenchmarkScrape100k is one whole scrape of /metrics, the outbox's
// query included, over 100,000 rows.
func BenchmarkScrape100k(b *testing.B) {
	for _, be := range []struct {
		name string
		app  func(testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "app.db") }},
		{"postgres", pgtest.URL},
	} {
		b.Run(be.name, func(b *testing.B) {
			app, err := system.Open(context.Background(), be.app(b), system.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer app.Close()
			if err := bulk.Fill(b.Context(), app, 100_000, bulk.DefaultMix, time.Now().Add(-time.Hour)); err != nil {
				b.Fatal(err)
			}
			h := metrics.NewWorker(app).Handler(slog.New(slog.DiscardHandler))
			if body := get(b, h); !strings.Contains(body, `handoff_outbox_rows{state="sent"} 90000`) {
				b.Fatalf("the scrape does not count the rows:\n%s", body)
			}
			b.ResetTimer()
			for b.Loop() {
				get(b, h)
			}
		})
	}
}
