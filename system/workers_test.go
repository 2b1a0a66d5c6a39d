package system_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/system"
)

// clock is a virtual clock a test moves by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time       { return c.now }
func (c *clock) tick(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *clock                { return &clock{now: approvedAt} }

// fixedJitter is a jitter source that draws d whatever the ceiling: the
// system must cap it itself.
func fixedJitter(d time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return d }
}

// workers opens one app database on b and a CRM in a fresh folder, with one
// Outbox per worker name, all on clk.
func workers(t *testing.T, b backend, clk *clock, opts system.Options, names ...string) (map[string]*system.Outbox, *system.CRM) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	target := b.app(t)
	opts.Harness.Now = clk.Now
	opts.Durability = system.ProcessSafe
	out := map[string]*system.Outbox{}
	for _, n := range names {
		o := opts
		o.Worker = n
		app, err := system.Open(ctx, target, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { app.Close() })
		out[n] = app
	}
	crm, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{Durability: system.ProcessSafe, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { crm.Close() })
	return out, crm
}

func mustApprove(t *testing.T, app *system.Outbox, cases ...string) {
	t.Helper()
	for _, c := range cases {
		if _, err := app.RecordApproval(t.Context(), c, title); err != nil {
			t.Fatal(err)
		}
	}
}

func row(t *testing.T, app *system.Outbox, k string) system.Row {
	t.Helper()
	r, err := app.Row(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStaleSettleWritesNothing: worker A claims, its lease runs out, B
// claims the row and sends it; A's late settle finds another fence and
// writes nothing, whatever A heard.
func TestStaleSettleWritesNothing(t *testing.T) { eachBackend(t, testStaleSettleWritesNothing) }

// testStaleSettleWritesNothing has A settle late, after its lease ran out
// and B claimed the row: while B still holds it, and after B settled it.
// Whatever A heard, a task id, a failure or a cause of its own (which it
// records only on a row that carries its claim), the row stays as it was.
func testStaleSettleWritesNothing(t *testing.T, b backend) {
	for _, late := range []struct {
		name string
		err  error
		own  bool // a cause of A's own: Settle returns an *AttemptError
	}{
		{"late task id", nil, false},
		{"late transient", system.ErrTransient, false},
		{"late conflict", system.ErrKeyConflict, false},
		{"late rejection", system.ErrRejected, false},
		{"late cause of its own", errors.New("certificate expired"), true},
	} {
		t.Run(late.name, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			w, crm := workers(t, b, clk, system.Options{NoBackoff: true}, "A", "B")
			mustApprove(t, w["A"], caseID)
			ca, d, err := w["A"].ClaimNext(ctx, 0)
			if err != nil || d.Result != system.ResultPending || ca.Fence != 1 || ca.Attempt != 1 {
				t.Fatalf("A's claim: got %+v %+v, %v", ca, d, err)
			}
			if _, d, _ := w["B"].ClaimNext(ctx, 0); d.Result != system.Idle || !d.NextEligible.Equal(approvedAt.Add(system.DefaultLease)) {
				t.Fatalf("B during A's lease: got %+v, want idle until the lease runs out", d)
			}
			clk.tick(system.DefaultLease)
			cb, d, err := w["B"].ClaimNext(ctx, 0)
			if err != nil || d.Result != system.ResultPending || cb.Fence != 2 || cb.Attempt != 2 {
				t.Fatalf("B after A's lease ran out: got %+v %+v, %v", cb, d, err)
			}
			settleLate := func(when string) {
				t.Helper()
				before := row(t, w["A"], key)
				d, err := w["A"].Settle(ctx, ca, 99, late.err)
				var attempt *system.AttemptError
				switch {
				case late.own && !errors.As(err, &attempt):
					t.Fatalf("A's late settle %s: got %v, want an *AttemptError", when, err)
				case !late.own && (err != nil || d.Result != system.ResultStale):
					t.Fatalf("A's late settle %s: got %+v, %v; want stale", when, d, err)
				}
				if diff := cmp.Diff(before, row(t, w["A"], key)); diff != "" {
					t.Errorf("a stale settle %s changed the row (-before +after):\n%s", when, diff)
				}
			}
			settleLate("while B holds the row")
			id, err := w["B"].Send(ctx, cb, crm)
			if d, err := w["B"].Settle(ctx, cb, id, err); err != nil || d.Result != system.ResultSent {
				t.Fatalf("B's settle: got %+v, %v", d, err)
			}
			settleLate("after B settled the row")
		})
	}
}

// TestRecoverFencesOutAZombie: a worker that starts again releases its
// leases, so the settle of its earlier life is stale.
func TestRecoverFencesOutAZombie(t *testing.T) { eachBackend(t, testRecoverFencesOutAZombie) }

func testRecoverFencesOutAZombie(t *testing.T, b backend) {
	ctx := t.Context()
	clk := newClock()
	w, crm := workers(t, b, clk, system.Options{NoBackoff: true}, "A", "B")
	mustApprove(t, w["A"], caseID, "case-2")
	zombie, _, err := w["A"].ClaimNext(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w["B"].ClaimNext(ctx, 0); err != nil { // B holds case-2: not A's to release
		t.Fatal(err)
	}
	if n, err := w["A"].Recover(ctx); err != nil || n != 1 {
		t.Fatalf("Recover: released %d, %v; want 1", n, err)
	}
	if r := row(t, w["A"], key); r.LeaseOwner != "" || r.Fence != 2 || r.Attempts != 1 {
		t.Errorf("after Recover: got %+v, want no lease, fence 2, the attempt counted", r)
	}
	if r := row(t, w["A"], system.KeyPrefix+"case-2"); r.LeaseOwner != "B" {
		t.Errorf("Recover released another worker's lease: %+v", r)
	}
	id, err := w["A"].Send(ctx, zombie, crm)
	if d, err := w["A"].Settle(ctx, zombie, id, err); err != nil || d.Result != system.ResultStale {
		t.Errorf("the zombie's settle: got %+v, %v; want stale", d, err)
	}
	if c, d, err := w["A"].ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending || c.Key != key || c.Attempt != 2 {
		t.Errorf("claim after Recover: got %+v %+v, %v; want %s again, attempt 2", c, d, err, key)
	}
}

// retryHint is a receiver that fails transiently, with a hint; 0 fails
// with no hint at all, so that the jitter alone sets the wait (a hint of
// 0 would still raise a wait below it).
type retryHint time.Duration

func (h retryHint) CreateTask(context.Context, string, string) (int64, error) {
	if h == 0 {
		return 0, fmt.Errorf("%w: offline", system.ErrTransient)
	}
	return 0, &system.RetryHint{After: time.Duration(h), Err: system.ErrTransient}
}

// TestBackoff: after a transient failure the row waits max(jitter, hint),
// the jitter within min(cap, base·2^(n−1)).
func TestBackoff(t *testing.T) { eachBackend(t, testBackoff) }

func testBackoff(t *testing.T, b backend) {
	tests := []struct {
		name    string
		jitter  time.Duration // what the source draws (capped at the ceiling)
		hint    time.Duration // 0: none
		attempt int
		want    time.Duration
	}{
		{"first attempt, jitter within 1 s", 700 * time.Millisecond, 0, 1, 700 * time.Millisecond},
		{"jitter capped at the ceiling", 10 * time.Second, 0, 1, time.Second},
		{"second attempt, ceiling 2 s", 10 * time.Second, 0, 2, 2 * time.Second},
		{"a longer hint wins", 300 * time.Millisecond, 5 * time.Second, 1, 5 * time.Second},
		{"a shorter hint loses", 900 * time.Millisecond, 100 * time.Millisecond, 1, 900 * time.Millisecond},
		{"a jitter below 0 counts as 0", -time.Second, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			w, crm := workers(t, b, clk, system.Options{MaxAttempts: 5, Harness: system.Harness{Jitter: fixedJitter(tt.jitter)}}, "A")
			app := w["A"]
			mustApprove(t, app, caseID)
			for n := 1; n < tt.attempt; n++ { // earlier attempts fail at once, waiting 0
				c, _, _ := app.ClaimNext(ctx, 0)
				if _, err := app.Settle(ctx, c, 0, &system.RetryHint{Err: system.ErrTransient}); err != nil {
					t.Fatal(err)
				}
				clk.now = row(t, app, key).NextAttemptAt
			}
			start := clk.now
			d, err := app.DeliverOne(ctx, retryHint(tt.hint))
			if err != nil || d.Result != system.ResultPending || d.Attempts != tt.attempt {
				t.Fatalf("got %+v, %v", d, err)
			}
			if got := row(t, app, key).NextAttemptAt.Sub(start); got != tt.want {
				t.Errorf("next attempt after %v, want %v", got, tt.want)
			}
			clk.tick(tt.want - time.Millisecond)
			if _, d, _ := app.ClaimNext(ctx, 0); d.Result != system.Idle {
				t.Errorf("claim before the backoff ran out: got %+v, want idle", d)
			}
			clk.tick(time.Millisecond)
			if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result != system.ResultSent {
				t.Errorf("delivery once the backoff ran out: got %+v, %v, want sent", d, err)
			}
		})
	}
}

func TestBackoffCeiling(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		base, cap time.Duration
		n         int
		want      time.Duration
	}{
		{time.Second, 5 * time.Minute, 1, time.Second},
		{time.Second, 5 * time.Minute, 4, 8 * time.Second},
		{time.Second, 5 * time.Minute, 20, 5 * time.Minute},
		{0, 5 * time.Minute, 3, 0},
	} {
		if got := system.BackoffCeiling(tt.base, tt.cap, tt.n); got != tt.want {
			t.Errorf("BackoffCeiling(%v, %v, %d) = %v, want %v", tt.base, tt.cap, tt.n, got, tt.want)
		}
	}
}

