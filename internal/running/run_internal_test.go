package running

import (
	"testing"
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
