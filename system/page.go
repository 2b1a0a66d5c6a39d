package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A person's view of a large outbox reads it a page at a time, in
// insertion order, each page from where the last one ended: a page costs
// what it shows, whatever the outbox holds. Pending and blocked rows are
// found through their own indexes (outbox_pending, outbox_blocked), so a
// page of them costs the same however many rows are sent.

// MaxPageRows is the most rows one page holds.
const MaxPageRows = 1000

// PageQuery says which rows a page holds: those in State ("" for every
// state), approved before ApprovedBefore when it is not zero, after the
// row After (0 for the first page; a Page's Next for the page after
// it), at most Limit of them (1 to MaxPageRows).
type PageQuery struct {
	State          State
	ApprovedBefore time.Time
	After          int64
	Limit          int
}

// Page is one page of the outbox: its rows in insertion order, and the
// After of the page that follows it, 0 when there is none.
type Page struct {
	Rows []Row
	Next int64
}

// pageQueries are the queries of a page, by state: each names its state
// as a constant, so that the database finds the rows through that
// state's index. ?1 is After, ?2 ApprovedBefore (0 for any), ?3 the
// number of rows to read.
var pageQueries = func() map[State]string {
	m := map[State]string{}
	for _, st := range []State{"", Pending, Sent, Blocked} {
		where := `WHERE o.seq > ?1 AND (CAST(?2 AS BIGINT) = 0 OR o.created_at < ?2)`
		if st != "" {
			where += ` AND o.state = '` + string(st) + `'`
		}
		m[st] = `SELECT o.seq, ` + rowColumns + ` ` + where + ` ORDER BY o.seq LIMIT ?3`
	}
	return m
}()

// Page reads one page of the outbox (see PageQuery).
func (o *Outbox) Page(ctx context.Context, pq PageQuery) (Page, error) {
	query, ok := pageQueries[pq.State]
	switch {
	case !ok:
		return Page{}, invalid("state %q is not pending, sent or blocked", pq.State)
	case pq.Limit < 1 || pq.Limit > MaxPageRows:
		return Page{}, invalid("a page of %d rows, want 1 to %d", pq.Limit, MaxPageRows)
	case pq.After < 0:
		return Page{}, invalid("a page after row %d, want 0 or more", pq.After)
	}
	rows, err := o.q.query(ctx, nil, query, pq.After, millis0(pq.ApprovedBefore), pq.Limit+1)
	if err != nil {
		return Page{}, driverError("reading a page of the outbox", err)
	}
	defer rows.Close()
	var p Page
	var seqs []int64
	for rows.Next() {
		var seq int64
		r, err := scanRow(seqScanner{rows, &seq})
		if err != nil {
			return Page{}, driverError("reading a page of the outbox", err)
		}
		p.Rows = append(p.Rows, r)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return Page{}, driverError("reading a page of the outbox", err)
	}
	if len(p.Rows) > pq.Limit {
		p.Rows = p.Rows[:pq.Limit]
		p.Next = seqs[pq.Limit-1]
	}
	return p, nil
}

// seqScanner scans a row's seq, then the columns of rowColumns.
type seqScanner struct {
	sc  interface{ Scan(...any) error }
	seq *int64
}

func (s seqScanner) Scan(dest ...any) error { return s.sc.Scan(append([]any{s.seq}, dest...)...) }

// The queries of one key's approval and audit entries.
const (
	sqlApproval = `SELECT key, case_id, title, payload FROM approvals WHERE key = ?`
	sqlAuditOf  = `SELECT at, actor, action, key, reason FROM audit WHERE key = ? ORDER BY seq`
)

// Approval reads the approval of key, or returns ErrNotFound.
func (o *Outbox) Approval(ctx context.Context, key string) (Approval, error) {
	var a Approval
	err := o.q.queryRow(ctx, nil, sqlApproval, []any{key}, &a.Key, &a.CaseID, &a.Title, &a.Payload)
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, fmt.Errorf("%w: no approval for %q", ErrNotFound, key)
	}
	return a, driverError("reading the approval of "+strconv.Quote(key), err)
}

// AuditOf reads the audit log's entries for key, oldest first. The audit
// log is small, a line per action of a person, and read whole.
func (o *Outbox) AuditOf(ctx context.Context, key string) ([]AuditEntry, error) {
	return o.readAudit(ctx, sqlAuditOf, key)
}
