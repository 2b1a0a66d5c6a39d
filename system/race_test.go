package system_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// TestOperatorsAmongWorkers runs workers and a person at once on one app
// database: the workers deliver over a network that fails half the
// requests, while the person reconciles rows as absent, which the
// workers then claim again. Every write that takes a row raises its fence
// by one, so at the end each row's fence must be the number of claims
// that took it (sent on, or blocked) plus the actions that said they took
// it, and no two claims may have been given the same fence. A claim or an
// action that read a row another transaction was changing breaks one or
// the other.
func TestOperatorsAmongWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real workers for a second or two")
	}
	eachBackend(t, operatorsAmongWorkers)
}

func operatorsAmongWorkers(t *testing.T, b backend) {
	const rows, workers, actions = 40, 4, 200
	ctx := t.Context()
	target := b.app(t)
	opts := system.Options{Durability: system.ProcessSafe, NoBackoff: true, MaxAttempts: 3}
	crm, err := system.OpenCRM(ctx, filepath.Join(t.TempDir(), "crm.db"), system.ProcessSafe)
	if err != nil {
		t.Fatal(err)
	}
	defer crm.Close()
	apps := make([]*system.Outbox, workers+1) // the last one is the person's
	for i := range apps {
		o := opts
		o.Worker = fmt.Sprint("w", i)
		if apps[i], err = system.Open(ctx, target, o); err != nil {
			t.Fatal(err)
		}
		defer apps[i].Close()
	}
	keys := make([]string, rows)
	for i := range keys {
		if keys[i], err = apps[0].RecordApproval(ctx, fmt.Sprint("case-", i), title); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	takes := map[string]int64{}   // key -> claims and actions that took the row
	fences := map[string]string{} // key/fence -> who was given it
	took := func(key string, fence int64, who string) {
		mu.Lock()
		defer mu.Unlock()
		takes[key]++
		if fence == 0 {
			return
		}
		id := fmt.Sprint(key, "/", fence)
		if other, ok := fences[id]; ok {
			t.Errorf("%s and %s were both given fence %d of %s", other, who, fence, key)
		}
		fences[id] = who
	}

	taken := 0 // actions the person took
	personDone := make(chan struct{})
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(personDone)
		rng := rand.New(rand.NewPCG(2, 2))
		person := apps[workers]
		// The person tries actions times, and on until one took a row:
		// on a fast machine every try can come before a row is blocked.
		for n := 0; n < actions || taken == 0 && time.Now().Before(deadline); n++ {
			if n >= actions {
				time.Sleep(time.Millisecond)
			}
			key := keys[rng.IntN(rows)]
			err := person.ReconcileAbsent(ctx, key, "person", "checked the CRM")
			switch {
			case err == nil:
				taken++
				took(key, 0, "the person")
			case !errors.Is(err, system.ErrWrongState):
				t.Errorf("reconcile --absent %s: %v", key, err)
				return
			}
		}
	})
	for i, app := range apps[:workers] {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, uint64(i)))
			for time.Now().Before(deadline) {
				personFinished := done(personDone)
				c, d, err := app.ClaimNext(ctx, 0)
				switch {
				case err != nil:
					t.Errorf("worker %s: %v", app.Worker(), err)
					return
				case d.Result == system.Idle && personFinished:
					return
				case d.Result == system.Idle:
					time.Sleep(time.Millisecond)
					continue
				case d.Result == system.ResultBlocked:
					took(d.Key, 0, "a blocking claim")
					continue
				}
				took(c.Key, c.Fence, "worker "+app.Worker())
				var id int64
				sendErr := fmt.Errorf("%w: offline", system.ErrTransient)
				if rng.IntN(2) == 0 {
					id, sendErr = crm.CreateTask(ctx, c.Key, c.Payload)
				}
				if _, err := app.Settle(ctx, c, id, sendErr); err != nil {
					t.Errorf("worker %s: %v", app.Worker(), err)
					return
				}
			}
			t.Errorf("worker %s: still not idle after a minute", app.Worker())
		})
	}
	wg.Wait()

	snap, err := apps[0].Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := apps[0].Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Outbox {
		if r.Fence != takes[r.Key] {
			t.Errorf("%s ended %s with fence %d, but %d claims and actions said they took it", r.Key, r.State, r.Fence, takes[r.Key])
		}
	}
	if len(audit) != taken {
		t.Errorf("the audit log holds %d entries, the person took %d rows", len(audit), taken)
	}
	t.Logf("%d rows: %d claims sent on, %d actions taken", rows, len(fences), taken)
	if taken == 0 {
		t.Errorf("the person took no row: the test raced nothing")
	}
}

