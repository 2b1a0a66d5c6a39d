package system_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// patterned fails the requests of a fixed pattern: of every seven, the
// second is lost after the CRM acted, the fifth fails before it, and the
// seventh is refused for good.
type patterned struct {
	crm   *system.CRM
	calls int
	sends map[string]int
}

func (p *patterned) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	p.calls++
	p.sends[key]++
	switch p.calls % 7 {
	case 2:
		if _, err := p.crm.CreateTask(ctx, key, payload); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
	case 5:
		return 0, fmt.Errorf("%w: offline", system.ErrTransient)
	case 0:
		return 0, fmt.Errorf("%w: 422", system.ErrRejected)
	}
	return p.crm.CreateTask(ctx, key, payload)
}

// TestPipeline delivers 30 rows through a Pipeline against a receiver
// that loses, fails and refuses some requests, until it is idle: each row
// ends sent (naming its task) or blocked, every delivery it reported is
// what its row kept or a retry its row moved past, the attempts of a key
// come in order, every send is counted, and nothing is left in flight.
func TestPipeline(t *testing.T) { eachBackend(t, pipeline) }

func pipeline(t *testing.T, b backend) {
	const rows = 30
	ctx := t.Context()
	app, crm, _ := openPair(t, b, system.Options{Durability: system.ProcessSafe, NoBackoff: true})
	for i := range rows {
		mustApprove(t, app, fmt.Sprint("case-", i))
	}
	r := &patterned{crm: crm, sends: map[string]int{}}
	p, err := app.Pipeline(r)
	if err != nil {
		t.Fatal(err)
	}
	last := untilIdle(t, p, 10*rows)
	tasks, err := crm.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taskOf := map[string]int64{}
	for _, task := range tasks {
		taskOf[task.Key] = task.ID
	}
	snap := snapshot(t, app)
	states := map[system.State]int{}
	for _, row := range snap.Outbox {
		states[row.State]++
		d := last[row.Key]
		switch {
		case row.State == system.Pending:
			t.Errorf("%s is still pending", row.Key)
		case row.State == system.Sent && row.RemoteID != taskOf[row.Key]:
			t.Errorf("%s is sent as task %d, the CRM holds task %d for it", row.Key, row.RemoteID, taskOf[row.Key])
		case d.Result != system.Result(row.State) || d.Attempts != row.Attempts || d.RemoteID != row.RemoteID:
			t.Errorf("%s ended %s after %d attempts (task %d); its last delivery reported %+v", row.Key, row.State, row.Attempts, row.RemoteID, d)
		case r.sends[row.Key] != row.Attempts && row.LastError != system.LastErrorBudgetExhausted:
			t.Errorf("%s was sent %d times and counts %d attempts", row.Key, r.sends[row.Key], row.Attempts)
		}
	}
	if states[system.Sent] == 0 || states[system.Blocked] == 0 {
		t.Errorf("rows ended %v: want some sent and some blocked", states)
	}
}

// untilIdle runs p until it is idle with nothing pending, at most n
// deliveries, and returns the last delivery it reported of each key,
// checking that the attempts of a key come in order and that each
// delivery comes with what its own send heard.
func untilIdle(t *testing.T, p *system.Pipeline, n int) map[string]system.Delivery {
	t.Helper()
	last := map[string]system.Delivery{}
	for range n {
		d, err := p.Next(t.Context())
		var ae *system.AttemptError
		switch {
		case errors.As(err, &ae):
			t.Fatalf("delivery of %s: %v", ae.Key, err)
		case err != nil:
			t.Fatal(err)
		case d.Result == system.Idle && d.NextEligible.IsZero():
			if _, flushed, _ := p.Flush(t.Context()); flushed {
				t.Errorf("idle with an answer not yet recorded")
			}
			return last
		case d.Result == system.Idle:
			t.Fatalf("idle until %v with NoBackoff", d.NextEligible)
		}
		switch heard := p.Heard(); {
		case d.Result == system.ResultSent && heard != nil:
			t.Errorf("%s sent, but its send heard %v", d.Key, heard)
		case d.LastError == system.LastErrorTransient && d.Attempts > 0 && !errors.Is(heard, system.ErrTransient):
			t.Errorf("%s: %s after attempt %d, but its send heard %v", d.Key, d.LastError, d.Attempts, heard)
		case d.LastError == system.LastErrorRejected && !errors.Is(heard, system.ErrRejected):
			t.Errorf("%s: %s, but its send heard %v", d.Key, d.LastError, heard)
		}
		if prev, ok := last[d.Key]; ok && d.Attempts <= prev.Attempts {
			t.Errorf("%s: attempt %d reported after attempt %d", d.Key, d.Attempts, prev.Attempts)
		}
		last[d.Key] = d
	}
	t.Fatalf("not idle after %d deliveries", n)
	return nil
}

