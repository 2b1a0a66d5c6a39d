package system_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// flakyNetwork carries one worker's requests to the CRM, failing some
// before the CRM acts (offline), losing some replies after it acted, and
// pausing the worker after some replies for longer than its lease, as a
// long GC pause or a stopped process would. Every choice comes from the
// worker's own seeded source.
type flakyNetwork struct {
	crm   *system.CRM
	rng   *rand.Rand
	pause time.Duration
	sends *sync.Map // key -> *int64, the requests every worker sent
	mu    *sync.Mutex
}

func (n flakyNetwork) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	n.mu.Lock()
	c, _ := n.sends.LoadOrStore(key, new(int))
	*c.(*int)++
	n.mu.Unlock()
	switch roll := n.rng.IntN(10); {
	case roll < 2:
		return 0, fmt.Errorf("%w: offline", system.ErrTransient)
	case roll < 4:
		if _, err := n.crm.CreateTask(ctx, key, payload); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
	case roll < 5:
		id, err := n.crm.CreateTask(ctx, key, payload)
		time.Sleep(n.pause)
		return id, err
	}
	return n.crm.CreateTask(ctx, key, payload)
}

// deliverChecked is DeliverOne in its three phases, checking invariant 8
// as it goes: a settle that wrote a final state (sent, blocked) came from
// the holder of the row's current fence, so the row carries the claim's
// fence afterwards (nothing changes a final row's fence).
func deliverChecked(ctx context.Context, t *testing.T, app *system.Outbox, r system.Receiver) (system.Delivery, error) {
	c, d, err := app.ClaimNext(ctx, 0)
	if err != nil || d.Result != system.ResultPending {
		return d, err
	}
	id, err := app.Send(ctx, c, r)
	d, err = app.Settle(ctx, c, id, err)
	if err == nil && (d.Result == system.ResultSent || d.Result == system.ResultBlocked) {
		if row, err := app.Row(ctx, c.Key); err != nil || row.Fence != c.Fence {
			t.Errorf("worker %s settled %s as %s under fence %d, but the row carries fence %d (%v)", app.Worker(), c.Key, d.Result, c.Fence, row.Fence, err)
		}
	}
	return d, err
}

// report is what a worker said it did with a row.
type report struct {
	worker string
	system.Delivery
}

// TestWorkersAtOnce runs workers, each its own Outbox on the same files
// as another process would (their writes commit together in batches),
// against a faulty network with pauses past the lease, until nothing is
// pending, and checks the files: every row sent or blocked, one task per
// key, sent rows naming their task, no key sent more often than its row
// counts attempts, and every outcome a worker reported (not stale) is the
// one the row kept. With many workers, half the rows are approved while
// they run, through a handle of their own.
func TestWorkersAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real workers for a few seconds")
	}
	for _, tt := range []struct {
		name                 string
		backend              backend
		workers, approveLate int
	}{
		{"4 workers", sqliteBackend, 4, 0},
		{"16 workers, approvals meanwhile", sqliteBackend, 16, 60},
		{"8 workers on PostgreSQL, approvals meanwhile", postgresBackend, 8, 60},
	} {
		t.Run(tt.name, func(t *testing.T) { workersAtOnce(t, tt.backend, tt.workers, tt.approveLate) })
	}
}

