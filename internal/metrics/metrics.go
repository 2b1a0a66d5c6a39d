// Package metrics is what a handoff process tells a monitoring system,
// in Prometheus's text format (the Prometheus Go client): a worker pool's
// counters of what it did, the outbox as its database holds it, read in
// one query at each scrape, and a receiver's count of its answers. Names
// follow Prometheus's conventions: the handoff_ prefix, a unit suffix
// (_seconds), _total for counters, labels for the dimensions.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// Outcomes of an attempt, the values of handoff_delivery_attempts_total's
// outcome label: what the send of a counted attempt came to.
const (
	OutcomeSent      = "sent"      // the receiver's task id is recorded
	OutcomeTransient = "transient" // a failure the receiver may or may not have acted on
	OutcomeConflict  = "conflict"  // the receiver holds the key with other content
	OutcomeRejected  = "rejected"  // the receiver refused the request for good
	OutcomeStale     = "stale"     // the settle lost its fence: nothing was recorded
	OutcomeError     = "error"     // a failure on this side after the attempt was counted
)

// Outcomes lists every outcome, in the order the counters are made.
var Outcomes = []string{OutcomeSent, OutcomeTransient, OutcomeConflict, OutcomeRejected, OutcomeStale, OutcomeError}

// scrapeTimeout bounds the query of one scrape: a database that does not
// answer fails the scrape rather than holding it.
const scrapeTimeout = 5 * time.Second

// Worker holds the metrics of a process that delivers: the counters its
// workers add to, and the outbox read at each scrape. Its methods are
// safe for concurrent use.
type Worker struct {
	registry       *prometheus.Registry
	attempts       *prometheus.CounterVec
	blocked        *prometheus.CounterVec
	sendDuration   prometheus.Histogram
	takeovers      prometheus.Counter
	released       prometheus.Counter
	backoffWaits   prometheus.Counter
	backoffSeconds prometheus.Counter
}

// NewWorker returns the metrics of a process that delivers from the
// outbox of o, which each scrape counts (see system.Outbox.Gauges).
func NewWorker(o *system.Outbox) *Worker {
	m := &Worker{
		registry: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_delivery_attempts_total",
			Help: "Attempts this process counted and sent, by what the send came to: sent, transient, conflict, rejected, stale (the settle lost its fence) or error (a failure on this side).",
		}, []string{"outcome"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_rows_blocked_total",
			Help: "Rows this process blocked, by last error: a person must look at each.",
		}, []string{"last_error"}),
		sendDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "handoff_send_duration_seconds",
			Help:    "How long a send to the receiver took, from request to answer (or failure).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_lease_takeovers_total",
			Help: "Claims that took a row whose lease, held by another worker, had run out: a worker that died or stalled.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_leases_released_total",
			Help: "Leases released when the workers started: held under their own names, or by a worker of this host whose process is gone.",
		}),
		backoffWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_backoff_waits_total",
			Help: "Transient failures after which a row waits before its next attempt.",
		}),
		backoffSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "handoff_backoff_wait_seconds_total",
			Help: "The waits of handoff_backoff_waits_total added up: the jitter drawn, or the receiver's retry hint when longer.",
		}),
	}
	for _, o := range Outcomes {
		m.attempts.WithLabelValues(o)
	}
	for _, e := range system.BlockedErrors {
		m.blocked.WithLabelValues(e)
	}
	m.registry.MustRegister(m.attempts, m.blocked, m.sendDuration, m.takeovers, m.released, m.backoffWaits, m.backoffSeconds,
		outboxCollector{o}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Delivery counts one delivery a worker made (d, err as a Pipeline's Next
// returns them): its attempt's outcome, a row it blocked, a lease it took
// over, a backoff it set. Idle and the errors of a claim count nothing.
func (m *Worker) Delivery(d system.Delivery, err error) {
	var attempt *system.AttemptError
	switch {
	case errors.As(err, &attempt):
		m.attempts.WithLabelValues(OutcomeError).Inc()
		return
	case err != nil || d.Result == system.Idle:
		return
	}
	if d.TookOver != "" {
		m.takeovers.Inc()
	}
	switch d.Result {
	case system.ResultSent:
		m.attempts.WithLabelValues(OutcomeSent).Inc()
	case system.ResultStale:
		m.attempts.WithLabelValues(OutcomeStale).Inc()
	case system.ResultPending:
		m.attempts.WithLabelValues(OutcomeTransient).Inc()
		m.backoffWaits.Inc()
		m.backoffSeconds.Add(d.Backoff.Seconds())
	case system.ResultBlocked:
		m.blocked.WithLabelValues(d.LastError).Inc()
		// A row blocked at its claim (spent budget, time budget,
		// retention) was not sent: no attempt of it came to anything.
		switch d.LastError {
		case system.LastErrorTransient:
			m.attempts.WithLabelValues(OutcomeTransient).Inc()
		case system.LastErrorConflict:
			m.attempts.WithLabelValues(OutcomeConflict).Inc()
		case system.LastErrorRejected:
			m.attempts.WithLabelValues(OutcomeRejected).Inc()
		}
	}
}

// Released counts n leases released when the workers started.
func (m *Worker) Released(n int) { m.released.Add(float64(n)) }

// Timed returns r with every CreateTask's duration observed in
// handoff_send_duration_seconds; it keeps r's retention, if r states one.
func (m *Worker) Timed(r system.Receiver) system.Receiver {
	t := timed{r, m.sendDuration}
	if rt, ok := r.(system.Retainer); ok {
		return timedRetainer{t, rt}
	}
	return t
}

// timed is a receiver whose sends are timed.
type timed struct {
	r system.Receiver
	h prometheus.Histogram
}

func (t timed) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	start := time.Now()
	id, err := t.r.CreateTask(ctx, key, payload)
	t.h.Observe(time.Since(start).Seconds())
	return id, err
}

// timedRetainer is a timed receiver that states a retention.
type timedRetainer struct {
	timed
	rt system.Retainer
}

func (t timedRetainer) Retention() time.Duration { return t.rt.Retention() }

// Handler serves the metrics in Prometheus's text format.
func (m *Worker) Handler(log *slog.Logger) http.Handler { return handler(m.registry, log) }

// handler serves the metrics of registry; a scrape that fails to read
// the database still serves the other metrics, and logs why.
func handler(registry *prometheus.Registry, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             2 * scrapeTimeout,
	})
}

