package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// approvedPair opens an app and a CRM database with d and approves n cases,
// ready for n deliveries.
func approvedPair(b *testing.B, d system.Durability, n int) (*system.Outbox, *system.CRM) {
	b.Helper()
	app, crm, _ := openPair(b, sqliteBackend, system.Options{Durability: d})
	for i := range n {
		if _, err := app.RecordApproval(b.Context(), fmt.Sprint("case-", i), "Call back"); err != nil {
			b.Fatal(err)
		}
	}
	return app, crm
}

// deliver makes one delivery and fails the benchmark unless it is sent.
func deliver(b *testing.B, app *system.Outbox, crm *system.CRM) {
	if d, err := app.DeliverOne(b.Context(), crm); err != nil || d.Result != system.ResultSent {
		b.Fatalf("got %+v, %v; want sent", d, err)
	}
}

// syncer makes small write+fsync pairs in one file, as a commit does.
type syncer struct {
	f   *os.File
	buf []byte
	n   int
}

func newSyncer(b *testing.B) *syncer {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return &syncer{f: f, buf: make([]byte, 4096)}
}

// sync writes one page, among 16, and syncs the file.
func (s *syncer) sync(b *testing.B) {
	if _, err := s.f.WriteAt(s.buf, int64(s.n%16)*4096); err != nil {
		b.Fatal(err)
	}
	if err := s.f.Sync(); err != nil {
		b.Fatal(err)
	}
	s.n++
}