// TestPipelineInterrupted cancels a Pipeline's context in the middle of a
// claim, just before its COMMIT (on SQLite, which passes no such point,
// between deliveries): the claim under way, the row claimed ahead, their
// sends and every answer run to their end, no further row is claimed,
// Next then says the context was cancelled, and no row is left leased.
func TestPipelineInterrupted(t *testing.T) { eachBackend(t, pipelineInterrupted) }

func pipelineInterrupted(t *testing.T, b backend) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	commits := -5 // the approvals'
	app, crm, _ := openPair(t, b, system.Options{Durability: system.ProcessSafe, Harness: system.Harness{Hook: func(p system.FaultPoint) error {
		if p == system.PointBeforeCommit {
			if commits++; commits == 2 { // the second row's claim
				cancel()
			}
		}
		return nil
	}}})
	// More rows than a Pipeline holds at once: one that went on claiming
	// after the interrupt would find some.
	mustApprove(t, app, "case-1", "case-2", "case-3", "case-4", "case-5")
	p, err := app.Pipeline(crm)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Next(ctx)
	if err != nil || d.Result != system.ResultSent || d.Key != mustKey(t, "case-1") {
		t.Fatalf("first delivery: %+v, %v; want case-1 sent", d, err)
	}
	if b.name == "sqlite" {
		cancel()
	}
	// The rows already claimed (the one sent, and one claimed ahead) are
	// sent and their answers recorded; then Next says it was interrupted.
	var after []string
	for {
		d, err = p.Next(ctx)
		if errors.Is(err, context.Canceled) {
			break
		}
		if err != nil || d.Result != system.ResultSent {
			t.Fatalf("after the interrupt: %+v, %v; want the rows claimed before it sent", d, err)
		}
		if after = append(after, d.Key); len(after) > 2 {
			t.Fatalf("after the interrupt Next went on claiming: %v", after)
		}
	}
	// On PostgreSQL the interrupt comes during case-2's claim, before any
	// claim ahead; on SQLite after the first delivery, with case-3
	// claimed ahead already.
	want := []string{mustKey(t, "case-2")}
	if b.name == "sqlite" {
		want = append(want, mustKey(t, "case-3"))
	}
	if !slices.Equal(after, want) {
		t.Fatalf("after the interrupt: %v; want %v", after, want)
	}
	if _, flushed, err := p.Flush(ctx); flushed || err != nil {
		t.Errorf("flush after the interrupt: %v, %v; want nothing left", flushed, err)
	}
	for _, r := range snapshot(t, app).Outbox {
		if r.LeaseOwner != "" {
			t.Errorf("%s is %s with a lease of %s after the interrupt", r.Key, r.State, r.LeaseOwner)
		}
	}
}

// TestPipelineFlushReportsEveryDelivery stops a Pipeline right after a
// Next whose second claim blocked its row (the receiver may have
// forgotten its key) while the first row's answer was not yet recorded:
// Next returns the first row's delivery, and Flush must return the
// blocked one, so that a worker that stops there reports both.
func TestPipelineFlushReportsEveryDelivery(t *testing.T) { eachBackend(t, pipelineFlush) }

func pipelineFlush(t *testing.T, b backend) {
	ctx := t.Context()
	clk := newClock()
	w, crm := workers(t, b, clk, system.Options{NoBackoff: true, Retention: time.Minute}, "A", "B")
	mustApprove(t, w["A"], "case-1", "case-2")
	for range 2 { // B claims both rows, and dies
		if _, d, err := w["B"].ClaimNext(ctx, time.Minute); err != nil || d.Result != system.ResultPending {
			t.Fatalf("B's claim: %+v, %v", d, err)
		}
	}
	clk.tick(40 * time.Second) // past the leases
	if err := w["A"].ReconcileAbsent(ctx, mustKey(t, "case-1"), "person", "not in the CRM"); err != nil {
		t.Fatal(err)
	}
	clk.tick(15 * time.Second) // case-2 past retention less the send timeout
	// Not the CRM itself, which states its own retention (forever): the
	// worker's Options.Retention holds.
	p, err := w["A"].Pipeline(receiverFunc(crm.CreateTask))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Next(ctx)
	if err != nil || d.Key != mustKey(t, "case-1") || d.Result != system.ResultSent {
		t.Fatalf("Next: %+v, %v; want case-1 sent", d, err)
	}
	d, flushed, err := p.Flush(ctx)
	if err != nil || !flushed || d.Key != mustKey(t, "case-2") || d.Result != system.ResultBlocked || d.LastError != system.LastErrorRetentionExpired {
		t.Fatalf("Flush: %+v, %v, %v; want case-2 blocked, retention-expired", d, flushed, err)
	}
	if _, flushed, _ := p.Flush(ctx); flushed {
		t.Errorf("a second Flush found another delivery")
	}
}

