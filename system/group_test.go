package system_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/system"
)

// inOneBatch runs calls as one batch of the group that hold holds: it
// holds the group, starts each call once the one before it is queued
// (queued counts the waiting writes), so that they queue in the order
// given, then lets the held write finish and waits for every call. The
// next batch runs them all, in that order, in one transaction.
func inOneBatch(t *testing.T, hold func(release <-chan struct{}) <-chan error, queued func() int, calls ...func()) {
	t.Helper()
	release := make(chan struct{})
	held := hold(release)
	done := make(chan struct{}, len(calls))
	deadline := time.Now().Add(10 * time.Second)
	for i, call := range calls {
		go func() {
			call()
			done <- struct{}{}
		}()
		for queued() != i+1 {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("call %d did not queue behind the held batch (%d queued)", i+1, queued())
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	for range calls {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a call of the batch did not return")
		}
	}
}

// holdOutbox and holdCRM adapt system.Hold and system.HoldCRM to inOneBatch.
func holdOutbox(o *system.Outbox) func(<-chan struct{}) <-chan error {
	return func(release <-chan struct{}) <-chan error { return system.Hold(o, release) }
}

func holdCRM(c *system.CRM) func(<-chan struct{}) <-chan error {
	return func(release <-chan struct{}) <-chan error { return system.HoldCRM(c, release) }
}

// claimResult is what one ClaimNext returned.
type claimResult struct {
	c   system.Claim
	d   system.Delivery
	err error
}

func claimInto(ctx context.Context, app *system.Outbox, into *claimResult) func() {
	return func() { into.c, into.d, into.err = app.ClaimNext(ctx, 0) }
}

// TestBatchClaimsSeeEachOther: four workers' claims, each through its own
// handle, run as one batch in one commit, each seeing the claims before
// it: three rows go to the first three, one each, and the fourth is idle.
func TestBatchClaimsSeeEachOther(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	names := []string{"A", "B", "C", "D"}
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, names...)
	mustApprove(t, w["A"], "case-1", "case-2", "case-3")
	before := w["A"].CommitStats()
	got := make([]claimResult, len(names))
	var calls []func()
	for i, n := range names {
		calls = append(calls, claimInto(ctx, w[n], &got[i]))
	}
	inOneBatch(t, holdOutbox(w["A"]), func() int { return system.Queued(w["A"]) }, calls...)
	for i, n := range names[:3] {
		want := system.KeyPrefix + fmt.Sprint("case-", i+1)
		if g := got[i]; g.err != nil || g.d.Result != system.ResultPending || g.c.Key != want || g.c.Attempt != 1 || g.c.Fence != 1 {
			t.Errorf("worker %s: got %+v %+v, %v; want the claim of %s, attempt 1, fence 1", n, g.c, g.d, g.err, want)
		}
		if r := row(t, w["A"], want); r.LeaseOwner != n || r.Attempts != 1 || r.Fence != 1 {
			t.Errorf("%s after the batch: got %+v, want leased by %s with attempt 1 and fence 1", want, r, n)
		}
	}
	if g := got[3]; g.err != nil || g.d.Result != system.Idle {
		t.Errorf("worker D: got %+v, %v; want idle, every row leased", g.d, g.err)
	}
	after := w["A"].CommitStats()
	if want := (system.CommitStats{Commits: before.Commits + 2, Writes: before.Writes + 5}); after != want {
		t.Errorf("commit stats: got %+v, want %+v (the held write alone, then the four claims in one commit)", after, want)
	}
}