// workersAtOnce runs the test of TestWorkersAtOnce with the app database
// on b. On PostgreSQL every worker has a pool of its own, as on a machine
// of its own.
func workersAtOnce(t *testing.T, b backend, nWorkers, approveLate int) {
	const rows = 120
	ctx := t.Context()
	dir := t.TempDir()
	target := b.app(t)
	opts := system.Options{Durability: system.ProcessSafe, MaxAttempts: 5, Lease: 150 * time.Millisecond,
		SendTimeout: 100 * time.Millisecond, BackoffBase: time.Millisecond, BackoffCap: 10 * time.Millisecond}
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.ProcessSafe)
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	apps := make([]*system.Outbox, nWorkers)
	for i := range apps {
		o := opts
		o.Worker = fmt.Sprint("w", i)
		if apps[i], err = system.Open(ctx, target, o); err != nil {
			t.Fatal(err)
		}
		defer apps[i].Close()
	}
	for i := range rows - approveLate {
		if _, err := apps[0].RecordApproval(ctx, fmt.Sprint("case-", i), title); err != nil {
			t.Fatal(err)
		}
	}
	approver, err := system.Open(ctx, target, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer approver.Close()
	approving := make(chan struct{})
	go func() {
		defer close(approving)
		for i := rows - approveLate; i < rows; i++ {
			if _, err := approver.RecordApproval(ctx, fmt.Sprint("case-", i), title); err != nil {
				t.Error(err)
			}
		}
	}()
	var sends sync.Map
	var mu sync.Mutex
	var reports []report
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Minute)
	for i, app := range apps {
		wg.Go(func() {
			net := flakyNetwork{crm: crm, rng: rand.New(rand.NewPCG(1, uint64(i))), pause: 200 * time.Millisecond, sends: &sends, mu: &mu}
			for time.Now().Before(deadline) {
				// Read before the delivery: idle after the last approval
				// means nothing more to come.
				approved := done(approving)
				d, err := deliverChecked(ctx, t, app, net)
				var ae *system.AttemptError
				switch {
				case errors.As(err, &ae):
					continue // the lease runs out; another worker retries
				case err != nil:
					t.Errorf("worker %s: %v", app.Worker(), err)
					return
				case d.Result == system.Idle && d.NextEligible.IsZero() && approved:
					return // nothing pending, nothing more to come
				case d.Result == system.Idle && d.NextEligible.IsZero():
					time.Sleep(time.Millisecond)
					continue
				case d.Result == system.Idle:
					time.Sleep(min(time.Until(d.NextEligible), 20*time.Millisecond))
					continue
				}
				mu.Lock()
				reports = append(reports, report{app.Worker(), d})
				mu.Unlock()
			}
			t.Errorf("worker %s: still not idle after a minute", app.Worker())
		})
	}
	wg.Wait()

	snap, err := apps[0].Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := crm.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payload := map[string]string{}
	for _, a := range snap.Approvals {
		payload[a.Key] = a.Payload
	}
	byID, perKey := map[int64]system.Task{}, map[string]int{}
	for _, task := range tasks {
		byID[task.ID] = task
		if perKey[task.Key]++; perKey[task.Key] > 1 {
			t.Errorf("%s has %d tasks", task.Key, perKey[task.Key])
		}
	}
	final := map[string]system.Row{}
	states := map[system.State]int{}
	for _, r := range snap.Outbox {
		final[r.Key] = r
		states[r.State]++
		task, ok := byID[r.RemoteID]
		switch {
		case r.State == system.Pending:
			t.Errorf("%s is still pending after every worker went idle", r.Key)
		case r.State == system.Sent && (!ok || task.Key != r.Key || task.Payload != payload[r.Key]):
			t.Errorf("%s is sent as task %d, which is %+v", r.Key, r.RemoteID, task)
		case r.LeaseOwner != "":
			t.Errorf("%s is %s with a lease of %s", r.Key, r.State, r.LeaseOwner)
		case r.Attempts > opts.MaxAttempts:
			t.Errorf("%s has %d attempts", r.Key, r.Attempts)
		}
		if c, ok := sends.Load(r.Key); ok && *c.(*int) > r.Attempts {
			t.Errorf("%s was sent %d times, but its row counts %d attempts", r.Key, *c.(*int), r.Attempts)
		}
	}
	stale := 0
	for _, rep := range reports {
		r := final[rep.Key]
		switch rep.Result {
		case system.ResultStale:
			stale++
		case system.ResultSent:
			if r.State != system.Sent || r.RemoteID != rep.RemoteID {
				t.Errorf("worker %s reported %s sent as task %d, but the row ended %s with task %d", rep.worker, rep.Key, rep.RemoteID, r.State, r.RemoteID)
			}
		case system.ResultBlocked:
			if r.State != system.Blocked || r.LastError != rep.LastError {
				t.Errorf("worker %s reported %s blocked (%s), but the row ended %s (%s)", rep.worker, rep.Key, rep.LastError, r.State, r.LastError)
			}
		}
	}
	if len(snap.Outbox) != rows {
		t.Errorf("got %d rows, want %d", len(snap.Outbox), rows)
	}
	t.Logf("%d rows: %d sent, %d blocked; %d tasks; %d reports, %d stale settles; app database %+v, CRM %+v",
		rows, states[system.Sent], states[system.Blocked], len(tasks), len(reports), stale, apps[0].CommitStats(), crm.CommitStats())
	if stale == 0 {
		t.Errorf("no settle was stale: the pauses past the lease did not make workers overlap, so fencing went untested")
	}
}

// done reports whether c is closed.
func done(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
