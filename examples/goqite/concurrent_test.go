package outbox

import (
	"context"
	"database/sql"
	"github.com/outboxlab/handoff"
	"testing"
	"time"

	"maragu.dev/goqite"
)

// TestPostgresReceivesTwice shows what the harness, which runs one
// transaction at a time, cannot: on PostgreSQL two concurrent ReceiveTx
// calls in transactions at the server's default isolation (read
// committed) return the same message. goqite's receive is
//
//	update goqite set timeout = …, received = received + 1
//	where id = (select id from goqite where … ? >= timeout … limit 1)
//
// and at read committed the subquery runs once, before the row lock: the
// second receiver waits for the first one's lock, and when the first
// commits it updates the same row again, the visibility condition
// unchecked. goqite's own Receive begins its transaction serializable, and
// so does the app (see App.inTx): there the second receive fails with a
// serialization failure instead, which the app retries. The test holds
// the first receive open until the second waits on its lock, then commits.
func TestPostgresReceivesTwice(t *testing.T) {
	server := handoff.PostgresServer(t)
	for _, c := range []struct {
		isolation sql.IsolationLevel
		twice     bool
	}{{sql.LevelDefault, true}, {postgresFlavor.txOptions.Isolation, false}} { // the second: the adapter's own
		t.Run(c.isolation.String(), func(t *testing.T) {
			first, second, secondErr, received := receiveConcurrently(t, server, c.isolation)
			switch {
			case c.twice && (secondErr != nil || second == nil || second.ID != first.ID || received != 2):
				t.Fatalf("second receive got %v, %v (the message received %d times), want %s again", second, secondErr, received, first.ID)
			case !c.twice && (!serializationFailure(secondErr) || received != 1):
				t.Fatalf("second receive got %v, %v (the message received %d times), want a serialization failure", second, secondErr, received)
			}
			t.Logf("first receive %s; second %v, error %v; goqite counts %d receives", first.ID, second, secondErr, received)
		})
	}
}

// receiveConcurrently sends one message, receives it in a transaction at
// isolation, and receives again in another while the first is open: it
// returns both messages, the second receive's error, and how many
// receives goqite counted.
func receiveConcurrently(t *testing.T, server string, isolation sql.IsolationLevel) (*goqite.Message, *goqite.Message, error, int) {
	ctx := t.Context()
	db, f, err := openDB(newSchema(t, server))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	watcher, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	watcher.SetMaxOpenConns(1)
	if err := makeTables(ctx, db, f); err != nil {
		t.Fatal(err)
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: Queue, Timeout: time.Minute, SQLFlavor: f.goqite})
	if err := q.Send(ctx, goqite.Message{Body: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	receive := func() (*sql.Tx, *goqite.Message, error) {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: isolation})
		if err != nil {
			return nil, nil, err
		}
		m, err := q.ReceiveTx(ctx, tx)
		return tx, m, err
	}
	tx, m1, err := receive()
	if err != nil || m1 == nil {
		t.Fatalf("first receive: %v, %v", m1, err)
	}
	defer tx.Rollback()
	var pid int
	if err := tx.QueryRowContext(ctx, `select pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	type received struct {
		m   *goqite.Message
		err error
	}
	second := make(chan received, 1)
	go func() {
		tx, m, err := receive() // on the pool's other connection
		if err == nil {
			err = tx.Commit()
		} else if tx != nil {
			tx.Rollback()
		}
		second <- received{m, err}
	}()
	if err := waitBlocked(ctx, watcher, pid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-second
	var count int
	if err := db.QueryRowContext(ctx, `select received from goqite where id = $1`, string(m1.ID)).Scan(&count); err != nil {
		t.Fatal(err)
	}
	return m1, r.m, r.err, count
}

// waitBlocked waits until a session waits on a lock that the backend pid
// holds, or fails after ten seconds.
func waitBlocked(ctx context.Context, db *sql.DB, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		var n int
		if err := db.QueryRowContext(ctx, `select count(*) from pg_stat_activity where $1 = any(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
