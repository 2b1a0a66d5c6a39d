package system

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Gauges is where the outbox stands at one moment, as a monitoring
// system samples it: rows by state, the blocked ones by why, the oldest
// pending row and the rows leased.
type Gauges struct {
	At      time.Time // the moment the counts were taken, by the Outbox's clock
	Pending int
	Sent    int
	Blocked int
	// BlockedBy counts the blocked rows by last error; every last error a
	// blocked row can carry is a key, with 0 when none has it.
	BlockedBy map[string]int
	// OldestPending is when the oldest pending row was approved; zero when
	// none is pending.
	OldestPending time.Time
	// Leased counts the pending rows a worker holds a live lease on:
	// being sent now.
	Leased int
}

// BlockedErrors are the last errors a blocked row can carry, in the
// order Gauges lists them.
var BlockedErrors = []string{LastErrorTransient, LastErrorConflict, LastErrorBudgetExhausted,
	LastErrorDeadline, LastErrorRetentionExpired, LastErrorRejected}

// sqlGauges counts the outbox in one query whose parts each cost what
// they count, never the whole outbox: the rows in all (SQLite counts a
// table's pages, PostgreSQL scans an index), the pending ones and the
// oldest of them (outbox_pending, in insertion order, as a claim finds
// the oldest), the live leases (outbox_lease) and the blocked rows by last
// error (outbox_blocked). Sent rows are the rest. ?1 is now.
var sqlGauges = `SELECT (SELECT count(*) FROM outbox),
	(SELECT count(*) FROM outbox WHERE state = 'pending'),
	coalesce((SELECT created_at FROM outbox WHERE state = 'pending' ORDER BY seq LIMIT 1), 0),
	(SELECT count(*) FROM outbox WHERE lease_owner IS NOT NULL AND lease_until > ?1)` + blockedCounts()

// blockedCounts are the parts of sqlGauges that count the blocked rows
// of each of BlockedErrors.
func blockedCounts() string {
	var b strings.Builder
	for _, e := range BlockedErrors {
		fmt.Fprintf(&b, ",\n\t(SELECT count(*) FROM outbox WHERE state = 'blocked' AND last_error = '%s')", e)
	}
	return b.String()
}

// Gauges counts the outbox in one aggregate query (see Gauges), cheap
// enough to run at every scrape of a monitoring system.
func (o *Outbox) Gauges(ctx context.Context) (Gauges, error) {
	now := o.opts.Harness.Now()
	g := Gauges{At: now.UTC(), BlockedBy: make(map[string]int, len(BlockedErrors))}
	var total, oldest int64
	by := make([]int, len(BlockedErrors))
	dest := []any{&total, &g.Pending, &oldest, &g.Leased}
	for i := range by {
		dest = append(dest, &by[i])
	}
	if err := o.q.queryRow(ctx, nil, sqlGauges, []any{millis(now)}, dest...); err != nil {
		return Gauges{}, driverError("counting the outbox", err)
	}
	g.OldestPending = fromMillis(oldest)
	for i, e := range BlockedErrors {
		g.BlockedBy[e] = by[i]
		g.Blocked += by[i]
	}
	g.Sent = int(total) - g.Pending - g.Blocked
	return g, nil
}

// sqlPing reads one row of a table every app database has.
const sqlPing = `SELECT count(*) FROM meta WHERE name = 'receiver'`

// Ping reports whether the app database answers a query on its schema:
// for a readiness check.
func (o *Outbox) Ping(ctx context.Context) error {
	var n int
	return driverError("asking the app database", o.q.queryRow(ctx, nil, sqlPing, nil, &n))
}
