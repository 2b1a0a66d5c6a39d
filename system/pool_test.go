package system_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/outboxlab/handoff/system"
)

// TestIdleWait: an idle worker sleeps until the next row is eligible,
// within bounds: never a busy poll, never so long that it misses new work.
func TestIdleWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		next time.Time
		want time.Duration
	}{
		{time.Time{}, system.MaxIdleWait},
		{now.Add(200 * time.Millisecond), 200 * time.Millisecond},
		{now.Add(time.Hour), system.MaxIdleWait},
		{now, system.MinIdleWait},
		{now.Add(-time.Second), system.MinIdleWait},
	} {
		if got := system.IdleWait(tt.next, now); got != tt.want {
			t.Errorf("IdleWait(%v): got %v, want %v", tt.next, got, tt.want)
		}
	}
}

// outageReceiver is a receiver that refuses every request, before it
// acts, until up, then creates a task per key; it counts the requests on
// each side of up, and when the last task was made.
type outageReceiver struct {
	mu           sync.Mutex
	up           time.Time
	before, late int
	tasks        map[string]int64
	lastTask     time.Time
}

func (r *outageReceiver) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.up) {
		r.before++
		return 0, fmt.Errorf("%w: connection refused", system.ErrTransient)
	}
	r.late++
	if id, ok := r.tasks[key]; ok {
		return id, nil
	}
	r.tasks[key] = int64(len(r.tasks) + 1)
	r.lastTask = time.Now()
	return r.tasks[key], nil
}

// TestRecoveryFollowsTheReceiver: the receiver goes down for a minute
// while 100 rows are approved, one every half second, and four workers
// with work's defaults retry them. Once it answers again, every row is
// delivered within 15 s: without hastening, a row approved 20 s into the
// outage would wait out a backoff of 32 s, 23.5 s past the return. The
// outage costs exactly the requests the backoff alone sends. The pool's
// log has one WARN when the receiver stops answering and one INFO when
// it is back, not a line per failed attempt. On a virtual clock, each
// jitter at half its ceiling, so that every count is exact.
func TestRecoveryFollowsTheReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rows, every, outage = 100, 500 * time.Millisecond, time.Minute
		path := filepath.Join(t.TempDir(), "app.db")
		half := func(c time.Duration) time.Duration { return c / 2 }
		opts := system.Options{MaxAttempts: system.PoolMaxAttempts, Harness: system.Harness{Jitter: half}}
		app, err := system.Open(t.Context(), path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		start := time.Now()
		r := &outageReceiver{up: start.Add(outage), tasks: map[string]int64{}}
		var log strings.Builder
		p := &system.Pool{Receiver: r, UntilIdle: true, Log: slog.New(slog.NewTextHandler(&log, nil))}
		for i := range system.DefaultPoolWorkers {
			o := opts
			o.Worker = fmt.Sprintf("w:%d", i+1)
			w, err := system.Open(t.Context(), path, o)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			p.Outboxes = append(p.Outboxes, w)
		}
		approve := func(i int) {
			if _, err := app.RecordApproval(t.Context(), fmt.Sprintf("case-%d", i), "Call back"); err != nil {
				t.Error(err)
			}
		}
		approve(0)
		ran := make(chan error, 1)
		go func() { ran <- p.Run(t.Context()) }()
		for i := 1; i < rows; i++ {
			time.Sleep(every)
			approve(i)
		}
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if len(r.tasks) != rows {
			t.Fatalf("%d tasks, want %d", len(r.tasks), rows)
		}
		if late := r.lastTask.Sub(r.up); late > 15*time.Second {
			t.Errorf("the last row was delivered %v after the receiver came back, want within 15s", late)
		}
		// The backoff alone: each row's attempts within the outage, from
		// its approval, each half its ceiling after the one before.
		want := 0
		for i := range rows {
			at := time.Duration(i) * every
			for n := 1; at < outage; n++ {
				want++
				at += system.BackoffCeiling(system.DefaultBackoffBase, system.DefaultBackoffCap, n) / 2
			}
		}
		if r.before != want {
			t.Errorf("the outage cost %d requests, the backoff alone sends %d", r.before, want)
		}
		t.Logf("%d requests during the outage, %d after it; the last row delivered %v after the receiver came back",
			r.before, r.late, r.lastTask.Sub(r.up))
		for _, want := range []string{`level=WARN msg="receiver stopped answering"`, `level=INFO msg="receiver answering again"`} {
			if n := strings.Count(log.String(), want); n != 1 {
				t.Errorf("the log has %q %d times, want once:\n%s", want, n, log.String())
			}
		}
		if n := strings.Count(log.String(), "result=pending"); n != 0 {
			t.Errorf("the log has %d lines for failed attempts, want none", n)
		}
	})
}

// TestARefusalIsAnAnswer: a receiver that comes back and refuses a row
// for good, or finds its key in conflict, has answered: the pool says it
// is answering again, as after a task.
func TestARefusalIsAnAnswer(t *testing.T) {
	for _, answer := range []error{system.ErrRejected, system.ErrKeyConflict} {
		t.Run(answer.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{Worker: "w:1"})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if _, err := w.RecordApproval(t.Context(), "case-1", "Call back"); err != nil {
					t.Fatal(err)
				}
				calls := 0
				r := receiverFunc(func(context.Context, string, string) (int64, error) {
					if calls++; calls == 1 {
						return 0, fmt.Errorf("%w: down", system.ErrTransient)
					}
					return 0, fmt.Errorf("%w: no", answer)
				})
				var log strings.Builder
				p := &system.Pool{Receiver: r, UntilIdle: true, Log: slog.New(slog.NewTextHandler(&log, nil)), Outboxes: []*system.Outbox{w}}
				if err := p.Run(t.Context()); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{`level=WARN msg="receiver stopped answering"`, `level=INFO msg="receiver answering again"`} {
					if n := strings.Count(log.String(), want); n != 1 {
						t.Errorf("the log has %q %d times, want once:\n%s", want, n, log.String())
					}
				}
			})
		})
	}
}

// TestEachOutageCountsItsOwnFailures: the line that says the receiver
// answers again counts the sends that failed in that outage alone: a
// receiver down for two sends, up for one, then down for one more, is
// said to answer again after two failed sends, and then after one.
func TestEachOutageCountsItsOwnFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{Worker: "w:1", NoBackoff: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, c := range []string{"case-1", "case-2"} {
			if _, err := w.RecordApproval(t.Context(), c, "Call back"); err != nil {
				t.Fatal(err)
			}
		}
		calls := 0
		r := receiverFunc(func(context.Context, string, string) (int64, error) {
			switch calls++; calls {
			case 1, 2, 4:
				return 0, fmt.Errorf("%w: down", system.ErrTransient)
			}
			return int64(calls), nil
		})
		var log strings.Builder
		p := &system.Pool{Receiver: r, UntilIdle: true, Log: slog.New(slog.NewTextHandler(&log, nil)), Outboxes: []*system.Outbox{w}}
		if err := p.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		var counts []string
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, `msg="receiver answering again"`) {
				_, after, _ := strings.Cut(line, "failed_sends=")
				n, _, _ := strings.Cut(after, " ")
				counts = append(counts, n)
			}
		}
		if want := []string{"2", "1"}; !slices.Equal(counts, want) {
			t.Errorf("the receiver answering again after failed_sends=%v, want %v:\n%s", counts, want, log.String())
		}
	})
}