// TestBatchSettleAndClaimOfOneRow: A's lease on a row has run out; A's
// settle, B's claim of that row and a person's reconcile run in one
// batch. Whichever runs first wins, as if they ran one after the other: a
// settle first is written and leaves nothing to claim; a claim first
// raises the fence, and the settle after it is stale and writes nothing;
// a reconcile first makes the row sent, and the settle after it is stale.
func TestBatchSettleAndClaimOfOneRow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		order        string
		wantSettle   system.Result
		wantClaim    system.Result
		wantState    system.State
		wantFence    int64
		wantAttempts int
		wantLease    string
		wantRemote   int64
	}{
		{"settle claim", system.ResultSent, system.Idle, system.Sent, 1, 1, "", 7},
		{"claim settle", system.ResultStale, system.ResultPending, system.Pending, 2, 2, "B", 0},
		{"reconcile settle claim", system.ResultStale, system.Idle, system.Sent, 2, 1, "", 9},
		{"settle reconcile", system.ResultSent, "", system.Sent, 1, 1, "", 7},
	} {
		t.Run(tt.order, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A", "B")
			mustApprove(t, w["A"], caseID)
			ca, _, err := w["A"].ClaimNext(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			clk.tick(system.DefaultLease)
			var settled system.Delivery
			var settleErr, reconcileErr error
			var claimed claimResult
			steps := map[string]func(){
				"settle":    func() { settled, settleErr = w["A"].Settle(ctx, ca, 7, nil) },
				"claim":     claimInto(ctx, w["B"], &claimed),
				"reconcile": func() { reconcileErr = w["B"].Reconcile(ctx, key, 9, "ana", "found task 9") },
			}
			var calls []func()
			for _, step := range strings.Fields(tt.order) {
				calls = append(calls, steps[step])
			}
			inOneBatch(t, holdOutbox(w["B"]), func() int { return system.Queued(w["B"]) }, calls...)
			if settleErr != nil || settled.Result != tt.wantSettle {
				t.Errorf("A's settle: got %+v, %v; want %s", settled, settleErr, tt.wantSettle)
			}
			if claimed.err != nil || claimed.d.Result != tt.wantClaim {
				t.Errorf("B's claim: got %+v, %v; want %s", claimed.d, claimed.err, tt.wantClaim)
			}
			switch {
			case strings.HasPrefix(tt.order, "reconcile") && reconcileErr != nil:
				t.Errorf("the reconcile before the settle: got %v, want it done", reconcileErr)
			case strings.HasSuffix(tt.order, "reconcile") && !errors.Is(reconcileErr, system.ErrWrongState):
				t.Errorf("the reconcile after the settle: got %v, want ErrWrongState (the row is sent)", reconcileErr)
			}
			r := row(t, w["A"], key)
			if r.State != tt.wantState || r.Fence != tt.wantFence || r.Attempts != tt.wantAttempts || r.LeaseOwner != tt.wantLease || r.RemoteID != tt.wantRemote {
				t.Errorf("the row: got %+v; want %s, fence %d, attempts %d, lease %q, remote id %d",
					r, tt.wantState, tt.wantFence, tt.wantAttempts, tt.wantLease, tt.wantRemote)
			}
		})
	}
}

