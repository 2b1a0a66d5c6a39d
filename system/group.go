package system

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// group commits together the writes that this process's handles on one
// database file, of one durability, make at the same time: a durable
// commit costs a sync of the disk, and one sync can carry many writes.
//
// A write that finds no batch running runs at once, alone: it never waits
// for company. Writes that arrive while a batch runs queue up, and when
// that batch is over the first of them runs the whole queue, in arrival
// order, in one BEGIN IMMEDIATE transaction on its own handle. Each write
// runs in a savepoint and sees what the writes before it did, so the
// outcome is what running them one after the other would give: a write
// that returns an error is rolled back to its savepoint and returns that
// error, and the others go on. When the batch's transaction itself fails
// (it cannot begin, a write's error rolled the whole transaction back, or
// the commit fails), nothing of any of its writes is written and every
// one returns the failure. Nothing is retried.
type group struct {
	mu      sync.Mutex
	queue   []*write // waiting for the next batch, in arrival order
	running bool     // a batch is running; the next arrivals queue

	commits, writes atomic.Int64
}

// write is one caller's transaction body, waiting in a group or running.
type write struct {
	ctx     context.Context // the caller's: a write whose caller gave up before its turn is not run
	doing   string
	queries []string // what fn runs, prepared on the batch's handle before it begins
	fn      func(ctx context.Context, tx *sql.Tx, q *statements) error
	err     error
	// turn receives true when the write has run (err says how), false
	// when its caller must run the next batch.
	turn chan bool
}

// do runs fn, which runs queries, in a write transaction through the
// handle q, together with
// the writes of the group's other handles that queue meanwhile (see
// group). fn must use q and the ctx it is given, not the caller's: it may
// run on another caller's handle, and a context cancelled in the middle
// of a batch would roll the whole batch back. A context already cancelled
// when do is called writes nothing.
func (g *group) do(ctx context.Context, q *statements, doing string, queries []string, fn func(ctx context.Context, tx *sql.Tx, q *statements) error) error {
	if err := ctx.Err(); err != nil {
		return driverError(doing, err)
	}
	w := &write{ctx: ctx, doing: doing, queries: queries, fn: fn, turn: make(chan bool, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if !lead && <-w.turn {
		return w.err
	}
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	defer g.handOff(batch)
	g.run(q, batch)
	return w.err
}

// handOff, once batch has run, tells each of its writes and hands the
// lead to the first write queued meanwhile, if any. When a write of the
// batch panicked, its transaction was rolled back: every write of the
// batch gets an error that says so, and the panic goes on in the caller
// that ran the batch.
func (g *group) handOff(batch []*write) {
	p := recover()
	for _, b := range batch {
		if p != nil {
			b.err = fmt.Errorf("%w: %s: %v", ErrBatchPanicked, b.doing, p)
		}
		b.turn <- true
	}
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].turn <- false
	} else {
		g.running = false
	}
	g.mu.Unlock()
	if p != nil {
		panic(p)
	}
}

// The statements that keep one write of a batch apart from the others.
const (
	sqlSavepoint   = `SAVEPOINT write`
	sqlRollbackTo  = `ROLLBACK TO write`
	sqlReleaseSave = `RELEASE write`
)

// run runs batch in one transaction on q's handle and sets each write's
// error.
func (g *group) run(q *statements, batch []*write) {
	ctx := context.Background()
	err := func() error {
		// A write that fails is rare: its ROLLBACK TO is parsed then.
		if err := q.ensure(ctx, sqlSavepoint, sqlReleaseSave); err != nil {
			return err
		}
		for _, w := range batch {
			if err := q.ensure(ctx, w.queries...); err != nil {
				return err
			}
		}
		tx, err := q.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, w := range batch {
			if err := w.ctx.Err(); err != nil {
				w.err = driverError(w.doing, err) // its caller gave up while it waited
				continue
			}
			if err := q.exec(ctx, tx, sqlSavepoint); err != nil {
				return err
			}
			if w.err = w.fn(ctx, tx, q); w.err != nil {
				// An error that rolled the whole transaction back (a
				// full disk) took the savepoint with it: the batch fails
				// with that error.
				if q.exec(ctx, tx, sqlRollbackTo) != nil {
					return w.err
				}
			}
			if err := q.exec(ctx, tx, sqlReleaseSave); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		for _, w := range batch {
			w.err = driverError(w.doing, err)
		}
		return
	}
	written := 0
	for _, w := range batch {
		if w.err == nil {
			written++
		}
	}
	if written > 0 {
		g.commits.Add(1)
		g.writes.Add(int64(written))
	}
}

// CommitStats counts the write transactions this process committed on one
// database file, of one durability, and the writes they carried (a write
// that failed or was refused carried nothing): Writes
// over Commits is how many writes one commit, one sync of the disk when
// durable, carried on average.
type CommitStats struct {
	Commits, Writes int64
}

func (g *group) stats() CommitStats {
	return CommitStats{Commits: g.commits.Load(), Writes: g.writes.Load()}
}
