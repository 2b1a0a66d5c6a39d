package running

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// TestOutageSpan: an outage covers the instant it starts, not the one
// it ends.
func TestOutageSpan(t *testing.T) {
	r := newReceiver(Schedule{Events: []Event{{Kind: Outage, At: time.Second, For: 2 * time.Second}}}, time.Now())
	for at, want := range map[time.Duration]bool{999 * time.Millisecond: false, time.Second: true, 2999 * time.Millisecond: true, 3 * time.Second: false} {
		if got := r.down(at); got != want {
			t.Errorf("down at %v: %v, want %v", at, got, want)
		}
	}
}

// TestHorizon: a run must have settled by its last event's end and the
// design's settle time, and, where a lock holds a paused worker's job,
// after every pause besides.
func TestHorizon(t *testing.T) {
	s := Schedule{Events: []Event{{Kind: Outage, At: 10 * time.Second, For: time.Minute}},
		Answers: []AnswerRule{{N: 1, Answer: Paused, Wait: 40 * time.Second}, {N: 2, Answer: LostReply}, {N: 3, Answer: Paused, Wait: 50 * time.Second}}}
	for _, tc := range []struct {
		holds designs.Holding
		want  time.Duration
	}{
		{designs.HeldByLease, 70*time.Second + time.Minute},
		{designs.HeldByLock, 70*time.Second + time.Minute + 90*time.Second},
	} {
		if got := horizonOf(s, designs.Running{Settle: time.Minute, Holds: tc.holds}); got != tc.want {
			t.Errorf("held by %s: horizon %v, want %v", tc.holds, got, tc.want)
		}
	}
}

// TestMutexWaits: the watchdog's reading of a stall names a goroutine of
// a bubble that waits on a mutex (which testing/synctest does not count
// as durably blocked), and neither one that sleeps in the bubble nor one
// outside any bubble that waits on a mutex.
func TestMutexWaits(t *testing.T) {
	// blockOn starts a goroutine that waits on mu, which the caller
	// holds, and returns the mutex waits seen once it waits (or after a
	// thousand looks); the caller then lets it go.
	blockOn := func(mu *sync.Mutex) []string {
		go func() { mu.Lock(); mu.Unlock() }()
		for range 1000 {
			all := stacks()
			if waits := mutexWaits(all); len(waits) > 0 || strings.Contains(all, "[sync.Mutex.Lock]") {
				return waits
			}
			runtime.Gosched()
		}
		return nil
	}
	synctest.Test(t, func(t *testing.T) {
		stop := make(chan struct{})
		go func() {
			select {
			case <-time.After(time.Hour):
			case <-stop:
			}
		}()
		var mu sync.Mutex
		mu.Lock()
		waits := blockOn(&mu)
		mu.Unlock()
		close(stop)
		if len(waits) != 1 || !strings.Contains(waits[0], "synctest bubble") || !strings.Contains(waits[0], "TestMutexWaits") {
			t.Errorf("in a bubble: got %d waits, want the one goroutine that waits on the mutex:\n%s", len(waits), strings.Join(waits, "\n\n"))
		}
	})
	var mu sync.Mutex
	mu.Lock()
	waits := blockOn(&mu)
	mu.Unlock()
	if len(waits) != 0 {
		t.Errorf("outside a bubble: got %d waits, want none:\n%s", len(waits), strings.Join(waits, "\n\n"))
	}
}