// TestApprovalsAtOnce approves the same cases from several handles at
// once, one of them with another title for half the cases: each key ends
// with one approval and one outbox row, every approval that succeeded
// holds the payload that was kept, and every one refused as a conflict
// another.
func TestApprovalsAtOnce(t *testing.T) { eachBackend(t, approvalsAtOnce) }

func approvalsAtOnce(t *testing.T, b backend) {
	const cases, approvers = 30, 6
	ctx := t.Context()
	target := b.app(t)
	type answer struct {
		payload string
		err     error
	}
	var mu sync.Mutex
	answers := map[string][]answer{}
	var wg sync.WaitGroup
	for i := range approvers {
		app, err := system.Open(ctx, target, system.Options{Durability: system.ProcessSafe})
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(3, uint64(i)))
			for _, c := range rng.Perm(cases) {
				text := title
				if i == 0 && c%2 == 0 {
					text = "Call about the revised repair plan"
				}
				a, err := system.NewApproval(fmt.Sprint("case-", c), text)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = app.RecordApproval(ctx, a.CaseID, text)
				if err != nil && !errors.Is(err, system.ErrKeyConflict) {
					t.Errorf("approving %s: %v", a.Key, err)
				}
				mu.Lock()
				answers[a.Key] = append(answers[a.Key], answer{a.Payload, err})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	app, err := system.OpenReadOnly(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	snap, err := app.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Approvals) != cases || len(snap.Outbox) != cases {
		t.Fatalf("%d approvals and %d rows for %d cases", len(snap.Approvals), len(snap.Outbox), cases)
	}
	for _, a := range snap.Approvals {
		for _, ans := range answers[a.Key] {
			if kept := ans.payload == a.Payload; kept != (ans.err == nil) {
				t.Errorf("%s keeps %s; an approval with %s was answered %v", a.Key, a.Payload, ans.payload, ans.err)
			}
		}
	}
}

// TestSnapshotIsOneMoment takes snapshots while another handle approves:
// each must show every approval with its outbox row, as they are written
// together, never one without the other.
func TestSnapshotIsOneMoment(t *testing.T) { eachBackend(t, snapshotIsOneMoment) }

func snapshotIsOneMoment(t *testing.T, b backend) {
	ctx := t.Context()
	target := b.app(t)
	writer, err := system.Open(ctx, target, system.Options{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := system.Open(ctx, target, system.Options{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writing := make(chan struct{})
	var snapshots atomic.Int64
	var readerDone atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(writing)
		// At least 300 approvals, and on until the reader has taken five
		// snapshots meanwhile, however slow its first one is, or has
		// stopped: the reads always race the writes.
		for i := 0; i < 300 || snapshots.Load() < 5 && !readerDone.Load(); i++ {
			if _, err := writer.RecordApproval(ctx, fmt.Sprint("case-", i), title); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer readerDone.Store(true)
	for !done(writing) {
		s, err := reader.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snapshots.Add(1)
		if len(s.Approvals) != len(s.Outbox) {
			t.Errorf("a snapshot shows %d approvals and %d outbox rows", len(s.Approvals), len(s.Outbox))
			break
		}
	}
	readerDone.Store(true)
	wg.Wait()
}