// TestGroupPerDurability: handles of another durability on the same file
// commit apart: a durable write never rides on a commit that does not
// sync.
func TestGroupPerDurability(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A")
	mustApprove(t, w["A"], caseID)
	durable, err := system.Open(ctx, w["A"].Path(), system.Options{Worker: "D", Harness: system.Harness{Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	defer durable.Close()
	safe, sure := w["A"].CommitStats(), durable.CommitStats()
	if _, d, err := durable.ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
		t.Fatalf("got %+v, %v", d, err)
	}
	if got := w["A"].CommitStats(); got != safe {
		t.Errorf("a durable claim counted among the process-safe commits: %+v, before %+v", got, safe)
	}
	if got, want := durable.CommitStats(), (system.CommitStats{Commits: sure.Commits + 1, Writes: sure.Writes + 1}); got != want {
		t.Errorf("durable commit stats: got %+v, want %+v", got, want)
	}
}

// betweenInserts opens another handle, worker X, on like's file, whose
// approvals call at between their two inserts: what it returns (or
// raises) is what the approval meets there.
func betweenInserts(t *testing.T, like *system.Outbox, clk *clock, at func() error) *system.Outbox {
	t.Helper()
	o, err := system.Open(t.Context(), like.Path(), system.Options{Durability: system.ProcessSafe, Worker: "X",
		Harness: system.Harness{Now: clk.Now, Hook: func(p system.FaultPoint) error {
			if p == system.PointBetweenApprovalInserts {
				return at()
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// TestBatchWriteFailsAlone: a write of a batch that fails (an approval
// whose process crashes between its two inserts) is rolled back to its
// savepoint, leaving neither insert, and returns its error; the writes
// before and after it in the batch are committed.
func TestBatchWriteFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A", "B")
	mustApprove(t, w["A"], "case-1", "case-2")
	crashing := betweenInserts(t, w["A"], clk, func() error { return errCrash })
	var a, b claimResult
	var approveErr error
	inOneBatch(t, holdOutbox(w["A"]), func() int { return system.Queued(w["A"]) },
		claimInto(ctx, w["A"], &a),
		func() { _, approveErr = crashing.RecordApproval(ctx, "case-new", title) },
		claimInto(ctx, w["B"], &b))
	if !errors.Is(approveErr, errCrash) {
		t.Errorf("the crashing approval: got %v, want the crash", approveErr)
	}
	for _, c := range []struct {
		name string
		got  claimResult
		want string
	}{{"A", a, "case-1"}, {"B", b, "case-2"}} {
		if c.got.err != nil || c.got.c.Key != system.KeyPrefix+c.want {
			t.Errorf("%s's claim beside the crash: got %+v, %v; want %s", c.name, c.got.c, c.got.err, c.want)
		}
	}
	snap := snapshot(t, w["A"])
	if len(snap.Approvals) != 2 || len(snap.Outbox) != 2 {
		t.Errorf("after the crashed approval: got %d approvals and %d rows, want the 2 from before", len(snap.Approvals), len(snap.Outbox))
	}
	for _, r := range snap.Outbox {
		if r.LeaseOwner == "" {
			t.Errorf("%s: the claim beside the crash was not committed: %+v", r.Key, r)
		}
	}
	// A batch whose every write failed commits nothing worth a sync: it
	// counts no commit, and no write.
	before := w["A"].CommitStats()
	if _, err := crashing.RecordApproval(ctx, "case-newer", title); !errors.Is(err, errCrash) {
		t.Errorf("a crashing approval alone: got %v, want the crash", err)
	}
	if after := w["A"].CommitStats(); after != before {
		t.Errorf("a batch of one failed write: commit stats %+v before, %+v after; want no change", before, after)
	}
}

// TestBatchFailureWritesNothing: a write whose error rolls the whole
// transaction back (as a full disk does; here a trigger's RAISE(ROLLBACK))
// fails its batch: every caller gets that error, named by its own write,
// and nothing of any write in the batch, before or after it, is written.
// The handle keeps working.
func TestBatchFailureWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	names := []string{"A", "B", "C"}
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, names...)
	mustApprove(t, w["A"], "case-1", "case-poison", "case-3")
	if _, err := w["A"].DB().ExecContext(ctx, `CREATE TRIGGER poison BEFORE UPDATE OF attempts ON outbox
		WHEN NEW.key = '`+system.KeyPrefix+`case-poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END`); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, w["A"])
	got := make([]claimResult, len(names))
	var calls []func()
	for i, n := range names {
		calls = append(calls, claimInto(ctx, w[n], &got[i]))
	}
	var approveErr error
	calls = append(calls, func() { _, approveErr = w["C"].RecordApproval(ctx, "case-new", title) })
	inOneBatch(t, holdOutbox(w["A"]), func() int { return system.Queued(w["A"]) }, calls...)
	for i, n := range names {
		if g := got[i]; g.err == nil || !strings.Contains(g.err.Error(), "poisoned") || !strings.HasPrefix(g.err.Error(), "system: claiming a row: ") {
			t.Errorf("worker %s: got %+v, %v; want the batch's failure, named as the claim's", n, g.d, g.err)
		}
	}
	if approveErr == nil || !strings.Contains(approveErr.Error(), "poisoned") || !strings.HasPrefix(approveErr.Error(), "system: recording the approval: ") {
		t.Errorf("the approval in the batch: %v; want the batch's failure, named as the approval's", approveErr)
	}
	if diff := cmp.Diff(before, snapshot(t, w["A"])); diff != "" {
		t.Errorf("a failed batch wrote (-before +after):\n%s", diff)
	}
	if _, err := w["A"].DB().ExecContext(ctx, `DROP TRIGGER poison`); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, d, err := w[n].ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
			t.Errorf("worker %s after the failed batch: got %+v, %v; want a claim", n, d, err)
		}
	}
}

// TestBatchCreatesSeeEachOther: concurrent creates at the CRM, through
// two handles on its file, commit together; a key created twice in one
// batch is a replay the second time and a conflict with other content,
// never a second task.
func TestBatchCreatesSeeEachOther(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "crm.db")
	var crms [2]*system.CRM
	for i := range crms {
		c, err := system.OpenCRM(ctx, path, system.ProcessSafe)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		crms[i] = c
	}
	creates := []struct {
		crm     int
		key     string
		payload string
		want    int64
		wantErr error
	}{
		{0, "k1", "p", 1, nil},
		{1, "k2", "p", 2, nil},
		{1, "k1", "p", 1, nil},
		{0, "k1", "q", 0, system.ErrKeyConflict},
		{0, "k2", "p", 2, nil},
	}
	before := crms[0].CommitStats()
	ids, errs := make([]int64, len(creates)), make([]error, len(creates))
	var calls []func()
	for i, c := range creates {
		calls = append(calls, func() { ids[i], errs[i] = crms[c.crm].CreateTask(ctx, c.key, c.payload) })
	}
	inOneBatch(t, holdCRM(crms[0]), func() int { return system.QueuedCRM(crms[0]) }, calls...)
	for i, c := range creates {
		if ids[i] != c.want || !errors.Is(errs[i], c.wantErr) || (errs[i] == nil) != (c.wantErr == nil) {
			t.Errorf("create %d (%s, %s): got %d, %v; want %d, %v", i+1, c.key, c.payload, ids[i], errs[i], c.want, c.wantErr)
		}
	}
	tasks, err := crms[1].Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []system.Task{{ID: 1, Key: "k1", Payload: "p"}, {ID: 2, Key: "k2", Payload: "p"}}; !cmp.Equal(tasks, want) {
		t.Errorf("tasks: got %+v, want %+v", tasks, want)
	}
	if got, want := crms[1].CommitStats(), (system.CommitStats{Commits: before.Commits + 2, Writes: before.Writes + 5}); got != want {
		t.Errorf("commit stats: got %+v, want %+v (the held write alone, then the five creates in one commit, the conflict writing nothing)", got, want)
	}
}

// TestLoneWrite: a write that finds no batch running commits at once,
// alone; one whose context is cancelled writes nothing.
func TestLoneWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A")
	mustApprove(t, w["A"], caseID)
	before := w["A"].CommitStats()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := w["A"].ClaimNext(cancelled, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a claim with a cancelled context: got %v, want context.Canceled", err)
	}
	if r := row(t, w["A"], key); r.Attempts != 0 || r.Fence != 0 {
		t.Errorf("a cancelled claim wrote: %+v", r)
	}
	if _, d, err := w["A"].ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
		t.Fatalf("got %+v, %v", d, err)
	}
	if got, want := w["A"].CommitStats(), (system.CommitStats{Commits: before.Commits + 1, Writes: before.Writes + 1}); got != want {
		t.Errorf("commit stats: got %+v, want %+v", got, want)
	}
}

