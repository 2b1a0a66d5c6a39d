// Package bulk fills an app database with many rows at once, for the
// measurements and tests that need a large outbox: a scrape of the
// metrics, a page of the operator's page. It writes the tables directly,
// in one transaction, as the outbox's own writes would leave them.
package bulk

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// Mix says how the rows are spread over the states: every Blocked-th row
// is blocked (last error conflict), every Pending-th of the others
// pending, the rest sent. 0 leaves a state out.
type Mix struct {
	Pending, Blocked int
}

// DefaultMix is a production-like outbox: most rows sent, one in ten
// pending, one in a hundred blocked.
var DefaultMix = Mix{Pending: 10, Blocked: 100}

// Fill inserts n approvals and their outbox rows, bulk-1 to bulk-n, into
// the app database of o, approved one millisecond apart from start on.
// Sent rows name task i; nothing is leased. On PostgreSQL it then
// vacuums and analyzes the tables, as autovacuum would.
func Fill(ctx context.Context, o *system.Outbox, n int, mix Mix, start time.Time) error {
	series := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) `
	from := `n`
	title := `'Call back'`
	if system.IsPostgres(o.Path()) {
		series = ``
		from = `generate_series(1, $1::bigint) AS n(i)`
		title = `convert_to('Call back', 'UTF8')`
	}
	state := `CASE WHEN ?3 > 0 AND i % ?3 = 0 THEN 'blocked' WHEN ?2 > 0 AND i % ?2 = 0 THEN 'pending' ELSE 'sent' END`
	approvals := series + `INSERT INTO approvals (key, case_id, title, payload)
		SELECT '` + system.KeyPrefix + `bulk-' || i, 'bulk-' || i, ` + title + `, '{"case_id":"bulk-' || i || '","title":"Call back"}' FROM ` + from
	rows := series + `INSERT INTO outbox (key, state, attempts, remote_id, last_error, created_at, next_attempt_at, first_claimed_at, last_attempt_at, sent_at)
		SELECT '` + system.KeyPrefix + `bulk-' || i, ` + state + `,
			CASE WHEN ` + state + ` = 'pending' THEN 0 ELSE 1 END,
			CASE WHEN ` + state + ` = 'sent' THEN i END,
			CASE WHEN ` + state + ` = 'blocked' THEN 'conflict' END,
			?4 + i, ?4 + i,
			CASE WHEN ` + state + ` = 'pending' THEN 0 ELSE ?4 + i END,
			CASE WHEN ` + state + ` = 'pending' THEN 0 ELSE ?4 + i END,
			CASE WHEN ` + state + ` = 'sent' THEN ?4 + i ELSE 0 END
		FROM ` + from
	tx, err := o.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, o.Query(approvals), n); err != nil {
		return fmt.Errorf("bulk: approvals: %w", err)
	}
	if _, err := tx.ExecContext(ctx, o.Query(rows), n, mix.Pending, mix.Blocked, start.UnixMilli()); err != nil {
		return fmt.Errorf("bulk: outbox rows: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if system.IsPostgres(o.Path()) {
		// What autovacuum does soon after a bulk insert: the planner's
		// statistics, and the visibility map that lets a count read an
		// index alone.
		if _, err := o.DB().ExecContext(ctx, `VACUUM (ANALYZE) outbox, approvals`); err != nil {
			return fmt.Errorf("bulk: vacuum: %w", err)
		}
	}
	return nil
}