// TestClaimBlocks: a claim blocks a row, sending nothing, when its budget
// is spent, its time budget ran out, or the receiver may have forgotten
// its key; in that order.
func TestClaimBlocks(t *testing.T) { eachBackend(t, testClaimBlocks) }

func testClaimBlocks(t *testing.T, b backend) {
	const minute = time.Minute
	tests := []struct {
		name      string
		maxAge    time.Duration
		retention time.Duration
		crashes   int           // claims that die before settling, each lease running out
		failures  int           // attempts that fail transiently
		wait      time.Duration // after them
		want      string
	}{
		{"budget", 0, 0, 3, 0, 0, system.LastErrorBudgetExhausted},
		{"budget before deadline", 5 * time.Second, 0, 3, 0, 0, system.LastErrorBudgetExhausted},
		{"deadline", minute, 0, 0, 1, minute, system.LastErrorDeadline},
		{"deadline before retention", minute, 20 * time.Second, 0, 1, minute, system.LastErrorDeadline},
		{"retention", 0, minute, 0, 1, minute - time.Second, system.LastErrorRetentionExpired},
		{"within retention", 0, minute, 0, 1, minute - time.Second - time.Millisecond, ""},
		{"within the time budget", minute, 0, 0, 1, minute - time.Millisecond, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			opts := system.Options{NoBackoff: true, MaxAge: tt.maxAge, Lease: 2 * time.Second, SendTimeout: time.Second}
			w, crm := workers(t, b, clk, opts, "A")
			app := w["A"]
			mustApprove(t, app, caseID)
			for range tt.crashes {
				if _, d, err := app.ClaimNext(ctx, tt.retention); err != nil || d.Result != system.ResultPending {
					t.Fatalf("got %+v, %v", d, err)
				}
				clk.tick(opts.Lease)
			}
			for range tt.failures {
				c, _, err := app.ClaimNext(ctx, tt.retention)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := app.Settle(ctx, c, 0, fmt.Errorf("%w: offline", system.ErrTransient)); err != nil {
					t.Fatal(err)
				}
			}
			clk.tick(tt.wait)
			before := row(t, app, key)
			_, d, err := app.ClaimNext(ctx, tt.retention)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if d.Result != system.ResultPending {
					t.Errorf("got %+v, want a claim", d)
				}
				return
			}
			r := row(t, app, key)
			if d.Result != system.ResultBlocked || d.LastError != tt.want || r.State != system.Blocked || r.LastError != tt.want ||
				r.Attempts != before.Attempts || r.Fence != before.Fence+1 || r.LeaseOwner != "" {
				t.Errorf("got %+v and row %+v, want blocked with %s, attempts as before, fence one more", d, r, tt.want)
			}
			if tasks, _ := crm.Tasks(ctx); len(tasks) != 0 {
				t.Errorf("a blocked claim sent: %v", tasks)
			}
		})
	}
}