// The metrics the outbox collector reads from the database.
var (
	rowsDesc = prometheus.NewDesc("handoff_outbox_rows",
		"Outbox rows by state, as the database holds them at the scrape.", []string{"state"}, nil)
	blockedDesc = prometheus.NewDesc("handoff_outbox_blocked_rows",
		"Blocked outbox rows by last error: what a person must look at, and why.", []string{"last_error"}, nil)
	oldestDesc = prometheus.NewDesc("handoff_outbox_oldest_pending_age_seconds",
		"Seconds since the oldest pending row (in insertion order, as workers take them) was approved; 0 when none is pending.", nil, nil)
	leasedDesc = prometheus.NewDesc("handoff_outbox_leased_rows",
		"Pending rows a worker holds a live lease on: being sent now.", nil, nil)
)

// outboxCollector reads the outbox at each scrape, in one query.
type outboxCollector struct{ o *system.Outbox }

func (c outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rowsDesc
	ch <- blockedDesc
	ch <- oldestDesc
	ch <- leasedDesc
}

func (c outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	g, err := c.o.Gauges(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(rowsDesc, err)
		return
	}
	for st, n := range map[system.State]int{system.Pending: g.Pending, system.Sent: g.Sent, system.Blocked: g.Blocked} {
		ch <- prometheus.MustNewConstMetric(rowsDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	for _, e := range system.BlockedErrors {
		ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, float64(g.BlockedBy[e]), e)
	}
	age := 0.0
	if !g.OldestPending.IsZero() {
		age = max(0, g.At.Sub(g.OldestPending).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(leasedDesc, prometheus.GaugeValue, float64(g.Leased))
}

// Receiver holds the metrics of a process that serves a receiver (crm
// serve): its answers by result, and how long the creates took.
type Receiver struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewReceiver returns the metrics of server, and has it report every
// answer to them.
func NewReceiver(server *receiver.Server) *Receiver {
	m := &Receiver{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "handoff_receiver_requests_total",
			Help: "Requests the receiver answered, by result: created, replayed, conflict, in_flight (the key's first request still under way), invalid, too_large, unsupported_media_type, busy, failed, read, not_found, method_not_allowed.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "handoff_receiver_create_duration_seconds",
			Help:    "How long the receiver took to answer a POST /tasks, from the request's headers to the answer.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	for _, r := range receiver.Results {
		m.requests.WithLabelValues(string(r))
	}
	m.registry.MustRegister(m.requests, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	server.Observe(func(r receiver.Result, create bool, took time.Duration) {
		m.requests.WithLabelValues(string(r)).Inc()
		if create {
			m.duration.Observe(took.Seconds())
		}
	})
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Receiver) Handler(log *slog.Logger) http.Handler { return handler(m.registry, log) }
