package running

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/system"
)

// TestCrashLosesTheOpenTransaction: a crash cuts every connection of
// the process at once, so that its open transaction is lost and its
// commit fails, on SQLite and PostgreSQL; then its new connections are
// refused; a reset cuts them too, and the process connects again.
func TestCrashLosesTheOpenTransaction(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(t *testing.T, p *process) (*sql.DB, func(t *testing.T) *sql.DB)
	}{
		{"sqlite", func(t *testing.T, p *process) (*sql.DB, func(t *testing.T) *sql.DB) {
			path := filepath.Join(t.TempDir(), "app.db")
			o, err := system.Open(t.Context(), path, system.Options{Harness: system.Harness{WrapSQLite: p.WrapSQLite}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { o.Close() })
			return o.DB(), func(t *testing.T) *sql.DB {
				plain, err := system.Open(t.Context(), path, system.Options{Worker: "reader"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { plain.Close() })
				return plain.DB()
			}
		}},
		{"postgres", func(t *testing.T, p *process) (*sql.DB, func(t *testing.T) *sql.DB) {
			url := pgtest.URL(t)
			o, err := system.Open(t.Context(), url, system.Options{Dial: p.Dial})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { o.Close() })
			return o.DB(), func(t *testing.T) *sql.DB {
				plain, err := system.Open(t.Context(), url, system.Options{Worker: "reader"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { plain.Close() })
				return plain.DB()
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProcess(&watchdog{}, 1, 1, nil)
			db, reader := tt.open(t, p)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES ('crash', 'written')`); err != nil {
				t.Fatal(err)
			}
			p.crash()
			if err := tx.Commit(); err == nil {
				t.Fatal("the transaction open at the crash committed")
			}
			var n int
			if err := reader(t).QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE name = 'crash'`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("after the crash the row written in its transaction is there %d times (%v), want 0", n, err)
			}
			if err := db.PingContext(ctx); !errors.Is(err, ErrCrashed) {
				t.Fatalf("a connection after the crash: got %v, want %v", err, ErrCrashed)
			}
		})
	}
}

// TestResetCutsAndTheProcessGoesOn: a reset cuts the connections of a
// process that lives on: its next statement connects again.
func TestResetCutsAndTheProcessGoesOn(t *testing.T) {
	p := newProcess(&watchdog{}, 1, 1, nil)
	o, err := system.Open(t.Context(), pgtest.URL(t), system.Options{Dial: p.Dial, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if n := p.reset(); n != 1 {
		t.Errorf("reset cut %d connections, want the 1 the handle holds", n)
	}
	if _, err := o.Snapshot(t.Context()); err != nil {
		t.Fatalf("after a reset: %v", err)
	}
}