// BenchmarkDeliverOne measures deliveries per second against the local
// durable receiver. A delivery commits three times (the claim, the task,
// the record) and each commit syncs once: compare with BenchmarkFsync run
// in the same go test invocation, or use BenchmarkDurableShare.
func BenchmarkDeliverOne(b *testing.B) {
	for _, d := range []struct {
		name       string
		durability system.Durability
	}{{"durable", system.Durable}, {"process-safe", system.ProcessSafe}} {
		b.Run(d.name, func(b *testing.B) {
			app, crm := approvedPair(b, d.durability, b.N)
			b.ResetTimer()
			for range b.N {
				deliver(b, app, crm)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkFsync measures this machine's rate of small write+fsync pairs:
// the limit durable commits meet.
func BenchmarkFsync(b *testing.B) {
	s := newSyncer(b)
	for b.Loop() {
		s.sync(b)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
}

// BenchmarkDurableShare interleaves one durable delivery with the three
// bare write+fsync pairs its three commits need, and reports which share of
// the fsync limit the deliveries reach: the time of three bare syncs over
// the time of one delivery. Interleaving keeps the comparison fair on a
// machine whose disk speed drifts.
func BenchmarkDurableShare(b *testing.B) {
	app, crm := approvedPair(b, system.Durable, b.N)
	s := newSyncer(b)
	var delivering, syncing time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		deliver(b, app, crm)
		delivering += time.Since(start)
		start = time.Now()
		for range 3 {
			s.sync(b)
		}
		syncing += time.Since(start)
	}
	b.ReportMetric(float64(b.N)/delivering.Seconds(), "deliveries/s")
	b.ReportMetric(float64(3*b.N)/syncing.Seconds(), "fsyncs/s")
	b.ReportMetric(100*syncing.Seconds()/delivering.Seconds(), "%-of-fsync-limit")
}

// durableWorkers opens, in a new folder, a durable CRM and w Outboxes
// (workers w0, w1, …) on one durable app database on bk holding rows
// approvals, recorded in one transaction: the files of handoff work
// --workers w. On PostgreSQL each Outbox has a pool of its own, as a
// worker process has.
func durableWorkers(b *testing.B, bk backend, w, rows int) ([]*system.Outbox, *system.CRM) {
	b.Helper()
	ctx := b.Context()
	dir := b.TempDir()
	target := bk.app(b)
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { crm.Close() })
	apps := make([]*system.Outbox, w)
	for i := range apps {
		if apps[i], err = system.Open(ctx, target, system.Options{Worker: fmt.Sprint("w", i)}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { apps[i].Close() })
	}
	// A thousand approvals a transaction: on PostgreSQL each holds a lock
	// until the commit, and a server has room for some thousands.
	for first := 0; first < rows; first += 1000 {
		if err := approveRange(ctx, apps[0], first, min(first+1000, rows)); err != nil {
			b.Fatal(err)
		}
	}
	return apps, crm
}

// approveRange records the approvals case-first … case-(end-1) in one
// transaction.
func approveRange(ctx context.Context, app *system.Outbox, first, end int) error {
	tx, err := app.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := first; i < end; i++ {
		if _, err := app.RecordApprovalTx(ctx, tx, fmt.Sprint("case-", i), "Call back"); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkDurableShareWorkers is BenchmarkDurableShare for W workers
// delivering at once, each its own Outbox on the same durable app
// database and its own Pipeline, all sending to one durable CRM, as
// handoff work --workers W runs them. Each round every worker makes
// deliveriesPerRound deliveries (and records the last answer), then the
// benchmark makes syncsPerRound bare write+fsync pairs; it reports
// deliveries per bare fsync (deliveries/s over fsyncs/s, both timed in the
// same rounds, a ratio that survives the disk's drift) and how many
// writes each commit carried on each database; on SQLite also the
// processor time of a delivery, and the most deliveries per bare fsync
// the processors allow at that cost. On PostgreSQL the app
// database's commits are the server's, synced on its own disk: the bare
// fsyncs are this machine's, beside them, and the writes per commit are
// the CRM's only.
func BenchmarkDurableShareWorkers(b *testing.B) {
	const deliveriesPerRound, syncsPerRound = 8, 8
	for _, bk := range []backend{sqliteBackend, postgresBackend} {
		for _, w := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/workers=%d", bk.name, w), func(b *testing.B) { durableShareWorkers(b, bk, w, deliveriesPerRound, syncsPerRound) })
		}
	}
}

// durableShareWorkers is BenchmarkDurableShareWorkers for w workers on bk.
func durableShareWorkers(b *testing.B, bk backend, w, deliveriesPerRound, syncsPerRound int) {
	ctx := b.Context()
	// A Pipeline claims one row ahead: w rows more, so that none of the
	// last round finds the rows it needs claimed by another.
	apps, crm := durableWorkers(b, bk, w, b.N*w*deliveriesPerRound+w)
	pipelines := make([]*system.Pipeline, w)
	for i, app := range apps {
		var err error
		if pipelines[i], err = app.Pipeline(crm); err != nil {
			b.Fatal(err)
		}
	}
	s := newSyncer(b)
	appBefore, crmBefore := apps[0].CommitStats(), crm.CommitStats()
	var delivering, syncing, processor time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		used, _ := processorTime()
		var wg sync.WaitGroup
		for _, p := range pipelines {
			wg.Go(func() {
				for range deliveriesPerRound - 1 {
					if d, err := p.Next(ctx); err != nil || d.Result != system.ResultSent {
						b.Errorf("got %+v, %v; want sent", d, err)
						return
					}
				}
				if d, flushed, err := p.Flush(ctx); err != nil || !flushed || d.Result != system.ResultSent {
					b.Errorf("flushed %v: %+v, %v; want sent", flushed, d, err)
				}
			})
		}
		wg.Wait()
		delivering += time.Since(start)
		now, _ := processorTime()
		processor += now - used
		start = time.Now()
		for range syncsPerRound {
			s.sync(b)
		}
		syncing += time.Since(start)
	}
	deliveries := float64(b.N*w*deliveriesPerRound) / delivering.Seconds()
	fsyncs := float64(b.N*syncsPerRound) / syncing.Seconds()
	b.ReportMetric(deliveries, "deliveries/s")
	b.ReportMetric(fsyncs, "fsyncs/s")
	b.ReportMetric(deliveries/fsyncs, "deliveries/fsync")
	if _, ok := processorTime(); ok && bk.name == sqliteBackend.name {
		// The app and the receiver both run in this process on SQLite, so
		// its processor time is all a delivery costs here: the
		// processors allow at most GOMAXPROCS over that many deliveries
		// a second, whatever the syncs share.
		perDelivery := processor.Seconds() / float64(b.N*w*deliveriesPerRound)
		b.ReportMetric(1000*perDelivery, "cpu-ms/delivery")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0))/perDelivery/fsyncs, "cpu-bound-deliveries/fsync")
	}
	appAfter, crmAfter := apps[0].CommitStats(), crm.CommitStats()
	if bk.name == sqliteBackend.name {
		b.ReportMetric(float64(appAfter.Writes-appBefore.Writes)/float64(appAfter.Commits-appBefore.Commits), "app-writes/commit")
	}
	b.ReportMetric(float64(crmAfter.Writes-crmBefore.Writes)/float64(crmAfter.Commits-crmBefore.Commits), "crm-writes/commit")
}

// BenchmarkApprove measures what the approve command does, recording an
// approval and reading its row back, in an outbox that already holds 1,000
// or 100,000 rows: the cost must not grow with the rows.
func BenchmarkApprove(b *testing.B) {
	for _, rows := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint("rows=", rows), func(b *testing.B) {
			ctx := b.Context()
			app, _, _ := openPair(b, sqliteBackend, system.Options{Durability: system.ProcessSafe})
			tx, err := app.DB().BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range rows {
				if _, err := app.RecordApprovalTx(ctx, tx, fmt.Sprint("old-", i), "Call back"); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				key, err := app.RecordApproval(ctx, fmt.Sprint("case-", i), "Call back")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := app.Row(ctx, key); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// slowReceiver answers every request a fixed delay after it came, as a
// remote CRM does, from the durable receiver behind it: the delay
// includes the receiver's own commit.
type slowReceiver struct {
	crm   *system.CRM
	delay time.Duration
}

func (s slowReceiver) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	start := time.Now()
	id, err := s.crm.CreateTask(ctx, key, payload)
	time.Sleep(s.delay - time.Since(start))
	return id, err
}

// BenchmarkWorkersSlowReceiver runs W workers, each its own Outbox on the
// same durable app database (a SQLite file, or PostgreSQL), against a
// receiver that answers after 20 ms, and reports deliveries/s and their
// share of the W/20 ms that W sends at a time allow: where it stops
// scaling, the databases' commits are the limit (three per delivery:
// claim, task, settle).
func BenchmarkWorkersSlowReceiver(b *testing.B) {
	const delay = 20 * time.Millisecond
	for _, bk := range []backend{sqliteBackend, postgresBackend} {
		for _, w := range []int{1, 2, 4, 8, 16, 32} {
			b.Run(fmt.Sprintf("%s/workers=%d", bk.name, w), func(b *testing.B) {
				perSecond := deliverAll(b, bk, w, func(crm *system.CRM) system.Receiver { return slowReceiver{crm, delay} })
				b.ReportMetric(100*perSecond/(float64(w)/delay.Seconds()), "%-of-W/20ms")
			})
		}
	}
}

// BenchmarkBackends runs 8 workers on a SQLite file and on PostgreSQL,
// side by side, against the durable CRM with nothing in between: how many
// deliveries a second each app database carries.
func BenchmarkBackends(b *testing.B) {
	for _, bk := range []backend{sqliteBackend, postgresBackend} {
		b.Run(bk.name+"/workers=8", func(b *testing.B) {
			deliverAll(b, bk, 8, func(crm *system.CRM) system.Receiver { return crm })
		})
	}
}

// deliverAll has w workers, each through a Pipeline as handoff work
// runs them, deliver b.N·w rows on bk to the receiver that receiver puts
// in front of the durable CRM, until none is pending, and reports and
// returns the deliveries per second.
func deliverAll(b *testing.B, bk backend, w int, receiver func(*system.CRM) system.Receiver) float64 {
	ctx := b.Context()
	rows := b.N * w
	apps, crm := durableWorkers(b, bk, w, rows)
	r := receiver(crm)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, app := range apps {
		wg.Go(func() {
			if _, err := deliverUntilIdle(ctx, app, r); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	perSecond := float64(rows) / time.Since(start).Seconds()
	b.ReportMetric(perSecond, "deliveries/s")
	return perSecond
}

// deliverUntilIdle delivers through a Pipeline of app to r until nothing
// is eligible, as a worker of handoff work does, and returns how many
// deliveries it made.
func deliverUntilIdle(ctx context.Context, app *system.Outbox, r system.Receiver) (int, error) {
	p, err := app.Pipeline(r)
	if err != nil {
		return 0, err
	}
	for n := 0; ; n++ {
		d, err := p.Next(ctx)
		if err != nil || d.Result == system.Idle {
			return n, err
		}
	}
}