// sharedClock is a virtual clock that a receiver moves while a Pipeline's
// claim ahead reads it.
type sharedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *sharedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *sharedClock) tick(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// onSharedClock opens worker A's Outbox on b, without backoff, and a CRM
// in a new folder, both on clk, and closes them when t ends.
func onSharedClock(t *testing.T, b backend, clk *sharedClock) (*system.Outbox, *system.CRM) {
	t.Helper()
	ctx := t.Context()
	app, err := system.Open(ctx, b.app(t), system.Options{Durability: system.ProcessSafe, NoBackoff: true, Worker: "A", Harness: system.Harness{Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	crm, err := system.OpenCRMWith(ctx, filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Durability: system.ProcessSafe, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	return app, crm
}

// TestPipelineClaimsAhead checks when a Pipeline claims the next row
// while it sends one: not before the receiver has answered fast (within
// half the send timeout); then during the next send; not after an answer
// so slow that the row claimed ahead meanwhile missed its window (it is
// not sent, and counts an attempt: the one a receiver turning slow costs),
// nor after that row's send that never happened; again after a fast
// answer. Flush sends a row claimed ahead and records its answer, and no
// lease is left behind.
func TestPipelineClaimsAhead(t *testing.T) { eachBackend(t, pipelineClaimsAhead) }

func pipelineClaimsAhead(t *testing.T, b backend) {
	ctx := t.Context()
	clk := &sharedClock{now: approvedAt}
	app, crm := onSharedClock(t, b, clk)
	mustApprove(t, app, "case-1", "case-2", "case-3", "case-4", "case-5")
	leased := func(caseID string) bool {
		row, err := app.Row(ctx, mustKey(t, caseID))
		if err != nil {
			t.Error(err)
		}
		return row.LeaseOwner == "A"
	}
	notClaimedAhead := func(caseID, why string) []string {
		time.Sleep(50 * time.Millisecond) // time enough for a claim that should not be made
		if leased(caseID) {
			return []string{caseID + " was claimed ahead " + why}
		}
		return nil
	}
	var problems, order []string
	r := receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
		order = append(order, key)
		switch len(order) {
		case 1: // case-1
			problems = append(problems, notClaimedAhead("case-2", "before the receiver answered once")...)
		case 2: // case-2: case-3 is claimed while it is sent; then the answer takes the whole send timeout
			deadline := time.Now().Add(10 * time.Second)
			for !leased("case-3") && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if !leased("case-3") {
				problems = append(problems, "case-3 was not claimed while case-2 was sent, after a fast answer")
			}
			clk.tick(system.DefaultSendTimeout + time.Millisecond)
		case 3: // case-4: case-3 missed its window, unsent
			problems = append(problems, notClaimedAhead("case-5", "after a slow answer and a window missed")...)
		}
		return crm.CreateTask(ctx, key, payload)
	})
	p, err := app.Pipeline(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		caseID string
		result system.Result
	}{{"case-1", system.ResultSent}, {"case-2", system.ResultSent}, {"case-3", system.ResultPending}, {"case-4", system.ResultSent}} {
		if d, err := p.Next(ctx); err != nil || d.Result != want.result || d.Key != mustKey(t, want.caseID) {
			t.Fatalf("Next: %+v, %v; want %s %s", d, err, want.caseID, want.result)
		}
	}
	// case-3's retry is unrecorded; case-5 was claimed ahead while it was
	// sent, after case-4's fast answer.
	for _, want := range []string{"case-3", "case-5"} {
		if d, flushed, err := p.Flush(ctx); err != nil || !flushed || d.Result != system.ResultSent || d.Key != mustKey(t, want) {
			t.Fatalf("Flush: %+v, %v, %v; want %s sent", d, flushed, err, want)
		}
	}
	if _, flushed, _ := p.Flush(ctx); flushed {
		t.Error("a third Flush found another delivery")
	}
	for _, problem := range problems {
		t.Error(problem)
	}
	var want []string
	for _, c := range []string{"case-1", "case-2", "case-4", "case-3", "case-5"} {
		want = append(want, mustKey(t, c))
	}
	if !slices.Equal(order, want) {
		t.Errorf("the receiver heard %v, want %v", order, want)
	}
	for _, row := range snapshot(t, app).Outbox {
		attempts := 1
		if row.Key == mustKey(t, "case-3") {
			attempts = 2 // the first missed its window
		}
		if row.State != system.Sent || row.Attempts != attempts || row.LeaseOwner != "" {
			t.Errorf("%s is %s after %d attempts, leased by %q: want sent after %d, no lease", row.Key, row.State, row.Attempts, row.LeaseOwner, attempts)
		}
	}
}

// TestPipelineRecordsAndClaimsAheadInOneCommit: once the receiver answers
// fast, each call of Next records the last answer and claims the row
// after in one write transaction: one commit a delivery on the app
// database, not two. When that transaction cannot be written (another
// connection holds the write lock), the answer's delivery fails as a
// settle does, named as the recording, and nothing is claimed.
func TestPipelineRecordsAndClaimsAheadInOneCommit(t *testing.T) { eachBackend(t, pipelineOneCommit) }

func pipelineOneCommit(t *testing.T, b backend) {
	ctx := t.Context()
	target := b.app(t)
	open := func(worker string) *system.Outbox {
		o, err := system.Open(ctx, target, system.Options{Durability: system.ProcessSafe, Worker: worker, BusyTimeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	app, locker := open("A"), open("locker")
	crm, err := system.OpenCRMWith(ctx, filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	mustApprove(t, app, "case-1", "case-2", "case-3", "case-4", "case-5", "case-6")
	p, err := app.Pipeline(crm)
	if err != nil {
		t.Fatal(err)
	}
	// The first call claims case-1, sends it, then claims case-2 and, while
	// it sends case-2, records case-1 and claims case-3 ahead.
	if d, err := p.Next(ctx); err != nil || d.Result != system.ResultSent || d.Key != mustKey(t, "case-1") {
		t.Fatalf("Next: %+v, %v; want case-1 sent", d, err)
	}
	for i, c := range []string{"case-2", "case-3"} {
		before := app.CommitStats()
		if d, err := p.Next(ctx); err != nil || d.Result != system.ResultSent || d.Key != mustKey(t, c) {
			t.Fatalf("Next: %+v, %v; want %s sent", d, err, c)
		}
		after := app.CommitStats()
		if commits, writes := after.Commits-before.Commits, after.Writes-before.Writes; commits != 1 || writes != 1 {
			t.Errorf("the call that returned %s committed %d writes in %d commits, want one write in one commit", c, writes, commits)
		}
		ahead, err := app.Row(ctx, mustKey(t, fmt.Sprint("case-", i+4)))
		if err != nil {
			t.Fatal(err)
		}
		if ahead.LeaseOwner != app.Worker() || ahead.Attempts != 1 {
			t.Errorf("after the call that returned %s, %s is leased by %q after %d attempts, want claimed ahead", c, ahead.Key, ahead.LeaseOwner, ahead.Attempts)
		}
	}
	// case-4 is answered and case-5 claimed ahead: the next call sends
	// case-5 while it records case-4 and claims case-6, under the lock.
	release := lockOutbox(t, b, locker)
	var attempt *system.AttemptError
	d, err := p.Next(ctx)
	release()
	if !errors.As(err, &attempt) || !errors.Is(err, system.ErrBusy) || attempt.Key != mustKey(t, "case-4") ||
		!strings.Contains(err.Error(), "recording the delivery") || strings.Contains(err.Error(), "claiming") {
		t.Errorf("Next under the lock: %+v, %v; want case-4's attempt spent, busy recording the delivery", d, err)
	}
	if row, err := app.Row(ctx, mustKey(t, "case-6")); err != nil || row.Attempts != 0 || row.LeaseOwner != "" {
		t.Errorf("case-6 after the call under the lock: %+v, %v; want unclaimed", row, err)
	}
}

// TestPipelineStopsClaimingAheadAfterAHalfTimeout: an answer that takes
// more than half the send timeout stops the claims ahead even when it came
// within its row's window, and even after fast answers that had them
// made: the next send is made with nothing claimed behind it. An answer
// within half the send timeout, to the millisecond, has the next row
// claimed while the one after it is sent. Every row is sent once either
// way.
func TestPipelineStopsClaimingAheadAfterAHalfTimeout(t *testing.T) {
	eachBackend(t, pipelineHalfTimeout)
}

func pipelineHalfTimeout(t *testing.T, b backend) {
	for _, tt := range []struct {
		name  string
		slow  time.Duration // how long case-2's answer takes; case-1's comes at once
		ahead bool          // case-4 is claimed while case-3 is sent
	}{
		{"0.6 of the send timeout", system.DefaultSendTimeout * 6 / 10, false},
		{"a millisecond over half", system.DefaultSendTimeout/2 + time.Millisecond, false},
		{"half, to the millisecond", system.DefaultSendTimeout / 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			clk := &sharedClock{now: approvedAt}
			app, crm := onSharedClock(t, b, clk)
			mustApprove(t, app, "case-1", "case-2", "case-3", "case-4")
			var problems []string
			sends := 0
			r := receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
				sends++
				switch sends {
				case 2:
					clk.tick(tt.slow)
				case 3:
					if problem := claimedAhead(ctx, app, mustKey(t, "case-4"), tt.ahead); problem != "" {
						problems = append(problems, problem)
					}
				}
				return crm.CreateTask(ctx, key, payload)
			})
			p, err := app.Pipeline(r)
			if err != nil {
				t.Fatal(err)
			}
			for d := (system.Delivery{}); d.Result != system.Idle; {
				if d, err = p.Next(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for _, problem := range problems {
				t.Error(problem)
			}
			for _, row := range snapshot(t, app).Outbox {
				if row.State != system.Sent || row.Attempts != 1 {
					t.Errorf("%s is %s after %d attempts, want sent after 1", row.Key, row.State, row.Attempts)
				}
			}
		})
	}
}

// claimedAhead says what is wrong with key's lease while another row is
// sent: a claim ahead, when want, takes it within five seconds; when not
// wanted, none has taken it after 100 ms, time enough for one.
func claimedAhead(ctx context.Context, app *system.Outbox, key string, want bool) string {
	wait := 100 * time.Millisecond
	if want {
		wait = 5 * time.Second
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
		row, err := app.Row(ctx, key)
		switch {
		case err != nil:
			return fmt.Sprintf("reading %s: %v", key, err)
		case want && row.LeaseOwner != "":
			return ""
		case !want && row.LeaseOwner != "":
			return fmt.Sprintf("%s was claimed ahead after an answer slower than half the send timeout: %+v", key, row)
		case time.Now().After(deadline) && want:
			return fmt.Sprintf("%s was not claimed ahead after an answer within half the send timeout: %+v", key, row)
		case time.Now().After(deadline):
			return ""
		}
	}
}

// TestPipelineFlushDropsAnIdleClaimedAhead: the claim ahead made while
// the last row was sent finds nothing eligible (that row is in flight);
// Flush records the last answer and then has nothing left, instead of
// reporting that Idle, whose NextEligible the in-flight row made wrong.
func TestPipelineFlushDropsAnIdleClaimedAhead(t *testing.T) { eachBackend(t, pipelineFlushIdle) }

func pipelineFlushIdle(t *testing.T, b backend) {
	ctx := t.Context()
	app, crm, _ := openPair(t, b, system.Options{Durability: system.ProcessSafe, NoBackoff: true})
	mustApprove(t, app, "case-1", "case-2")
	p, err := app.Pipeline(crm)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Next(ctx); err != nil || d.Result != system.ResultSent || d.Key != mustKey(t, "case-1") {
		t.Fatalf("Next: %+v, %v; want case-1 sent", d, err)
	}
	if d, flushed, err := p.Flush(ctx); err != nil || !flushed || d.Result != system.ResultSent || d.Key != mustKey(t, "case-2") {
		t.Fatalf("Flush: %+v, %v, %v; want case-2 sent", d, flushed, err)
	}
	if d, flushed, err := p.Flush(ctx); flushed || err != nil {
		t.Errorf("a second Flush: %+v, %v, %v; want nothing left", d, flushed, err)
	}
}

// TestPipelineIdleReads checks how a worker with nothing due polls: with
// one read of when the next row is due, outside any transaction, not a
// claim. While another connection holds the write lock, a Pipeline whose
// last claim found nothing returns Idle, with the time its row in backoff
// is due, and commits nothing, where a new Pipeline's first claim, a
// transaction, fails for the lock. Once the lock is gone and the row due,
// the idle Pipeline claims and sends it.
func TestPipelineIdleReads(t *testing.T) { eachBackend(t, pipelineIdleReads) }

func pipelineIdleReads(t *testing.T, b backend) {
	ctx := t.Context()
	clk := &sharedClock{now: approvedAt}
	target := b.app(t)
	open := func(worker string) *system.Outbox {
		o, err := system.Open(ctx, target, system.Options{Durability: system.ProcessSafe, Worker: worker, BusyTimeout: 20 * time.Millisecond, Harness: system.Harness{Now: clk.Now}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	app, fresh, locker := open("A"), open("B"), open("locker")
	crm, err := system.OpenCRMWith(ctx, filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Durability: system.ProcessSafe, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	mustApprove(t, app, "case-1")
	offline := true
	p, err := app.Pipeline(receiverFunc(func(ctx context.Context, key, payload string) (int64, error) {
		if offline {
			return 0, fmt.Errorf("%w: offline", system.ErrTransient)
		}
		return crm.CreateTask(ctx, key, payload)
	}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Next(ctx)
	if err != nil || d.Result != system.ResultPending || d.Backoff <= 0 {
		t.Fatalf("Next: %+v, %v; want case-1 pending, in backoff", d, err)
	}
	due := clk.Now().Add(d.Backoff).Truncate(time.Millisecond)
	if d, err := p.Next(ctx); err != nil || d.Result != system.Idle || !d.NextEligible.Equal(due) {
		t.Fatalf("Next: %+v, %v; want idle until %v", d, err, due)
	}

	release := lockOutbox(t, b, locker)
	before := app.CommitStats()
	for range 3 {
		if d, err := p.Next(ctx); err != nil || d.Result != system.Idle || !d.NextEligible.Equal(due) {
			t.Errorf("an idle Next, the write lock held elsewhere: %+v, %v; want idle until %v", d, err, due)
		}
	}
	if after := app.CommitStats(); after != before {
		t.Errorf("idle Nexts committed: %+v before, %+v after; want no transaction", before, after)
	}
	q, err := fresh.Pipeline(crm)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := q.Next(ctx); err == nil {
		t.Errorf("a first claim, the write lock held elsewhere: %+v; want it to fail for the lock", d)
	}
	release()

	offline = false
	clk.tick(d.Backoff)
	if d, err := p.Next(ctx); err != nil || d.Result != system.ResultSent || d.Key != mustKey(t, "case-1") {
		t.Errorf("Next once case-1 is due: %+v, %v; want it sent", d, err)
	}
}

// lockOutbox takes, through o's handle, the lock that a claim needs
// and a read does not (BEGIN IMMEDIATE on SQLite, an EXCLUSIVE lock of
// the outbox on PostgreSQL); release gives it back.
func lockOutbox(t *testing.T, b backend, o *system.Outbox) (release func()) {
	t.Helper()
	ctx := t.Context()
	conn, err := o.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock := []string{"BEGIN IMMEDIATE"}
	if b.name == postgresBackend.name {
		lock = []string{"BEGIN", "LOCK TABLE outbox IN EXCLUSIVE MODE"}
	}
	for _, q := range lock {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Error(err)
		}
		conn.Close()
	}
}

// TestPipelineIdleSeesARowDueAtTheEpoch: after a claim that found
// nothing, the read of when the next row is due tells no row pending
// from a row due at millisecond 0, and the Pipeline claims the latter
// (its attempt is counted; the times of a claim at the epoch itself are
// read as none, so its send hears a transient failure).
func TestPipelineIdleSeesARowDueAtTheEpoch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := &sharedClock{now: time.UnixMilli(0).UTC()}
	app, crm := onSharedClock(t, sqliteBackend, clk)
	p, err := app.Pipeline(crm)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Next(ctx); err != nil || d.Result != system.Idle || !d.NextEligible.IsZero() {
		t.Fatalf("Next on an empty outbox: %+v, %v; want idle, nothing pending", d, err)
	}
	mustApprove(t, app, "case-1")
	if d, err := p.Next(ctx); err != nil || d.Key != mustKey(t, "case-1") || d.Attempts != 1 {
		t.Errorf("Next with case-1 due at the epoch: %+v, %v; want it claimed, one attempt counted", d, err)
	}
}