// TestReceiverRetention: the CRM forgets a key after its retention; the
// task stays, and a create for the forgotten key makes a second task.
func TestReceiverRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	crm, err := system.OpenCRMWith(ctx, filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Retention: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	if crm.Retention() != time.Minute {
		t.Errorf("Retention() = %v", crm.Retention())
	}
	steps := []struct {
		wait    time.Duration
		payload string
		want    int64
		wantErr error
	}{
		{0, "p", 1, nil},
		{time.Minute - time.Millisecond, "p", 1, nil},
		{0, "q", 0, system.ErrKeyConflict},
		{time.Millisecond, "p", 2, nil}, // forgotten: a second task
		{time.Minute - time.Millisecond, "q", 0, system.ErrKeyConflict},
	}
	for i, s := range steps {
		clk.tick(s.wait)
		id, err := crm.CreateTask(ctx, key, s.payload)
		if id != s.want || !errors.Is(err, s.wantErr) || (err == nil) != (s.wantErr == nil) {
			t.Errorf("step %d: got %d, %v; want %d, %v", i+1, id, err, s.want, s.wantErr)
		}
	}
	if tasks, _ := crm.Tasks(ctx); len(tasks) != 2 {
		t.Errorf("got %d tasks, want the forgotten key's and its duplicate", len(tasks))
	}
	if _, err := system.OpenCRMWith(ctx, filepath.Join(t.TempDir(), "x.db"), system.CRMOptions{Retention: -time.Second}); !errors.Is(err, system.ErrInvalidInput) {
		t.Errorf("negative retention: got %v, want ErrInvalidInput", err)
	}
}

