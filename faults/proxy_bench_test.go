package faults_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// benchBatch is how many iterations share one pair of files, whose rows
// are approved before the clock runs on them again.
const benchBatch = 50

// BenchmarkProxyOverhead measures what the Proxy adds at zero faults:
// each iteration makes one delivery straight to crm.Server and one
// through a Proxy that forwards everything, in turn, on the same files,
// and it reports both times per delivery and the proxy's overhead in
// percent. Alternating keeps this machine's drift out of the comparison;
// every benchBatch iterations start on fresh files. Both databases commit
// durably (the default), or without syncing as the simulation does
// (system.ProcessSafe), where the network's share of a delivery is as
// large as it gets.
func BenchmarkProxyOverhead(b *testing.B) {
	for _, d := range []struct {
		name       string
		durability system.Durability
	}{{"durable", system.Durable}, {"process-safe", system.ProcessSafe}} {
		b.Run(d.name, func(b *testing.B) { benchmarkProxyOverhead(b, d.durability) })
	}
}

func benchmarkProxyOverhead(b *testing.B, durability system.Durability) {
	ctx := b.Context()
	var took [2]time.Duration // straight to the server, through the proxy
	var senders [2]system.Receiver
	var app *system.Outbox
	for i := range b.N {
		if i%benchBatch == 0 {
			b.StopTimer()
			w := newWireWith(b, durability)
			o, err := system.Open(ctx, filepath.Join(b.TempDir(), "app.db"), system.Options{Durability: durability, NoBackoff: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { o.Close() })
			app = o
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}} // as the wire's sender
			b.Cleanup(client.CloseIdleConnections)
			direct, err := crm.NewSender(w.server.URL, client)
			if err != nil {
				b.Fatal(err)
			}
			senders = [2]system.Receiver{direct, w.sender}
			for j := range 2 * benchBatch {
				if _, err := app.RecordApproval(ctx, fmt.Sprint("case-", j), "Call back"); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		for j := range 2 {
			k := (i + j) % 2 // which goes first alternates too
			start := time.Now()
			d, err := app.DeliverOne(ctx, senders[k])
			took[k] += time.Since(start)
			if err != nil || d.Result != system.ResultSent {
				b.Fatalf("delivery %d: %+v, %v", 2*i+j, d, err)
			}
		}
	}
	perDelivery := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perDelivery(took[0]), "direct-µs/delivery")
	b.ReportMetric(perDelivery(took[1]), "proxy-µs/delivery")
	b.ReportMetric(100*(float64(took[1])/float64(took[0])-1), "proxy-overhead-%")
}
