package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// Verify runs in a test of your module. A design says how to open your
// outbox (its app database) and its receiver at a path, and which
// capabilities beyond one worker without a clock it has; here the real
// handoff stands in for yours.
func ExampleVerify() {
	design := designs.Design{
		Name:     "my-outbox",
		Summary:  "approval and outbox row in one transaction; attempt counted before the send",
		Supports: designs.Everything,
		OpenApp: func(ctx context.Context, path string, opts system.Options) (designs.App, error) {
			return system.Open(ctx, path, opts) // your outbox here
		},
		OpenCRM: func(ctx context.Context, path string, opts system.CRMOptions) (designs.CRM, error) {
			return system.OpenCRMWith(ctx, path, opts)
		},
	}
	// In a file such as outbox_test.go of your module:
	testVerify := func(t *testing.T) {
		handoff.Verify(t, design, handoff.VerifyOptions{
			Corpus:    "testdata/handoff", // your scenarios; HANDOFF_SAVE=1 saves failures here
			Builtin:   true,               // the module's corpus, what your design supports of it
			Enumerate: true,               // every scenario crashed at every fault point
		})
	}
	_ = testVerify
}

// Explore searches outside go test and returns what it found. Here it
// catches a fragile design of the catalog, whose worker counts an attempt
// only when it records the answer: a worker that dies after the reply has
// sent without counting.
func ExampleExplore() {
	d, err := designs.Lookup("count-after-send")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := handoff.Explore(context.Background(), handoff.ExploreConfig{Design: d, Checks: 200, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := r.Failure
	fmt.Printf("invariant %d (%s) in %d steps\n", f.Violation.Invariant, f.Violation.Name, f.Steps)
	// Output: invariant 4 (attempts stay within the budget and cover every send) in 2 steps
}

// Replay runs one scenario file and says where its outputs differ from
// the file's and which invariant broke.
func ExampleReplay() {
	r, err := handoff.Replay(context.Background(), filepath.Join("corpus", "lost-reply-demo.txt"), handoff.ReplayOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d mismatches, violation: %v\n", len(r.Mismatches), r.Violation)
	// Output: 0 mismatches, violation: <nil>
}

// Mismatch.Diff shows only the lines of a step's output that differ from
// the scenario file's.
func ExampleMismatch_Diff() {
	m := handoff.Mismatch{Line: 7, Step: "deliver fault=lost-reply",
		Want: "sent harbor:create-followup:v1:case-1: task 1\noutbox harbor:create-followup:v1:case-1 sent attempts=1 remote=1\ncrm task 1 harbor:create-followup:v1:case-1",
		Got:  "pending harbor:create-followup:v1:case-1: transient failure, the retry sends the same key\noutbox harbor:create-followup:v1:case-1 pending attempts=1 last-error=transient\ncrm task 1 harbor:create-followup:v1:case-1"}
	fmt.Print(m.Diff())
	// Output:
	// -sent harbor:create-followup:v1:case-1: task 1
	// -outbox harbor:create-followup:v1:case-1 sent attempts=1 remote=1
	// +pending harbor:create-followup:v1:case-1: transient failure, the retry sends the same key
	// +outbox harbor:create-followup:v1:case-1 pending attempts=1 last-error=transient
	//  crm task 1 harbor:create-followup:v1:case-1
}

// Failure.Save keeps a counterexample as a scenario file that Replay, and
// Verify's Corpus, replay.
func ExampleFailure_Save() {
	d, _ := designs.Lookup("two-writes")
	r, err := handoff.Explore(context.Background(), handoff.ExploreConfig{Design: d, Checks: 100, Seed: 1})
	if err != nil || r.Failure == nil {
		fmt.Println("not caught", err)
		return
	}
	dir, _ := os.MkdirTemp("", "corpus-")
	defer os.RemoveAll(dir)
	path, err := r.Failure.Save(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	again, err := handoff.Replay(context.Background(), path, handoff.ReplayOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s breaks invariant %d at line %d\n", filepath.Base(path), again.Violation.Invariant, again.Line)
	// Output: found-two-writes-invariant-2.txt breaks invariant 2 at line 10
}

// VerifyRunning runs your outbox as it is deployed, its own workers on a
// virtual clock, and judges its history. A running design boots your app
// as a process does: it opens the database through the connections the
// harness gives (so that a crash cuts them all), starts the workers with
// their production settings, sending through the harness's receiver, and
// returns how to approve, read and stop. Here the handoff's own pool
// stands in for your library's client.
func ExampleVerifyRunning() {
	design := designs.Running{
		Name:    "my-queue",
		Summary: "two workers of my queue's client, production settings",
		Budget:  system.PoolMaxAttempts, // the most sends for one key
		Settle:  2 * time.Hour,          // how long to finish every key once faults heal
		Boot: func(ctx context.Context, p designs.Process) (designs.Booted, error) {
			opts := system.Options{MaxAttempts: system.PoolMaxAttempts, Dial: p.Dial, Worker: "app", Harness: system.Harness{WrapSQLite: p.WrapSQLite}}
			app, err := system.Open(ctx, p.Database(), opts) // your client, opened on p's connections
			if err != nil {
				return nil, err
			}
			pool := &system.Pool{Receiver: p.Receiver()}
			for _, name := range []string{"w1", "w2"} {
				// One name per worker and replica: a worker that boots
				// releases the leases held under its own name.
				opts.Worker = fmt.Sprintf("%s@replica-%d", name, p.Replica())
				o, err := system.Open(ctx, p.Database(), opts)
				if err != nil {
					return nil, err
				}
				pool.Outboxes = append(pool.Outboxes, o)
			}
			run, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- pool.Run(run) }() // your client's Start
			return &myQueue{app: app, pool: pool, stop: stop, done: done}, nil
		},
	}
	// In a file such as queue_test.go of your module:
	testVerifyRunning := func(t *testing.T) {
		handoff.VerifyRunning(t, design, handoff.RunningOptions{
			Corpus: "testdata/running", // saved schedules; HANDOFF_SAVE=1 saves a failure's here
		})
	}
	_ = testVerifyRunning
}

// myQueue is one boot of the example's app.
type myQueue struct {
	app  *system.Outbox
	pool *system.Pool
	stop context.CancelFunc
	done chan error
}

// Approve records an approval in the app's transaction, and says the
// key and payload it derives.
func (q *myQueue) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	_, err = q.app.RecordApproval(ctx, caseID, title)
	return a.Key, a.Payload, err
}

// Read says where every key stands.
func (q *myQueue) Read(ctx context.Context) (map[string]designs.RunningRow, error) {
	snap, err := q.app.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	rows := map[string]designs.RunningRow{}
	for _, r := range snap.Outbox {
		rows[r.Key] = designs.RunningRow{State: designs.RowState(r.State), TaskID: r.RemoteID, Attempts: r.Attempts, Reason: r.LastError}
	}
	return rows, nil
}

// Stop ends the workers and closes what the boot opened.
func (q *myQueue) Stop() error {
	q.stop()
	err := <-q.done
	for _, o := range q.pool.Outboxes {
		o.Close()
	}
	return errors.Join(err, q.app.Close())
}
