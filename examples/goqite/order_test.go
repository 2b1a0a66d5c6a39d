package outbox

import (
	"fmt"
	"github.com/outboxlab/handoff"
	"path/filepath"
	"testing"
	"time"

	"maragu.dev/goqite"
)

// TestTiesInCreated looks at goqite's order without priorities (order by
// created, a millisecond on SQLite, the transaction's start on
// PostgreSQL; message ids are random): two batches of 200 messages, each
// sent in one transaction, with 150 received and deleted between them.
// Many messages share a created time, and goqite returns them in the
// order the index breaks the tie in (SQLite's rowid, PostgreSQL's heap
// position), which is insertion order here. The test passes only if the
// ties are there and insertion order held: nothing in goqite promises the
// second, which is why the recommended variant orders by priority.
func TestTiesInCreated(t *testing.T) {
	targets := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "app.db") },
		"postgres": func(t *testing.T) string { return newSchema(t, handoff.PostgresServer(t)) },
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			db, f, err := openDB(target(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := makeTables(ctx, db, f); err != nil {
				t.Fatal(err)
			}
			q := goqite.New(goqite.NewOpts{DB: db, Name: Queue, Timeout: time.Hour, SQLFlavor: f.goqite})
			send := func(from int) {
				tx, err := db.BeginTx(ctx, f.txOptions)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				for i := from; i < from+200; i++ {
					if err := q.SendTx(ctx, tx, goqite.Message{Body: []byte(fmt.Sprint(i))}); err != nil {
						t.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			receive := func(from, to int) {
				for i := from; i < to; i++ {
					m, err := q.Receive(ctx)
					if err != nil || m == nil {
						t.Fatalf("receive %d: %v, %v", i, m, err)
					}
					if string(m.Body) != fmt.Sprint(i) {
						t.Fatalf("receive %d got message %s: insertion order broken", i, m.Body)
					}
					if i < 150 {
						if err := q.Delete(ctx, m.ID); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			send(0)
			receive(0, 150)
			send(200)
			receive(150, 400)
			var ties int
			if err := db.QueryRowContext(ctx, `select count(*) - count(distinct created) from goqite`).Scan(&ties); err != nil {
				t.Fatal(err)
			}
			if ties == 0 {
				t.Fatalf("no two of the messages share a created time: nothing shows the tie order")
			}
			t.Logf("%d of the 250 messages left repeat a created time that another holds; all 400 came in insertion order", ties)
		})
	}
}
