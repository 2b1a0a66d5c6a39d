package system

import (
	"context"
	"database/sql"
)

// Queued is how many writes wait for the next batch in the group of o's
// database file: a test waits for it to form a batch of its choosing.
func Queued(o *Outbox) int { return queued(o.q.group) }

// QueuedCRM is Queued for a CRM.
func QueuedCRM(c *CRM) int { return queued(c.q.group) }

func queued(g *group) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// Hold runs, through o's handle, a write that writes nothing and keeps its
// batch running until release is closed, and returns once it runs: the
// writes made meanwhile queue up and run as the next batch. The returned
// channel yields the held write's error.
func Hold(o *Outbox, release <-chan struct{}) <-chan error { return holdGroup(o.q, release) }

// HoldCRM is Hold for a CRM.
func HoldCRM(c *CRM, release <-chan struct{}) <-chan error { return holdGroup(c.q, release) }

func holdGroup(q *statements, release <-chan struct{}) <-chan error {
	running, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- q.write(context.Background(), "holding the batch", nil, func(context.Context, *sql.Tx, *statements) error {
			close(running)
			<-release
			return nil
		})
	}()
	<-running
	return done
}

// PostgresVersion is the schema version of a PostgreSQL app database.
const PostgresVersion = postgresVersion