// TestBatchPanic: a write that panics (here a hook) rolls its batch back:
// the caller that ran the batch panics, every other caller of the batch
// gets an error, nothing is written, and later writes run as before.
func TestBatchPanic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A", "B")
	mustApprove(t, w["A"], "case-1", "case-2")
	panicking := betweenInserts(t, w["A"], clk, func() error { panic("hook") })
	before := snapshot(t, w["A"])
	errs := make([]error, 3)
	panics := make([]any, 3)
	guard := func(i int, call func() error) func() {
		return func() {
			defer func() { panics[i] = recover() }()
			errs[i] = call()
		}
	}
	claim := func(app *system.Outbox) func() error {
		return func() error { _, _, err := app.ClaimNext(ctx, 0); return err }
	}
	inOneBatch(t, holdOutbox(w["A"]), func() int { return system.Queued(w["A"]) },
		guard(0, claim(w["A"])),
		guard(1, func() error { _, err := panicking.RecordApproval(ctx, "case-new", title); return err }),
		guard(2, claim(w["B"])))
	if panics[0] != "hook" || panics[1] != nil || panics[2] != nil {
		t.Errorf("panics: got %v, want the hook's in the first caller, which ran the batch, alone", panics)
	}
	for i := 1; i < 3; i++ {
		if !errors.Is(errs[i], system.ErrBatchPanicked) {
			t.Errorf("caller %d: got %v, want an error saying the batch panicked", i+1, errs[i])
		}
	}
	if diff := cmp.Diff(before, snapshot(t, w["A"])); diff != "" {
		t.Errorf("a batch that panicked wrote (-before +after):\n%s", diff)
	}
	for _, n := range []string{"A", "B"} {
		if _, d, err := w[n].ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
			t.Errorf("worker %s after the panic: got %+v, %v; want a claim", n, d, err)
		}
	}
}

// TestBatchSkipsAGivenUpWrite: a claim whose caller gives up while it
// waits behind a running batch is not run when its batch comes: it
// returns the context's error and takes nothing, and the claim queued
// after it in the same batch takes the row.
func TestBatchSkipsAGivenUpWrite(t *testing.T) {
	t.Parallel()
	clk := newClock()
	w, _ := workers(t, sqliteBackend, clk, system.Options{NoBackoff: true}, "A", "B")
	mustApprove(t, w["A"], "case-1")
	const key = system.KeyPrefix + "case-1"
	release := make(chan struct{})
	held := system.Hold(w["A"], release)
	ctx, cancel := context.WithCancel(t.Context())
	var gaveUp, next claimResult
	done := make(chan struct{}, 2)
	queue := func(call func(), n int) {
		go func() { call(); done <- struct{}{} }()
		for deadline := time.Now().Add(10 * time.Second); system.Queued(w["A"]) != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("claim %d did not queue behind the held batch", n)
			}
		}
	}
	queue(claimInto(ctx, w["A"], &gaveUp), 1)
	queue(claimInto(t.Context(), w["B"], &next), 2)
	cancel()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	<-done
	<-done
	if !errors.Is(gaveUp.err, context.Canceled) {
		t.Errorf("the claim given up: got %+v, %v; want context.Canceled", gaveUp.d, gaveUp.err)
	}
	if next.err != nil || next.d.Result != system.ResultPending || next.c.Key != key {
		t.Errorf("the claim after it: got %+v, %v; want %s claimed", next.d, next.err, key)
	}
	if r := row(t, w["A"], key); r.Attempts != 1 || r.LeaseOwner != "B" {
		t.Errorf("the row: %d attempts, leased by %q; want 1 attempt, leased by B", r.Attempts, r.LeaseOwner)
	}
}