func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, opts := range []system.Options{
		{Lease: -time.Second},
		{SendTimeout: -time.Second},
		{BackoffBase: -1},
		{BackoffCap: -1},
		{MaxAge: -1},
		{Retention: -1},
		{MaxAttempts: -1},
		{BusyTimeout: -time.Millisecond},
		{ConnectWait: -time.Second},
		{MaxConns: -1},
		{SendTimeout: 30 * time.Second},
		{Lease: time.Second, SendTimeout: time.Second},
	} {
		path := filepath.Join(t.TempDir(), "app.db")
		if _, err := system.Open(t.Context(), path, opts); !errors.Is(err, system.ErrInvalidInput) {
			t.Errorf("Open with %+v: got %v, want ErrInvalidInput", opts, err)
		}
	}
	for _, opts := range []system.CRMOptions{{Retention: -1}, {BusyTimeout: -1}} {
		path := filepath.Join(t.TempDir(), "crm.db")
		if _, err := system.OpenCRMWith(t.Context(), path, opts); !errors.Is(err, system.ErrInvalidInput) {
			t.Errorf("OpenCRMWith with %+v: got %v, want ErrInvalidInput", opts, err)
		}
	}
}

// TestOperatorActions runs every operator action on rows in every state
// it takes and refuses, and checks the row, the fence and the audit log.
func TestOperatorActions(t *testing.T) { eachBackend(t, testOperatorActions) }

