package system_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/internal/bulk"
	"github.com/outboxlab/handoff/system"
)

// TestGauges: the one-query counts agree with the rows read one by one,
// on a fixed clock, whatever state the rows are in.
func TestGauges(t *testing.T) { eachBackend(t, testGauges) }

func testGauges(t *testing.T, b backend) {
	now := approvedAt
	clock := func() time.Time { return now }
	app, _, _ := openPair(t, b, system.Options{NoBackoff: true, Worker: "w", Harness: system.Harness{Now: clock}})
	empty, err := app.Gauges(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := system.Gauges{At: now, BlockedBy: map[string]int{}}
	for _, e := range system.BlockedErrors {
		want.BlockedBy[e] = 0
	}
	if diff := cmp.Diff(want, empty); diff != "" {
		t.Errorf("an empty outbox (-want +got):\n%s", diff)
	}
	if err := bulk.Fill(t.Context(), app, 1000, bulk.DefaultMix, approvedAt.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	// One row leased now, one waiting out a backoff.
	if _, d, err := app.ClaimNext(t.Context(), 0); err != nil || d.Result != system.ResultPending {
		t.Fatalf("claim: %+v, %v", d, err)
	}
	c, _, err := app.ClaimNext(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	later := system.Options{BackoffBase: time.Minute, Worker: "w", Harness: system.Harness{Now: clock, Jitter: func(c time.Duration) time.Duration { return c }}}
	backing, err := system.Open(t.Context(), app.Path(), later)
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close()
	if d, err := backing.Settle(t.Context(), c, 0, system.ErrTransient); err != nil || d.Result != system.ResultPending {
		t.Fatalf("settle: %+v, %v", d, err)
	}
	got, err := app.Gauges(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want = system.Gauges{At: now, BlockedBy: map[string]int{}}
	for _, e := range system.BlockedErrors {
		want.BlockedBy[e] = 0
	}
	for _, r := range snapshot(t, app).Outbox {
		switch r.State {
		case system.Pending:
			want.Pending++
			if want.OldestPending.IsZero() || r.CreatedAt.Before(want.OldestPending) {
				want.OldestPending = r.CreatedAt
			}
			if r.LeaseOwner != "" && r.LeaseUntil.After(now) {
				want.Leased++
			}
		case system.Sent:
			want.Sent++
		case system.Blocked:
			want.Blocked++
			want.BlockedBy[r.LastError]++
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gauges (-rows read one by one +gauges):\n%s", diff)
	}
	if want.Leased != 1 || want.Blocked != 10 || want.Pending != 90 {
		t.Errorf("the test made %d leased, %d blocked and %d pending rows, want 1, 10 and 90", want.Leased, want.Blocked, want.Pending)
	}
	if err := app.Ping(t.Context()); err != nil {
		t.Errorf("ping: %v", err)
	}
	// A lease is live up to its end, not at it: a claim may take the row
	// then (see ClaimNext).
	for _, tt := range []struct {
		at     time.Time
		leased int
	}{
		{approvedAt.Add(system.DefaultLease - time.Millisecond), 1},
		{approvedAt.Add(system.DefaultLease), 0},
	} {
		now = tt.at
		g, err := app.Gauges(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if g.Leased != tt.leased {
			t.Errorf("at %v, %v after the claim: %d rows leased, want %d", tt.at, tt.at.Sub(approvedAt), g.Leased, tt.leased)
		}
	}
}

// BenchmarkGauges100k is the cost of one scrape's query over 100,000 rows.
func BenchmarkGauges100k(b *testing.B) {
	for _, be := range []backend{sqliteBackend, postgresBackend} {
		b.Run(be.name, func(b *testing.B) {
			app, _, _ := openPair(b, be, system.Options{})
			if err := bulk.Fill(b.Context(), app, 100_000, bulk.DefaultMix, approvedAt); err != nil {
				b.Fatal(err)
			}
			if _, err := app.Gauges(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := app.Gauges(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