// processConnector names the simulated process its connections belong
// to, as a harness that runs several in one does.
type processConnector struct {
	driver.Connector
	name string
}

func (p processConnector) Process() string { return p.name }

// TestGroupPerProcess: handles whose connector names another process
// (system.ProcessConnector) commit apart, as handles of two processes
// do; handles of one named process commit together.
func TestGroupPerProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	open := func(process, worker string) *system.Outbox {
		t.Helper()
		o, err := system.Open(ctx, path, system.Options{Durability: system.ProcessSafe, Worker: worker,
			Harness: system.Harness{WrapSQLite: func(c driver.Connector) driver.Connector { return processConnector{c, process} }}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	a1, a2, b := open("a", "a1"), open("a", "a2"), open("b", "b1")
	before := [3]system.CommitStats{a1.CommitStats(), a2.CommitStats(), b.CommitStats()}
	mustApprove(t, a1, caseID)
	if a2.CommitStats() == before[1] {
		t.Errorf("a commit of process a's handle is not counted in its other handle's group: %+v", a2.CommitStats())
	}
	if got := b.CommitStats(); got != before[2] {
		t.Errorf("a commit of process a counted in process b's group: %+v, before %+v", got, before[2])
	}
}

// failingCommits wraps a SQLite connector: while fail is set, a COMMIT is
// not carried out, its transaction is rolled back and the commit fails,
// as one that meets a full disk may.
type failingCommits struct {
	driver.Connector
	fail *atomic.Bool
}

var errCommit = errors.New("disk I/O error at COMMIT")

func (f failingCommits) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := f.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return failingConn{Conn: c, fail: f.fail}, nil
}

type failingConn struct {
	driver.Conn
	fail *atomic.Bool
}

func (c failingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return failingTx{Tx: tx, fail: c.fail}, nil
}

type failingTx struct {
	driver.Tx
	fail *atomic.Bool
}

func (t failingTx) Commit() error {
	if t.fail.Load() {
		t.Tx.Rollback()
		return errCommit
	}
	return t.Tx.Commit()
}

// TestBatchCommitFails: a batch whose COMMIT fails wrote nothing, and
// each of its writes returns the failure: a claim takes no row and counts
// no attempt, an approval leaves no row, and the commit counts nothing.
// Once commits go through again, so do the writes.
func TestBatchCommitFails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var fail atomic.Bool
	app, err := system.Open(ctx, filepath.Join(t.TempDir(), "app.db"), system.Options{Durability: system.ProcessSafe, Worker: "A", NoBackoff: true,
		Harness: system.Harness{WrapSQLite: func(c driver.Connector) driver.Connector { return failingCommits{c, &fail} }}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	mustApprove(t, app, caseID)
	before, stats := snapshot(t, app), app.CommitStats()
	fail.Store(true)
	if _, d, err := app.ClaimNext(ctx, 0); !errors.Is(err, errCommit) {
		t.Errorf("a claim whose commit fails: got %+v, %v; want the commit's failure", d, err)
	}
	if _, err := app.RecordApproval(ctx, "case-new", title); !errors.Is(err, errCommit) {
		t.Errorf("an approval whose commit fails: got %v, want the commit's failure", err)
	}
	fail.Store(false)
	if diff := cmp.Diff(before, snapshot(t, app)); diff != "" {
		t.Errorf("writes whose commit failed wrote (-before +after):\n%s", diff)
	}
	if got := app.CommitStats(); got != stats {
		t.Errorf("commit stats: %+v, before %+v; want no commit counted", got, stats)
	}
	if _, d, err := app.ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
		t.Errorf("a claim once commits go through: got %+v, %v; want the row claimed", d, err)
	}
}