func testOperatorActions(t *testing.T, b backend) {
	type rowWant struct {
		state    system.State
		attempts int
		remoteID int64
	}
	tests := []struct {
		name    string
		setup   string // blocked, pending, leased, sent, claimed-long-ago
		act     func(ctx context.Context, app *system.Outbox) error
		wantErr error
		want    rowWant
	}{
		{"requeue a blocked row", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key, 0, "ana", "CRM checked")
		}, nil, rowWant{system.Pending, 0, 0}},
		{"requeue a pending row", "pending", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key, 0, "ana", "why not")
		}, system.ErrWrongState, rowWant{system.Pending, 1, 0}},
		{"requeue past retention", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key, 20*time.Second, "ana", "late") // first claimed 10 s ago, send timeout 10 s
		}, system.ErrRetention, rowWant{system.Blocked, 3, 0}},
		{"requeue within retention", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key, 20*time.Second+time.Millisecond, "ana", "in time")
		}, nil, rowWant{system.Pending, 0, 0}},
		{"reconcile a blocked row", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 7, "ana", "found task 7")
		}, nil, rowWant{system.Sent, 3, 7}},
		{"reconcile a pending row without a lease", "pending", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 7, "ana", "found task 7")
		}, nil, rowWant{system.Sent, 1, 7}},
		{"reconcile a leased row", "leased", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 7, "ana", "found task 7")
		}, system.ErrWrongState, rowWant{system.Pending, 1, 0}},
		{"reconcile a sent row", "sent", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 7, "ana", "found task 7")
		}, system.ErrWrongState, rowWant{system.Sent, 1, 1}},
		{"reconcile --absent past retention", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.ReconcileAbsent(ctx, key, "ana", "no task in the CRM")
		}, nil, rowWant{system.Pending, 0, 0}},
		{"reconcile --absent a leased row", "leased", func(ctx context.Context, app *system.Outbox) error {
			return app.ReconcileAbsent(ctx, key, "ana", "no task")
		}, system.ErrWrongState, rowWant{system.Pending, 1, 0}},
		{"no actor", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key, 0, "", "why")
		}, system.ErrInvalidInput, rowWant{system.Blocked, 3, 0}},
		{"no reason", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 1, "ana", "")
		}, system.ErrInvalidInput, rowWant{system.Blocked, 3, 0}},
		{"unknown key", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Requeue(ctx, key+"x", 0, "ana", "why")
		}, system.ErrNotFound, rowWant{system.Blocked, 3, 0}},
		{"remote id 0", "blocked", func(ctx context.Context, app *system.Outbox) error {
			return app.Reconcile(ctx, key, 0, "ana", "why")
		}, system.ErrInvalidInput, rowWant{system.Blocked, 3, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			w, crm := workers(t, b, clk, system.Options{NoBackoff: true}, "A")
			app := w["A"]
			mustApprove(t, app, caseID)
			switch tt.setup {
			case "blocked":
				for range 3 {
					_, _ = app.DeliverOne(ctx, retryHint(0))
				}
				clk.tick(10 * time.Second)
			case "pending":
				_, _ = app.DeliverOne(ctx, retryHint(0))
			case "leased":
				_, _, _ = app.ClaimNext(ctx, 0)
			case "sent":
				_, _ = app.DeliverOne(ctx, crm)
			}
			before := row(t, app, key)
			err := tt.act(ctx, app)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			r := row(t, app, key)
			if got := (rowWant{r.State, r.Attempts, r.RemoteID}); got != tt.want {
				t.Errorf("got row %+v, want %+v", r, tt.want)
			}
			log, err := app.Audit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil {
				if diff := cmp.Diff(before, r); diff != "" || len(log) != 0 {
					t.Errorf("a refused action changed the row (-before +after):\n%s\naudit log: %+v", diff, log)
				}
				return
			}
			if r.Fence != before.Fence+1 || r.LeaseOwner != "" || r.LastError != "" {
				t.Errorf("got row %+v, want fence %d, no lease, no last error", r, before.Fence+1)
			}
			if r.State == system.Pending && !r.NextAttemptAt.Equal(clk.now) {
				t.Errorf("a requeued row is eligible at %v, want now (%v)", r.NextAttemptAt, clk.now)
			}
			if len(log) != 1 || log[0].Actor != "ana" || log[0].Key != key || !log[0].At.Equal(clk.now) {
				t.Errorf("audit log: got %+v, want one entry by ana for %s now", log, key)
			}
		})
	}
}

// TestReconcileAbsentForgetsTheFirstClaim: after reconcile --absent the
// retention window starts afresh, so the row can be claimed and sent.
func TestReconcileAbsentForgetsTheFirstClaim(t *testing.T) {
	eachBackend(t, testReconcileAbsentForgetsTheFirstClaim)
}

func testReconcileAbsentForgetsTheFirstClaim(t *testing.T, b backend) {
	ctx := t.Context()
	clk := newClock()
	w, crm := workers(t, b, clk, system.Options{NoBackoff: true}, "A")
	app := w["A"]
	mustApprove(t, app, caseID)
	_, _ = app.DeliverOne(ctx, retryHint(0))
	clk.tick(time.Hour)
	if _, d, _ := app.ClaimNext(ctx, time.Minute); d.LastError != system.LastErrorRetentionExpired {
		t.Fatalf("got %+v, want blocked retention-expired", d)
	}
	if err := app.Requeue(ctx, key, time.Minute, "ana", "retry"); !errors.Is(err, system.ErrRetention) {
		t.Fatalf("requeue past retention: got %v, want ErrRetention", err)
	}
	if err := app.ReconcileAbsent(ctx, key, "ana", "no task for the key in the CRM"); err != nil {
		t.Fatal(err)
	}
	if r := row(t, app, key); !r.FirstClaimedAt.IsZero() || r.Attempts != 0 {
		t.Errorf("after reconcile --absent: got %+v, want no first claim and 0 attempts", r)
	}
	if d, err := app.DeliverOne(ctx, retained{crm, time.Minute}); err != nil || d.Result != system.ResultSent {
		t.Errorf("delivery after reconcile --absent: got %+v, %v; want sent", d, err)
	}
}

