package main

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// countStates counts the rows in each state.
func countStates(ctx context.Context, app *system.Outbox) (map[system.State]int, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return stateCounts(snap.Outbox), nil
}

// stateCounts counts rows in each state, every state listed, with 0 when
// none is in it.
func stateCounts(rows []system.Row) map[system.State]int {
	c := map[system.State]int{system.Pending: 0, system.Sent: 0, system.Blocked: 0}
	for _, r := range rows {
		c[r.State]++
	}
	return c
}

// rowBudget is the attempt budget of the rows of an app database, the
// one every command shows ("N of B attempts") and deliver applies: the
// largest --max-attempts a worker recorded there when it claimed
// (system.Outbox.Budget), else the contract's default. One budget for a
// row, whichever command shows it, and it says where it comes from.
type rowBudget int

// budgetOf reads the attempt budget of app's rows.
func budgetOf(ctx context.Context, app *system.Outbox) (rowBudget, error) {
	n, err := app.Budget(ctx)
	return rowBudget(max(n, system.DefaultMaxAttempts)), err
}

// source says where the budget comes from.
func (b rowBudget) source() string {
	if b > system.DefaultMaxAttempts {
		return fmt.Sprintf("budget %d, recorded in the app database by a worker's --max-attempts", b)
	}
	return fmt.Sprintf("budget %d, the contract's default until a worker with a larger --max-attempts claims a row (work's default is %d)", b, system.PoolMaxAttempts)
}

// describeRow says where a row stands in words.
func describeRow(r system.Row, budget rowBudget) string {
	s := fmt.Sprintf("%s, %d of %d attempts", r.State, r.Attempts, budget)
	if r.State == system.Sent {
		s += fmt.Sprintf(", CRM task %d", r.RemoteID)
	}
	if r.LastError != "" {
		s += ", last error " + r.LastError
	}
	return s
}

// age prints d to the second, or to the minute past an hour.
func age(d time.Duration) string {
	if d >= time.Hour {
		return d.Truncate(time.Minute).String()
	}
	return d.Truncate(time.Second).String()
}
