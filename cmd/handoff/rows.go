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

// describeRow says where a row stands in words.
func describeRow(r system.Row, maxAttempts int) string {
	s := fmt.Sprintf("%s, %d of %d attempts", r.State, r.Attempts, maxAttempts)
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