// TestTheReceiversRetentionComesFirst: a receiver that declares its
// retention (a Retainer) is judged by it, not by Options.Retention, which
// is for a receiver that declares none: a row first claimed two minutes
// ago is blocked, nothing sent, by a receiver that keeps keys a minute,
// though the options say an hour; through DeliverOne and a Pipeline
// alike.
func TestTheReceiversRetentionComesFirst(t *testing.T) {
	eachBackend(t, testTheReceiversRetentionComesFirst)
}

func testTheReceiversRetentionComesFirst(t *testing.T, b backend) {
	for _, via := range []string{"DeliverOne", "Pipeline"} {
		ctx := t.Context()
		clk := newClock()
		w, crm := workers(t, b, clk, system.Options{NoBackoff: true, Retention: time.Hour}, "A")
		app := w["A"]
		mustApprove(t, app, "case-1")
		lost := receiverFunc(func(context.Context, string, string) (int64, error) {
			return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
		})
		if d, err := app.DeliverOne(ctx, lost); err != nil || d.Result != system.ResultPending {
			t.Fatalf("%s: the first delivery: %+v, %v; want pending", via, d, err)
		}
		clk.tick(2 * time.Minute)
		r := retained{crm, time.Minute}
		var d system.Delivery
		var err error
		if via == "DeliverOne" {
			d, err = app.DeliverOne(ctx, r)
		} else {
			p, perr := app.Pipeline(r)
			if perr != nil {
				t.Fatal(perr)
			}
			d, err = p.Next(ctx)
		}
		if err != nil || d.Result != system.ResultBlocked || d.LastError != system.LastErrorRetentionExpired {
			t.Errorf("%s two minutes after the first claim, to a receiver that keeps keys a minute: %+v, %v; want blocked %s",
				via, d, err, system.LastErrorRetentionExpired)
		}
	}
}

// retained declares a retention for a receiver that has none.
type retained struct {
	system.Receiver
	r time.Duration
}

func (r retained) Retention() time.Duration { return r.r }

// conflicting is a receiver that holds other content for every key.
type conflicting struct{}

func (conflicting) CreateTask(context.Context, string, string) (int64, error) {
	return 0, system.ErrKeyConflict
}

func TestStale(t *testing.T) { eachBackend(t, testStale) }

func testStale(t *testing.T, b backend) {
	ctx := t.Context()
	clk := newClock()
	w, crm := workers(t, b, clk, system.Options{NoBackoff: true}, "A")
	app := w["A"]
	mustApprove(t, app, "a-blocked")
	_, _ = app.DeliverOne(ctx, conflicting{})
	mustApprove(t, app, "s-sent")
	_, _ = app.DeliverOne(ctx, crm)
	mustApprove(t, app, "b-old")
	clk.tick(time.Hour)
	mustApprove(t, app, "c-new")
	stale, err := app.Stale(ctx, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range stale {
		keys = append(keys, r.Key)
	}
	if want := []string{system.KeyPrefix + "a-blocked", system.KeyPrefix + "b-old"}; !cmp.Equal(keys, want) {
		t.Errorf("stale rows: got %v, want %v", keys, want)
	}
	if _, err := app.Stale(ctx, -time.Second); !errors.Is(err, system.ErrInvalidInput) {
		t.Errorf("negative age: got %v", err)
	}
}

// TestBudgetIsRecorded: a claim made with an attempt budget above the
// default records it, so a reader of the file (handoff check) knows that
// a row may have that many attempts; a smaller budget never lowers it,
// on either backend.
func TestBudgetIsRecorded(t *testing.T) {
	tests := []struct {
		name    string
		budgets []int // the workers' budgets, one claim each, in order
		want    int
	}{
		{"no claim", nil, system.DefaultMaxAttempts},
		{"the default", []int{3}, system.DefaultMaxAttempts},
		{"smaller than the default", []int{2}, system.DefaultMaxAttempts},
		{"larger", []int{5}, 5},
		{"larger, then smaller", []int{7, 4}, 7},
		{"rising", []int{4, 6}, 6},
		{"rising past nine", []int{4, 10}, 10}, // compared as numbers: "10" < "4" as text
	}
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := t.Context()
				path := b.app(t)
				for i, budget := range tt.budgets {
					app, err := system.Open(ctx, path, system.Options{MaxAttempts: budget, Durability: system.ProcessSafe, Worker: fmt.Sprint("w", i)})
					if err != nil {
						t.Fatal(err)
					}
					mustApprove(t, app, fmt.Sprint("case-", i))
					if _, d, err := app.ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
						t.Fatalf("claim with budget %d: %v, %v", budget, d.Result, err)
					}
					app.Close()
				}
				// A worker's own budget counts too, when it is the larger.
				for _, own := range []int{system.DefaultMaxAttempts, tt.want + 2} {
					app, err := system.Open(ctx, path, system.Options{MaxAttempts: own, Durability: system.ProcessSafe})
					if err != nil {
						t.Fatal(err)
					}
					got, err := app.Budget(ctx)
					if want := max(own, tt.want); err != nil || got != want {
						t.Errorf("Budget() of a worker whose own is %d = %d, %v; want %d", own, got, err, want)
					}
					app.Close()
				}
				ro, err := system.OpenReadOnly(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				defer ro.Close()
				got, err := ro.Budget(ctx)
				if err != nil || got != tt.want {
					t.Errorf("Budget() = %d, %v; want %d", got, err, tt.want)
				}
			})
		}
	})
}

