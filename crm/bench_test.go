package crm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// timed wraps a handler and adds the time it spends on each request to
// spent: the server's own share of a delivery.
func timed(h http.Handler, spent *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		spent.Add(int64(time.Since(start)))
	})
}

// BenchmarkWorkersHTTP delivers b.N approvals with W workers (one Outbox
// each on one durable app file, as handoff work runs them) through
// crm.Sender to crm.Server serving a durable CRM file on loopback. It
// reports deliveries/s and the server's share: the time its handler spent
// over the time the workers spent sending, so the rest is the client, the
// loopback and waiting for a connection.
//
//	go test ./crm -run XXX -bench WorkersHTTP -benchtime 2000x
func BenchmarkWorkersHTTP(b *testing.B) {
	for _, w := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			ctx := b.Context()
			dir := b.TempDir()
			c, err := system.OpenCRM(ctx, filepath.Join(dir, "crm.db"), system.Durable)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			srv, err := crm.NewServer(c, 0)
			if err != nil {
				b.Fatal(err)
			}
			var serverTime, sendTime atomic.Int64
			ts := httptest.NewServer(timed(srv, &serverTime))
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: w}}
			s, err := crm.NewSender(ts.URL, client)
			if err != nil {
				b.Fatal(err)
			}
			timedSend := sendFunc(func(ctx context.Context, key, payload string) (int64, error) {
				start := time.Now()
				defer func() { sendTime.Add(int64(time.Since(start))) }()
				return s.CreateTask(ctx, key, payload)
			})
			apps := make([]*system.Outbox, w)
			for i := range apps {
				if apps[i], err = system.Open(ctx, filepath.Join(dir, "app.db"), system.Options{Worker: fmt.Sprint("w", i), Durability: system.Durable}); err != nil {
					b.Fatal(err)
				}
				defer apps[i].Close()
			}
			for i := range b.N {
				if _, err := apps[0].RecordApproval(ctx, fmt.Sprint("case-", i), "Call back"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var sent atomic.Int64
			var wg sync.WaitGroup
			for _, app := range apps {
				wg.Go(func() {
					for {
						d, err := app.DeliverOne(ctx, timedSend)
						if err != nil {
							b.Error(err)
							return
						}
						if d.Result == system.Idle {
							return
						}
						if d.Result == system.ResultSent {
							sent.Add(1)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if got := sent.Load(); got != int64(b.N) {
				b.Fatalf("%d sent, want %d", got, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
			b.ReportMetric(100*float64(serverTime.Load())/float64(sendTime.Load()), "server-%")
		})
	}
}

// sendFunc is a system.Receiver made of a function.
type sendFunc func(ctx context.Context, key, payload string) (int64, error)

func (f sendFunc) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return f(ctx, key, payload)
}
