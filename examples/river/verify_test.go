package riveroutbox

import (
	"testing"

	"github.com/outboxlab/handoff"
)

// TestVerify checks the one-worker River outbox on SQLite against the
// handoff's contract: its own scenarios and the handoff's corpus, each
// also crashed at every fault point, then the rapid property.
func TestVerify(t *testing.T) {
	handoff.Verify(t, OneWorker.Design(), handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true, Enumerate: true})
}

// TestVerifyOnPostgres is TestVerify with the app database (the approvals
// table and River's tables) in a PostgreSQL schema of its own, through
// River's pgx driver. It skips when no server answers at postgresURL.
func TestVerifyOnPostgres(t *testing.T) {
	url := postgresURL(t)
	handoff.Verify(t, OneWorker.Design(), handoff.VerifyOptions{Corpus: "testdata/handoff", Builtin: true,
		Backend: handoff.Postgres, PostgresURL: url, Enumerate: true})
}