// TestRetentionClockStartsAtTheFirstClaim: a row's first claim starts
// the clock of the receiver's retention, and nothing after it restarts
// it: not a later claim of the same row, not a requeue, not a reconcile
// (the receiver may forget the key from the first send on, whatever came
// after).
func TestRetentionClockStartsAtTheFirstClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := newClock()
	app, err := system.Open(ctx, filepath.Join(t.TempDir(), "app.db"), system.Options{MaxAttempts: 2, Durability: system.ProcessSafe, Harness: system.Harness{Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	mustApprove(t, app, "case-1")
	key := mustKey(t, "case-1")
	clk.tick(time.Second)
	first := clk.Now()
	lost := fmt.Errorf("%w: the reply was lost", system.ErrTransient)
	for attempt := 1; attempt <= 2; attempt++ {
		c, d, err := app.ClaimNext(ctx, 0)
		if err != nil || d.Result != system.ResultPending || c.Key != key {
			t.Fatalf("claim %d: %+v, %v; want %s claimed", attempt, d, err, key)
		}
		if got := row(t, app, key).FirstClaimedAt; !got.Equal(first) {
			t.Errorf("after claim %d, first claimed at %v; want %v", attempt, got, first)
		}
		if _, err := app.Settle(ctx, c, 0, lost); err != nil {
			t.Fatal(err)
		}
		clk.tick(10 * time.Minute)
	}
	if r := row(t, app, key); r.State != system.Blocked {
		t.Fatalf("after two lost replies with a budget of two: %s, want blocked", r.State)
	}
	if err := app.Requeue(ctx, key, 0, "ana", "CRM checked"); err != nil {
		t.Fatal(err)
	}
	if got := row(t, app, key).FirstClaimedAt; !got.Equal(first) {
		t.Errorf("after a requeue, first claimed at %v; want %v", got, first)
	}
	if err := app.Reconcile(ctx, key, 1, "ana", "found as task 1"); err != nil {
		t.Fatal(err)
	}
	if got := row(t, app, key).FirstClaimedAt; !got.Equal(first) {
		t.Errorf("after a reconcile, first claimed at %v; want %v", got, first)
	}
}

// TestBudgetIsRecordedAfterABlockedClaim: a worker whose first claim
// blocks a row (its deadline passed) wrote no budget in that claim's
// transaction, so it records its budget at its next claim that counts an
// attempt: otherwise a reader takes the default budget for the
// attempts its rows go on to count.
func TestBudgetIsRecordedAfterABlockedClaim(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "app.db")
	clk := newClock()
	app, err := system.Open(ctx, path, system.Options{MaxAttempts: 5, MaxAge: time.Minute, Durability: system.ProcessSafe, Harness: system.Harness{Now: clk.Now}})
	if err != nil {
		t.Fatal(err)
	}
	mustApprove(t, app, "case-old")
	clk.tick(time.Hour)
	if _, d, err := app.ClaimNext(ctx, 0); err != nil || d.Result != system.ResultBlocked {
		t.Fatalf("first claim: %v, %v; want blocked, its deadline passed", d.Result, err)
	}
	mustApprove(t, app, "case-new")
	if _, d, err := app.ClaimNext(ctx, 0); err != nil || d.Result != system.ResultPending {
		t.Fatalf("second claim: %v, %v; want pending", d.Result, err)
	}
	app.Close()
	ro, err := system.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Budget(ctx); err != nil || got != 5 {
		t.Errorf("Budget() = %d, %v; want 5", got, err)
	}
}

// TestSendEndsByTheClaimsDeadline: a send that starts late in its claim's
// window gets only what is left of it, so that every send is over by the
// claim's time plus the send timeout, on which the retention rule rests.
func TestSendEndsByTheClaimsDeadline(t *testing.T) { eachBackend(t, testSendEndsByTheClaimsDeadline) }

func testSendEndsByTheClaimsDeadline(t *testing.T, b backend) {
	ctx := t.Context()
	clk := newClock()
	w, _ := workers(t, b, clk, system.Options{NoBackoff: true}, "A")
	mustApprove(t, w["A"], caseID)
	c, _, err := w["A"].ClaimNext(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	late := system.DefaultSendTimeout * 6 / 10
	clk.tick(late)
	var left time.Duration
	started := time.Now()
	got := receiverFunc(func(ctx context.Context, _, _ string) (int64, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			return 0, errors.New("no deadline")
		}
		left = deadline.Sub(started)
		return 1, nil
	})
	if _, err := w["A"].Send(ctx, c, got); err != nil {
		t.Fatal(err)
	}
	// left counts from before Send began: it may exceed what is left by
	// the time Send took, far less than the second allowed.
	if want := system.DefaultSendTimeout - late; left < want || left > want+time.Second {
		t.Errorf("a send %v into its claim's window was given %v, want what is left of it, %v", late, left, want)
	}
}

// TestDurabilityReachesTheFile reads SQLite's synchronous setting on the
// connections of an Outbox and a CRM: Durable syncs every commit (FULL),
// ProcessSafe none (OFF). No simulated crash can tell them apart, since
// a process crash loses nothing either way: only a power loss would.
func TestDurabilityReachesTheFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tt := range []struct {
		d    system.Durability
		want int
	}{{system.Durable, 2}, {system.ProcessSafe, 0}} {
		dir := t.TempDir()
		o, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{Durability: tt.d})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		c, err := system.OpenCRMWith(ctx, filepath.Join(dir, "crm.db"), system.CRMOptions{Durability: tt.d})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for name, db := range map[string]*sql.DB{"app": o.DB(), "crm": c.DB()} {
			var got int
			if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil || got != tt.want {
				t.Errorf("durability %d, %s database: synchronous %d (%v), want %d", tt.d, name, got, err, tt.want)
			}
		}
	}
}

