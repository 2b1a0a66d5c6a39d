package running

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// Config says what a run runs and where its database lives.
type Config struct {
	Design designs.Running
	// Database is the app database: a SQLite file's path (new for every
	// run), or a PostgreSQL URL whose schema is the run's own and empty.
	Database string
	Backend  string
	// Stall is how long, in real time, the run may make no progress at
	// all before the watchdog stops it; 0 means DefaultStall.
	Stall time.Duration
}

// Result is what one run of a schedule did.
type Result struct {
	Schedule  Schedule
	Violation *Violation // nil when every check held
	Requests  []Request
	Tasks     []Task
	Log       []Entry // what the harness did and read

	Virtual time.Duration // the virtual time the run took
	Boots   int
}

// checkEvery is how often, in virtual time, the harness reads the
// outbox once the last fault is over, to check it and to see whether
// every key is final.
const checkEvery = 5 * time.Second

// stopWait bounds, in virtual time, how long the harness waits for a
// process's Stop.
const stopWait = time.Minute

// Run runs s on cfg's design inside a testing/synctest bubble, where
// the design's goroutines read a virtual clock, and checks its history.
// It fails t only when the bubble itself does (a goroutine left behind).
func Run(t *testing.T, cfg Config, s Schedule) Result {
	var res Result
	w := &watchdog{stall: cmp.Or(cfg.Stall, DefaultStall)}
	done := make(chan struct{})
	defer close(done)
	go w.watch(done)
	defer func() {
		// A goroutine the design left waiting for good after its Stop
		// makes the bubble panic as its root returns: a failure of the
		// design's Stop, said as one.
		if p := recover(); p != nil {
			msg := fmt.Sprint(p)
			if !strings.Contains(msg, "deadlock") {
				panic(p)
			}
			why := fmt.Sprintf("a goroutine the boot started waits for good after its Stop (%s): Stop must end every goroutine it started", msg)
			if res.Violation == nil {
				res.Violation = &Violation{Check: "run", At: res.Virtual, Detail: why}
			} else {
				res.Violation.Detail += "; and " + why
			}
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		r := &runner{cfg: cfg, s: s, start: time.Now(), h: &history{budget: cfg.Design.Budget}, watch: w}
		r.rec = newReceiver(s, r.start)
		res = r.run(t.Context())
		// A goroutine that outlives Stop by a timer's sleep (a library's
		// housekeeping that checks its context between sleeps) ends in
		// this minute.
		time.Sleep(stopWait)
	})
	return res
}

// runner is one run in its bubble.
type runner struct {
	cfg   Config
	watch *watchdog
	s     Schedule
	start time.Time
	rec   *Receiver
	h     *history
	log   []Entry
	boots int

	p      *process
	booted designs.Booted
	cancel context.CancelFunc
}

func (r *runner) now() time.Duration { return time.Since(r.start) }

// sleep waits d of virtual time, and reports why the watchdog stopped
// the run, if it did.
func (r *runner) sleep(d time.Duration) *Violation {
	if d > 0 {
		time.Sleep(d)
	}
	r.watch.moved()
	if why := r.watch.reason(); why != "" {
		return &Violation{Check: "run", At: r.now(), Detail: why}
	}
	return nil
}

// logf records what happened now in lane.
func (r *runner) logf(lane, format string, args ...any) {
	r.log = append(r.log, Entry{At: r.now(), Lane: lane, Text: fmt.Sprintf(format, args...)})
}

// bootLane names the lane of the process's boot gen.
func bootLane(gen int) string { return fmt.Sprintf("boot %d", gen) }

func (r *runner) run(ctx context.Context) Result {
	v := r.events(ctx)
	if r.booted != nil {
		if err := r.stop(); err != nil {
			if v == nil {
				v = &Violation{Check: "run", At: r.now(), Detail: err.Error()}
			} else {
				v.Detail += "; " + err.Error()
			}
		}
	}
	return Result{Schedule: r.s, Violation: v, Requests: r.rec.Requests(), Tasks: r.rec.snapshot().tasks, Log: r.log, Virtual: r.now(), Boots: r.boots}
}

// events boots the app, plays the schedule's events at their times, then
// lets virtual time run until every key is final or the horizon passes,
// checking the history all along.
func (r *runner) events(ctx context.Context) *Violation {
	if err := r.boot(ctx); err != nil {
		return &Violation{Check: "run", Detail: err.Error()}
	}
	for _, e := range r.s.Events {
		if v := r.sleep(e.At - r.now()); v != nil {
			return v
		}
		if v := r.apply(ctx, e); v != nil {
			return v
		}
		if _, v := r.check(ctx); v != nil {
			return v
		}
	}
	horizon := r.s.Last() + r.cfg.Design.Settle
	r.logf(LaneHarness, "the last fault is over at %s; the horizon is %s", r.s.Last(), horizon)
	for {
		if v := r.sleep(min(checkEvery, horizon-r.now())); v != nil {
			return v
		}
		rows, v := r.check(ctx)
		if v != nil {
			return v
		}
		if r.h.final(rows) && r.quiet() || r.now() >= horizon {
			r.logf(LaneHarness, "read:%s", showRows(rows))
			return r.h.settled(r.now(), rows, r.rec.snapshot())
		}
	}
}

// quiet reports whether no request is under way at the receiver.
func (r *runner) quiet() bool {
	for _, q := range r.rec.Requests() {
		if q.Outcome == "" {
			return false
		}
	}
	return true
}

