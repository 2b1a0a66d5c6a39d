package system

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// A row's history: what the row itself does not keep, since it holds its
// latest attempt and error only. Every claim with the attempt it counted,
// what each attempt came to as far as this database recorded it, a block
// at a claim and its reason, and every repair with who and why and what
// it cleared, each written in the transaction that did it (schema
// version 4). The audit log keeps a person's actions alone; the history
// keeps them too, in their place among the row's events.

// The events of a row's history beside a person's actions (ActionRequeue,
// ActionReconcile, ActionReconcileAbsent), in HistoryEntry.Event.
const (
	EventClaim   Action = "claim"   // a worker counted an attempt and took the lease
	EventSent    Action = "sent"    // the attempt's answer, a task, was recorded
	EventRetry   Action = "retry"   // a transient failure: the row waits for its next attempt
	EventBlocked Action = "blocked" // the row blocked, at a claim or at an answer
	EventFailed  Action = "failed"  // the attempt failed on this side after it was counted
	EventCleared Action = "cleared" // what a person's repair set back: attempts, last error
)

const (
	sqlHistory   = `INSERT INTO history (at, key, actor, event, detail) VALUES (?, ?, ?, ?, ?)`
	sqlHistoryOf = `SELECT at, actor, event, key, detail FROM history WHERE key = ? ORDER BY seq`
)

// History reads the history of key's row, oldest first: its events and
// the actions of a person on it, in the order they were written. A row
// of a database from before schema version 4 has none from before its
// upgrade.
func (o *Outbox) History(ctx context.Context, key string) ([]AuditEntry, error) {
	return o.readAudit(ctx, sqlHistoryOf, key)
}

// writeHistory writes an event of key's row, by actor, at now, in tx.
func writeHistory(ctx context.Context, tx *sql.Tx, q *statements, now time.Time, key, actor string, event Action, detail string, args ...any) error {
	return driverError("writing the row's history", q.exec(ctx, tx, sqlHistory, millis(now), key, actor, string(event), fmt.Sprintf(detail, args...)))
}

// clearedAttempts starts what an EventCleared entry says of the attempts
// a repair set back to 0; Tries reads it back.
const clearedAttempts = "%d attempts"

// Tries is how often row was tried in all, across the repairs that set
// its attempts back to 0, from its history: the claims the history
// holds, or, where the history began after some of them, the attempts
// each repair cleared and those counted since, whichever is more.
func Tries(row Row, history []AuditEntry) int {
	claims, cleared := 0, row.Attempts
	for _, e := range history {
		switch e.Action {
		case EventClaim:
			claims++
		case EventCleared:
			var n int
			if _, err := fmt.Sscanf(e.Reason, clearedAttempts, &n); err == nil {
				cleared += n
			}
		}
	}
	return max(claims, cleared)
}
