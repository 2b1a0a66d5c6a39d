package designs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// poolWorkers is how many workers a boot of Pool runs: handoff work's
// default. On PostgreSQL a boot holds up to two connections for each,
// and two for the app's approvals and reads.
const poolWorkers = system.DefaultPoolWorkers

// poolOptions are the options of handoff work's workers, by default.
func poolOptions() system.Options {
	opts, err := system.Options{MaxAttempts: system.PoolMaxAttempts}.WithDefaults()
	if err != nil {
		panic(err) // the defaults are valid
	}
	return opts
}

// poolSettle is how long Pool takes to finish every key once faults
// heal: a row's whole retry bound, and a lease that a crash left.
func poolSettle() time.Duration {
	opts := poolOptions()
	_, total := opts.RetryBound()
	return total + opts.Lease
}

// Pool is the handoff's own worker pool as handoff work runs it:
// system.Pool's pipelined workers, each with a stable name, with work's
// defaults (four workers, 20 attempts, backoff from 1 s to 5 min with
// full jitter, a 30 s lease, a 10 s send timeout), on either backend.
var Pool = Running{
	Name:    "pool",
	Summary: fmt.Sprintf("handoff work: %d pipelined workers of system.Pool with work's defaults", poolWorkers),
	Budget:  system.PoolMaxAttempts,
	Lease:   poolOptions().Lease,
	Settle:  poolSettle(),
	Boot:    bootPool(false),
}

// PoolHTTP is Pool sending over HTTP: each worker delivers through the
// handoff's own HTTP sender (crm.Sender), whose requests reach the
// harness's receiver with the spec's HTTP semantics (Idempotency-Key,
// the status classes, Retry-After), the drawn faults acting on each
// exchange.
var PoolHTTP = func() Running {
	r := Pool
	r.Name = "pool-http"
	r.Summary = fmt.Sprintf("handoff work --crm-url: %d pipelined workers of system.Pool sending through crm.Sender over HTTP", poolWorkers)
	r.Boot = bootPool(true)
	return r
}()

// bootPool opens the app database as handoff work does, a handle for
// each worker and one for the app's approvals, and starts the workers,
// sending in memory or, with overHTTP, through crm.Sender.
func bootPool(overHTTP bool) func(ctx context.Context, p Process) (Booted, error) {
	return func(ctx context.Context, p Process) (Booted, error) { return bootPoolOver(ctx, p, overHTTP) }
}

func bootPoolOver(ctx context.Context, p Process, overHTTP bool) (Booted, error) {
	opts := poolOptions()
	opts.Durability = system.ProcessSafe // a crash here is a process's: the OS keeps what was written
	opts.Harness.WrapSQLite, opts.Dial, opts.MaxConns = p.WrapSQLite, p.Dial, 2
	b := &poolBoot{}
	open := func(worker string) (*system.Outbox, error) {
		o := opts
		o.Worker = worker
		return system.Open(ctx, p.Database(), o)
	}
	// The app's handle first, which creates the tables on a first boot;
	// then the workers' at once: on PostgreSQL each connects to the
	// server, and a boot waits for the slowest, not for their sum.
	app, err := open("app")
	if err != nil {
		return nil, err
	}
	handles := make([]*system.Outbox, 1+poolWorkers)
	handles[0] = app
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i := range poolWorkers {
		wg.Go(func() { handles[i+1], errs[i+1] = open(workerName(p, "pool", i+1)) })
	}
	wg.Wait()
	for _, o := range handles {
		if o != nil {
			b.closers = append(b.closers, o)
		}
	}
	for _, err := range errs {
		if err != nil {
			b.close()
			return nil, err // the first, as a boot that opened them in turn would say
		}
	}
	b.app = app
	b.pool = &system.Pool{ReceiverFor: p.ReceiverFor, Outboxes: handles[1:]}
	if overHTTP {
		b.pool.ReceiverFor = func(worker string) system.Receiver {
			s, err := crm.NewSender(p.ReceiverURL(), p.HTTPClient(worker))
			if err != nil {
				panic(err) // the harness's URL is valid
			}
			return s
		}
	}
	run, cancel := context.WithCancel(ctx)
	b.cancel, b.done = cancel, make(chan error, 1)
	go func() { b.done <- b.pool.Run(run) }()
	return b, nil
}

// poolBoot is one boot of Pool.
type poolBoot struct {
	app     *system.Outbox
	pool    *system.Pool
	closers []*system.Outbox
	run     context.Context // the workers' context
	cancel  context.CancelFunc
	done    chan error

	// enqueueLater is running-enqueue-later's mistake: Approve says
	// committed and a goroutine records the approval a second later.
	enqueueLater bool
	later        sync.WaitGroup
	// contentKey is running-content-key's mistake: the approval is
	// recorded under a case named by a digest of its title.
	contentKey bool
}

func (b *poolBoot) Approve(ctx context.Context, caseID, title string) (string, string, error) {
	if b.contentKey {
		caseID = fmt.Sprintf("content-%08x", crc32.ChecksumIEEE([]byte(title)))
	}
	a, err := system.NewApproval(caseID, title)
	if err != nil {
		return "", "", err
	}
	if b.enqueueLater {
		b.later.Go(func() {
			sleepCtx(b.run, time.Second)
			if b.run.Err() == nil {
				b.app.RecordApproval(b.run, caseID, title)
			}
		})
		return a.Key, a.Payload, nil
	}
	_, err = b.app.RecordApproval(ctx, caseID, title)
	return a.Key, a.Payload, err
}

func (b *poolBoot) Read(ctx context.Context) (map[string]RunningRow, error) {
	snap, err := b.app.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return outboxRows(snap), nil
}

// outboxRows is a snapshot of package system's outbox as Read shows it.
func outboxRows(snap system.Snapshot) map[string]RunningRow {
	rows := make(map[string]RunningRow, len(snap.Outbox))
	for _, r := range snap.Outbox {
		rows[r.Key] = RunningRow{State: RowState(r.State), TaskID: r.RemoteID, Attempts: r.Attempts, Reason: r.LastError}
	}
	return rows
}

func (b *poolBoot) Stop() error {
	b.cancel()
	err := <-b.done
	b.later.Wait()
	return errors.Join(err, b.close())
}

func (b *poolBoot) close() error {
	var errs []error
	for _, o := range b.closers {
		errs = append(errs, o.Close())
	}
	return errors.Join(errs...)
}

// workerName names the ith worker of kind in p's boot: "pool:2", or in
// replica 3 "pool:3.2". Names stay the same across a replica's boots (a
// boot releases the leases its last boot held) and differ between
// replicas (a boot must not release another live process's).
func workerName(p Process, kind string, i int) string {
	if p.Replica() > 1 {
		return fmt.Sprintf("%s:%d.%d", kind, p.Replica(), i)
	}
	return fmt.Sprintf("%s:%d", kind, i)
}
