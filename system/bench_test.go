package system_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// BenchmarkDeliverOne measures deliveries per second against the local
// durable receiver. A delivery commits three times (the claim, the task,
// the record) and each commit syncs once: compare with BenchmarkFsync run
// in the same go test invocation.
func BenchmarkDeliverOne(b *testing.B) {
	for _, d := range []struct {
		name       string
		durability system.Durability
	}{{"durable", system.Durable}, {"process-safe", system.ProcessSafe}} {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{Durability: d.durability})
			if err != nil {
				b.Fatal(err)
			}
			defer app.Close()
			crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), d.durability)
			if err != nil {
				b.Fatal(err)
			}
			defer crm.Close()
			for i := range b.N {
				if _, err := app.RecordApproval(ctx, fmt.Sprint("case-", i), "Call back"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result != system.ResultSent {
					b.Fatalf("got %+v, %v; want sent", d, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkFsync measures this machine's rate of small write+fsync pairs
// in the folder the other benchmarks use: the limit durable commits meet.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(buf, int64(i%16)*4096); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
}

// BenchmarkDurableShare interleaves one durable delivery with the three
// bare write+fsync pairs its three commits need, in the same folder, and
// reports which share of the fsync limit the deliveries reach: the time of
// three bare syncs over the time of one delivery. Interleaving keeps the
// comparison fair on a machine whose disk speed drifts.
func BenchmarkDurableShare(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	app, err := system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	crm, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
	if err != nil {
		b.Fatal(err)
	}
	defer crm.Close()
	f, err := os.Create(filepath.Join(dir, "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range b.N {
		if _, err := app.RecordApproval(ctx, fmt.Sprint("case-", i), "Call back"); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	var delivering, syncing time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if d, err := app.DeliverOne(ctx, crm); err != nil || d.Result != system.ResultSent {
			b.Fatalf("got %+v, %v; want sent", d, err)
		}
		delivering += time.Since(start)
		start = time.Now()
		for j := range 3 {
			if _, err := f.WriteAt(buf, int64((3*i+j)%16)*4096); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		syncing += time.Since(start)
	}
	b.ReportMetric(float64(b.N)/delivering.Seconds(), "deliveries/s")
	b.ReportMetric(float64(3*b.N)/syncing.Seconds(), "fsyncs/s")
	b.ReportMetric(100*syncing.Seconds()/delivering.Seconds(), "%-of-fsync-limit")
}
