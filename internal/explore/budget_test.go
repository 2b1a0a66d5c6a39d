package explore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestPostgresConnectionBudget explores on a database of its own on the
// server, counting the sessions on it every few milliseconds: with one
// lane and with two, the most held at once stays within the budget the
// commands print, backend.PostgresConnections a lane, however many options,
// workers, restarts and crashes the sequences draw.
func TestPostgresConnectionBudget(t *testing.T) {
	conn := pgtest.Conn(t)
	ctx := context.Background()
	database := fmt.Sprintf("handoff_budget_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+database); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP DATABASE "+database+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + database
	for _, lanes := range []int{1, 2} {
		var peak atomic.Int64
		done := make(chan struct{})
		polled := make(chan error, 1)
		go func() {
			var err error
			defer func() { polled <- err }()
			for {
				var n int64
				if err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, database).Scan(&n); err != nil {
					return
				}
				if n > peak.Load() {
					peak.Store(n)
				}
				select {
				case <-done:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		r, err := Run(t.Context(), Config{Checks: 30, Steps: DefaultSteps, Seed: 3, Parallel: lanes, Dir: t.TempDir(),
			Backend: backend.Postgres, PostgresURL: u.String()})
		close(done)
		if perr := <-polled; perr != nil {
			t.Fatal(perr)
		}
		if err != nil || r.Failure != nil || r.Problem != "" {
			t.Fatalf("%d lanes: the exploration failed: %v %v %s", lanes, err, r.Failure, r.Problem)
		}
		budget := int64(lanes * backend.PostgresConnections)
		t.Logf("%d lanes: at most %d sessions at once, budget %d", lanes, peak.Load(), budget)
		if peak.Load() == 0 || peak.Load() > budget {
			t.Errorf("%d lanes held %d sessions at once, want 1 to %d", lanes, peak.Load(), budget)
		}
	}
}