// apply does e.
func (r *runner) apply(ctx context.Context, e Event) *Violation {
	switch e.Kind {
	case Approve:
		return r.approve(ctx, e)
	case Crash:
		r.logf(bootLane(r.p.gen), "crash: every goroutine stopped, every connection cut")
		r.p.crash()
		if err := r.stop(); err != nil {
			return &Violation{Check: "run", At: r.now(), Detail: err.Error()}
		}
		if err := r.boot(ctx); err != nil {
			return &Violation{Check: "run", At: r.now(), Detail: err.Error()}
		}
	case Reset, CommitLost:
		if r.cfg.Backend != "postgres" {
			// A SQLite database is a file in the process: only a crash
			// cuts it.
			r.logf(bootLane(r.p.gen), "%s: not on SQLite, whose connections only a crash cuts", e.Kind)
			return nil
		}
		if e.Kind == Reset {
			r.logf(bootLane(r.p.gen), "reset: %d database connections cut", r.p.reset())
			return nil
		}
		r.logf(bootLane(r.p.gen), "commit-lost: the next COMMIT loses its reply")
		r.p.loseCommitReply()
	case Outage:
		r.logf(LaneReceiver, "outage: down until %s", e.At+e.For)
	}
	return nil
}

// approve approves e's case through the running process, and checks H3.
func (r *runner) approve(ctx context.Context, e Event) *Violation {
	key, payload, err := r.booted.Approve(ctx, e.Case, e.Title)
	a := approval{At: r.now(), Case: e.Case, Title: e.Title, Key: key, Payload: payload, Committed: err == nil}
	if err != nil {
		a.Err = err.Error()
		r.logf(LaneApp, "approve %s: %v (outcome unknown)", e.Case, err)
	} else {
		r.logf(LaneApp, "approve %s: committed %s", e.Case, key)
	}
	r.h.approvals = append(r.h.approvals, a)
	if !a.Committed {
		return nil
	}
	rows, v := r.read(ctx)
	if v != nil {
		return v
	}
	if _, ok := rows[key]; !ok {
		return &Violation{Check: "H3", At: r.now(), Detail: fmt.Sprintf("approve %s committed, and the outbox does not show %s", e.Case, key)}
	}
	return nil
}

// check reads the outbox and checks it against what the receiver knew
// before the read (attempts cover every request it had seen) and after
// it (a row sent, or gone, has its task).
func (r *runner) check(ctx context.Context) (map[string]designs.RunningRow, *Violation) {
	before := r.rec.snapshot()
	rows, v := r.read(ctx)
	if v != nil {
		return nil, v
	}
	return rows, r.h.check(r.now(), before, rows, r.rec.snapshot())
}

// read reads the outbox through the running process, trying again for
// a minute while its connections come back after a fault.
func (r *runner) read(ctx context.Context) (map[string]designs.RunningRow, *Violation) {
	var last error
	for range 60 {
		rows, err := r.booted.Read(ctx)
		if err == nil {
			return rows, nil
		}
		last = err
		if v := r.sleep(time.Second); v != nil {
			return nil, v
		}
	}
	return nil, &Violation{Check: "run", At: r.now(), Detail: fmt.Sprintf("reading the outbox failed for a minute: %v", last)}
}

// boot starts a new process of the design.
func (r *runner) boot(ctx context.Context) error {
	r.boots++
	ctx, cancel := context.WithCancel(ctx)
	p := &process{watch: r.watch, gen: r.boots, backend: r.cfg.Backend, database: r.cfg.Database, receiver: r.rec, conns: map[cuttable]struct{}{}, crashed: make(chan struct{}), stopping: make(chan struct{})}
	b, err := r.cfg.Design.Boot(ctx, p)
	if err != nil {
		cancel()
		p.crash()
		return fmt.Errorf("boot %d of %s: %w", r.boots, r.cfg.Design.Name, err)
	}
	r.p, r.booted, r.cancel = p, b, cancel
	r.watch.watching(p)
	r.logf(bootLane(r.boots), "booted")
	return nil
}

// stop cancels the process's context and waits for its Stop, for at
// most stopWait.
func (r *runner) stop() error {
	r.p.stop()
	r.cancel()
	done := make(chan error, 1)
	go func(b designs.Booted) { done <- b.Stop() }(r.booted)
	r.booted = nil
	select {
	case err := <-done:
		if err != nil && r.p.alive() {
			return fmt.Errorf("boot %d ended with an error, its workers stopped (a process would exit): %w", r.p.gen, err)
		}
		r.p.crash() // whatever is left open of it
		return nil
	case <-time.After(stopWait):
		return fmt.Errorf("boot %d of %s did not stop within %s of virtual time: Stop must end every goroutine the boot started", r.p.gen, r.cfg.Design.Name, stopWait)
	}
}

// showRows is the rows as one line.
func showRows(rows map[string]designs.RunningRow) string {
	s := ""
	for _, k := range sortedKeys(rows) {
		row := rows[k]
		s += fmt.Sprintf(" %s=%s", k, row.State)
		if row.TaskID != 0 {
			s += fmt.Sprintf("(task %d)", row.TaskID)
		}
		if row.Reason != "" {
			s += fmt.Sprintf("(%s)", row.Reason)
		}
	}
	return s
}
