package running

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/violation"
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
	Violation *violation.Violation // nil when every check held
	Requests  []Request
	Tasks     []Task
	Log       []Entry // what the harness did and read

	Virtual   time.Duration // the virtual time the run took
	Boots     int
	BootLanes []string // the lane of each boot, in boot order
	// Stalled says that the watchdog stopped the run because virtual
	// time stood still (see watchdog): the design waits on something
	// outside the bubble, which no schedule changes.
	Stalled bool
}

// checkEvery is how often, in virtual time, the harness reads the
// outbox once the last fault is over, to check it and to see whether
// every key is final.
const checkEvery = 5 * time.Second

// watchAfterFinal is how long, in virtual time, the harness goes on
// watching once every key is final and no request is under way: an
// outbox that takes a key up again after showing it final (a message
// left unacked behind a row shown discarded, say) does so within its
// polls and backoffs, and the checks judge what it then sends.
const watchAfterFinal = time.Minute

// stopWait bounds, in virtual time, how long the harness waits for a
// process's Stop.
const stopWait = time.Minute

// Run runs s on cfg's design inside a testing/synctest bubble, where
// the design's goroutines read a virtual clock, and checks its history.
// A goroutine the design leaves behind is a violation of the run, added
// to what the history showed.
func Run(t *testing.T, cfg Config, s Schedule) (res Result) {
	w := &watchdog{stall: cmp.Or(cfg.Stall, DefaultStall)}
	done := make(chan struct{})
	defer close(done)
	go w.watch(done)
	defer func() {
		// A goroutine the design left waiting for good after its Stop, or
		// after a boot that failed, makes the bubble panic as its root
		// returns: a failure of the design, said as one. The result is
		// named so that what the run found before the panic stays in it.
		if p := recover(); p != nil {
			msg := fmt.Sprint(p)
			if !strings.Contains(msg, "deadlock") {
				panic(p)
			}
			why := fmt.Sprintf("a goroutine the design started waits for good after the run (%s): Stop, and a Boot that fails, must end every goroutine they started", msg)
			if res.Violation == nil {
				res.Violation = violated("run", res.Virtual, why)
			} else {
				res.Violation.Detail += "; and " + why
			}
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		stuck := map[string]KeyFault{}
		for _, k := range s.Keys {
			stuck[k.Case] = k.Fault
		}
		h := &history{budget: cfg.Design.Budget, counts: cfg.Design.Counts, stuck: stuck}
		if cfg.Design.Holds != designs.HeldByLock {
			h.lease = cmp.Or(cfg.Design.Lease, defaultLease)
		}
		r := &runner{cfg: cfg, s: s, start: time.Now(), h: h, watch: w, procs: make([]*replica, s.replicas())}
		r.rec = newReceiver(s, r.start)
		res = r.run(t.Context())
		res.Stalled = w.reason() != ""
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
	lanes []string

	procs []*replica // the processes side by side, by replica number - 1
}

// replica is one of the processes of a run, as it runs now.
type replica struct {
	p      *process
	booted designs.Booted
	cancel context.CancelFunc
}

func (r *runner) now() time.Duration { return time.Since(r.start) }

// sleep waits d of virtual time, and reports why the watchdog stopped
// the run, if it did.
func (r *runner) sleep(d time.Duration) *violation.Violation {
	if d > 0 {
		time.Sleep(d)
	}
	r.watch.moved()
	if why := r.watch.reason(); why != "" {
		return violated("run", r.now(), why)
	}
	return nil
}

// logf records what happened now in lane.
func (r *runner) logf(lane, format string, args ...any) {
	r.log = append(r.log, Entry{At: r.now(), Lane: lane, Text: fmt.Sprintf(format, args...)})
}

// bootLane names the lane of a process's boot gen: "boot 2", or with
// replicas side by side "replica 1 boot 2".
func bootLane(replicas, replica, gen int) string {
	if replicas > 1 {
		return fmt.Sprintf("replica %d boot %d", replica, gen)
	}
	return fmt.Sprintf("boot %d", gen)
}

// lane is the lane of p's boot.
func (r *runner) lane(p *process) string { return bootLane(r.s.replicas(), p.replica, p.gen) }

func (r *runner) run(ctx context.Context) Result {
	v := r.events(ctx)
	for _, rep := range r.procs {
		if rep == nil || rep.booted == nil {
			continue
		}
		if err := r.stop(rep); err != nil {
			if v == nil {
				v = violated("run", r.now(), err.Error())
			} else {
				v.Detail += "; " + err.Error()
			}
		}
	}
	return Result{Schedule: r.s, Violation: v, Requests: r.rec.Requests(), Tasks: r.rec.snapshot().tasks, Log: r.log, Virtual: r.now(), Boots: r.boots, BootLanes: r.lanes}
}

// events boots the app, plays the schedule's events at their times, then
// lets virtual time run until every key has been final, with no request
// under way, for watchAfterFinal, or the horizon passes, checking the
// history all along.
func (r *runner) events(ctx context.Context) *violation.Violation {
	for i := range r.procs {
		if err := r.boot(ctx, i+1); err != nil {
			return violated("run", 0, err.Error())
		}
	}
	for _, e := range r.s.Events {
		if v := r.sleep(e.At - r.now()); v != nil {
			return v
		}
		if late := r.now() - e.At; late > 0 {
			r.logf(LaneHarness, "the next event, scheduled at %s, comes %s late: the last read of the outbox waited for its connections", e.At, late)
		}
		if v := r.apply(ctx, e); v != nil {
			return v
		}
		if _, v := r.check(ctx); v != nil {
			return v
		}
	}
	horizon := horizonOf(r.s, r.cfg.Design)
	r.logf(LaneHarness, "the schedule's last event is over at %s; the horizon is %s", r.s.Last(), horizon)
	finalSince := time.Duration(-1) // since when every key is final, or -1
	for {
		if v := r.sleep(min(checkEvery, horizon-r.now())); v != nil {
			return v
		}
		rows, v := r.check(ctx)
		if v != nil {
			return v
		}
		switch {
		case !r.h.final(rows) || !r.quiet():
			finalSince = -1
		case finalSince < 0:
			finalSince = r.now()
			r.logf(LaneHarness, "every key is final; watching for %s more", watchAfterFinal)
		}
		if finalSince >= 0 && r.now()-finalSince >= watchAfterFinal || r.now() >= horizon {
			r.logf(LaneHarness, "read:%s", showRows(rows))
			return r.h.settled(r.now(), r.s.Last(), rows, r.rec.snapshot())
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
func (r *runner) apply(ctx context.Context, e Event) *violation.Violation {
	rep := r.procs[e.replica()-1]
	switch e.Kind {
	case Approve:
		return r.approve(ctx, rep, e)
	case ProcessCrash:
		r.logf(r.lane(rep.p), "crash: every goroutine stopped, every connection cut")
		r.h.faults = append(r.h.faults, struck{At: r.now(), Replica: e.replica()})
		rep.p.crash()
		if err := r.stop(rep); err != nil {
			return violated("run", r.now(), err.Error())
		}
		if err := r.boot(ctx, e.replica()); err != nil {
			return violated("run", r.now(), err.Error())
		}
	case ConnectionReset, CommitReplyLost:
		if r.cfg.Backend != "postgres" {
			// A SQLite database is a file in the process: only a crash
			// cuts it.
			r.logf(r.lane(rep.p), "%s: not on SQLite, whose connections only a crash cuts", e.Kind)
			return nil
		}
		r.h.faults = append(r.h.faults, struck{At: r.now(), Replica: e.replica()})
		if e.Kind == ConnectionReset {
			r.logf(r.lane(rep.p), "reset: %d database connections cut", rep.p.reset())
			return nil
		}
		r.logf(r.lane(rep.p), "commit-reply-lost: the next COMMIT loses its reply")
		rep.p.loseCommitReply()
	case Outage:
		r.logf(LaneReceiver, "outage: down until %s", e.At+e.For)
	}
	return nil
}

// approve approves e's case through the replica's process, and checks
// H3.
func (r *runner) approve(ctx context.Context, rep *replica, e Event) *violation.Violation {
	key, payload, err := rep.booted.Approve(ctx, e.Case, e.Title)
	a := approval{At: r.now(), Case: e.Case, Title: e.Title, Key: key, Payload: payload, Committed: err == nil}
	r.rec.approved(e.Case, key, payload)
	lane := LaneApp
	if r.s.replicas() > 1 {
		lane = fmt.Sprintf("%s (replica %d)", LaneApp, e.replica())
	}
	if err != nil {
		a.Err = err.Error()
		r.logf(lane, "approve %s: %v (outcome unknown)", e.Case, err)
	} else {
		r.logf(lane, "approve %s: committed %s", e.Case, key)
	}
	// A key is an action's: two cases under one key are one job, and the
	// second case's work is taken for a repeat of the first's.
	i := slices.IndexFunc(r.h.approvals, func(b approval) bool { return b.Committed && b.Key == key && b.Case != e.Case })
	r.h.approvals = append(r.h.approvals, a)
	switch {
	case !a.Committed:
		return nil
	case key == "":
		return violated("H3", r.now(), fmt.Sprintf("approve %s committed with no key", e.Case))
	case i >= 0:
		return violated("H3", r.now(), fmt.Sprintf("approve %s committed under %s, the key of %s's approval: two actions under one key, so the second is taken for a repeat of the first and its work is never done", e.Case, key, r.h.approvals[i].Case))
	}
	rows, v := r.read(ctx)
	if v != nil {
		return v
	}
	if _, ok := rows[key]; !ok {
		return violated("H3", r.now(), fmt.Sprintf("approve %s committed, and the outbox does not show %s", e.Case, key))
	}
	return nil
}

// check reads the outbox and checks it against what the receiver knew
// before the read (attempts cover every request it had seen) and after
// it (a row sent, or gone, has its task).
func (r *runner) check(ctx context.Context) (map[string]designs.RunningRow, *violation.Violation) {
	before := r.rec.snapshot()
	rows, v := r.read(ctx)
	if v != nil {
		return nil, v
	}
	return rows, r.h.check(r.now(), before, rows, r.rec.snapshot())
}

// read reads the outbox through the running process, trying again for
// a minute while its connections come back after a fault.
func (r *runner) read(ctx context.Context) (map[string]designs.RunningRow, *violation.Violation) {
	var last error
	for range 60 {
		rows, err := r.procs[0].booted.Read(ctx)
		if err == nil {
			return rows, nil
		}
		last = err
		if v := r.sleep(time.Second); v != nil {
			return nil, v
		}
	}
	return nil, violated("run", r.now(), fmt.Sprintf("reading the outbox failed for a minute: %v", last))
}

// boot starts a new process of the design as the given replica.
func (r *runner) boot(ctx context.Context, replicaN int) error {
	r.boots++
	ctx, cancel := context.WithCancel(ctx)
	p := newProcess(r.watch, r.boots, replicaN, r.rec)
	p.backend, p.database = r.cfg.Backend, r.cfg.Database
	r.lanes = append(r.lanes, r.lane(p))
	b, err := r.cfg.Design.Boot(ctx, p)
	if err != nil {
		cancel()
		p.crash()
		return fmt.Errorf("boot %d of %s: %w", r.boots, r.cfg.Design.Name, err)
	}
	r.procs[replicaN-1] = &replica{p: p, booted: b, cancel: cancel}
	r.watch.watching(r.processes())
	r.logf(r.lane(p), "booted")
	return nil
}

// processes are the processes running now.
func (r *runner) processes() []*process {
	var ps []*process
	for _, rep := range r.procs {
		if rep != nil {
			ps = append(ps, rep.p)
		}
	}
	return ps
}

// stop cancels the replica's context and waits for its Stop, for at
// most stopWait.
func (r *runner) stop(rep *replica) error {
	rep.p.stop()
	rep.cancel()
	done := make(chan error, 1)
	go func(b designs.Booted) { done <- b.Stop() }(rep.booted)
	rep.booted = nil
	select {
	case err := <-done:
		if err != nil && rep.p.alive() {
			return fmt.Errorf("%s ended with an error, its workers stopped (a process would exit): %w", r.lane(rep.p), err)
		}
		rep.p.crash() // whatever is left open of it
		return nil
	case <-time.After(stopWait):
		return fmt.Errorf("%s of %s did not stop within %s of virtual time: Stop must end every goroutine the boot started", r.lane(rep.p), r.cfg.Design.Name, stopWait)
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

// horizonOf is when a run of s on d must have settled: its last event's
// end, and d's settle time; for a design whose jobs are held by a lock,
// every pause besides, since no other worker takes a job a paused worker
// holds, and each pause delays one.
func horizonOf(s Schedule, d designs.Running) time.Duration {
	h := s.Last() + d.Settle
	if d.Holds == designs.HeldByLock {
		for _, a := range s.Answers {
			if a.Answer == Paused {
				h += a.Wait
			}
		}
	}
	return h
}
