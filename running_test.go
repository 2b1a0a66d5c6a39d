package handoff_test

import (
	"testing"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/pgtest"
)

// TestVerifyRunningPool verifies the handoff's own worker pool, as
// handoff work runs it, as it runs: on SQLite.
func TestVerifyRunningPool(t *testing.T) {
	handoff.VerifyRunning(t, designs.Pool, handoff.RunningOptions{Corpus: "corpus/running"})
}

// TestVerifyRunningPoolOnPostgres verifies it on PostgreSQL.
func TestVerifyRunningPoolOnPostgres(t *testing.T) {
	handoff.VerifyRunning(t, designs.Pool, handoff.RunningOptions{Backend: handoff.Postgres, PostgresURL: pgtest.Server(t), Corpus: "corpus/running"})
}