// TestIdleUntilTheEarliestRow: a claim that finds nothing eligible says
// when the first pending row becomes eligible: the earliest, over rows
// waiting for a backoff and rows whose lease runs out.
func TestIdleUntilTheEarliestRow(t *testing.T) { eachBackend(t, testIdleUntilTheEarliestRow) }

func testIdleUntilTheEarliestRow(t *testing.T, b backend) {
	const hint = 20 * time.Second
	for _, tt := range []struct {
		name  string
		lease time.Duration
		want  time.Duration // after the claims
	}{
		{"the backoff ends first", 30 * time.Second, hint},
		{"the lease ends first", 15 * time.Second, 15 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			clk := newClock()
			w, _ := workers(t, b, clk, system.Options{MaxAttempts: 5, Lease: tt.lease, SendTimeout: 5 * time.Second, Harness: system.Harness{Jitter: fixedJitter(0)}}, "A", "B")
			mustApprove(t, w["A"], "case-1", "case-2")
			first, _, err := w["A"].ClaimNext(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w["A"].Settle(ctx, first, 0, &system.RetryHint{After: hint, Err: system.ErrTransient}); err != nil {
				t.Fatal(err)
			}
			if second, d, err := w["B"].ClaimNext(ctx, 0); err != nil || second.Key == "" || second.Key == first.Key {
				t.Fatalf("B's claim: %+v, %+v, %v; want the other row", second, d, err)
			}
			_, d, err := w["A"].ClaimNext(ctx, 0)
			if err != nil || d.Result != system.Idle || !d.NextEligible.Equal(clk.now.Add(tt.want)) {
				t.Errorf("got %+v, %v; want idle until %v", d, err, clk.now.Add(tt.want))
			}
		})
	}
}
