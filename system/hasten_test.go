package system_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// waitingRows approves four cases on workers A and B and leaves them as
// a receiver's outage does, with each jitter at its ceiling: case-1
// pending after its fourth transient failure, waiting out 8 s of
// backoff, and case-2 after its first, waiting out 1 s; case-3 pending
// after one whose receiver asked for an hour (Retry-After); case-4
// claimed by B, whose lease is live.
func waitingRows(t *testing.T, b backend, clk *clock) map[string]*system.Outbox {
	t.Helper()
	ws, _ := workers(t, b, clk, system.Options{MaxAttempts: 5, Harness: system.Harness{Jitter: func(c time.Duration) time.Duration { return c }}}, "A", "B")
	mustApprove(t, ws["A"], "case-1", "case-2", "case-3", "case-4")
	refuse := func(after time.Duration) system.Receiver {
		return receiverFunc(func(context.Context, string, string) (int64, error) {
			err := fmt.Errorf("%w: connection refused", system.ErrTransient)
			if after > 0 {
				return 0, &system.RetryHint{After: after, Err: err}
			}
			return 0, err
		})
	}
	for _, step := range []struct {
		receiver system.Receiver
		tick     time.Duration
	}{
		{refuse(0), 0}, {refuse(0), time.Second}, {refuse(0), 2 * time.Second}, {refuse(0), 4 * time.Second}, // case-1, four times
		{refuse(0), 0},         // case-2
		{refuse(time.Hour), 0}, // case-3
	} {
		clk.tick(step.tick)
		if _, err := ws["A"].DeliverOne(t.Context(), step.receiver); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := ws["B"].ClaimNext(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestHasten: when the receiver answers again, the rows that wait out a
// backoff after a transient failure become due within HastenWithin, each
// at its own jitter; a wait the receiver's hint asked for, a leased row
// and a row due sooner are left as they are, and no fence moves.
func TestHasten(t *testing.T) { eachBackend(t, testHasten) }

func testHasten(t *testing.T, b backend) {
	clk := newClock()
	ws := waitingRows(t, b, clk)
	before := rowsByKey(t, ws["A"])
	n, err := ws["A"].Hasten(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	after := rowsByKey(t, ws["A"])
	moved := 0
	for key, r := range after {
		was := before[key]
		if r.Fence != was.Fence {
			t.Errorf("%s: fence %d, was %d: hastening moves no fence", key, r.Fence, was.Fence)
		}
		switch {
		case key == system.KeyPrefix+"case-3" || key == system.KeyPrefix+"case-4":
			if !r.NextAttemptAt.Equal(was.NextAttemptAt) {
				t.Errorf("%s: next attempt %v, was %v: a hinted wait or a leased row is left alone", key, r.NextAttemptAt, was.NextAttemptAt)
			}
		case r.NextAttemptAt.After(clk.now.Add(system.HastenWithin)):
			t.Errorf("%s: next attempt %v, more than %v from now (%v)", key, r.NextAttemptAt, system.HastenWithin, clk.now)
		case !r.NextAttemptAt.Equal(was.NextAttemptAt):
			moved++
		}
	}
	if n != moved || n != 1 {
		t.Errorf("Hasten says it moved %d rows, %d moved; want 1 (case-1: case-2, due in a second, is due sooner)", n, moved)
	}
}

// TestHastenKeepsHintsOnly: after a first transient failure whose drawn
// backoff is 30 s (its ceiling), a row is hastened when its wait is that
// backoff, however long after its claim the answer was recorded, and
// kept when its wait is the receiver's retry hint, however short; a hint
// shorter than the backoff leaves the backoff as the wait, and is
// hastened.
func TestHastenKeepsHintsOnly(t *testing.T) { eachBackend(t, testHastenKeepsHintsOnly) }

func testHastenKeepsHintsOnly(t *testing.T, b backend) {
	for _, tt := range []struct {
		name     string
		took     time.Duration // from the claim to the answer's record
		hint     time.Duration // the receiver's Retry-After, 0 for none
		hastened bool
	}{
		{"a backoff after a slow send", system.DefaultSendTimeout - time.Second, 0, true},
		{"a backoff recorded long after its claim", 3 * system.DefaultSendTimeout, 0, true},
		{"a hint shorter than the backoff", 0, 10 * time.Second, true},
		{"a hint just over the backoff", 0, 31 * time.Second, false},
		{"a hint of an hour", 0, time.Hour, false},
	} {
		clk := newClock()
		ws, _ := workers(t, b, clk, system.Options{BackoffBase: 30 * time.Second, Harness: system.Harness{Jitter: func(c time.Duration) time.Duration { return c }}}, "A")
		mustApprove(t, ws["A"], "case-1")
		failing := receiverFunc(func(context.Context, string, string) (int64, error) {
			clk.tick(tt.took)
			err := fmt.Errorf("%w: the receiver failed", system.ErrTransient)
			if tt.hint > 0 {
				return 0, &system.RetryHint{After: tt.hint, Err: err}
			}
			return 0, err
		})
		if _, err := ws["A"].DeliverOne(t.Context(), failing); err != nil {
			t.Fatal(err)
		}
		was := rowsByKey(t, ws["A"])[system.KeyPrefix+"case-1"]
		n, err := ws["A"].Hasten(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r := rowsByKey(t, ws["A"])[system.KeyPrefix+"case-1"]
		switch {
		case tt.hastened && (n != 1 || r.NextAttemptAt.After(clk.now.Add(system.HastenWithin))):
			t.Errorf("%s: Hasten moved %d rows, case-1 next at %v (was %v, now %v); want it due within %v", tt.name, n, r.NextAttemptAt, was.NextAttemptAt, clk.now, system.HastenWithin)
		case !tt.hastened && (n != 0 || !r.NextAttemptAt.Equal(was.NextAttemptAt)):
			t.Errorf("%s: Hasten moved %d rows, case-1 next at %v (was %v); want the hint kept", tt.name, n, r.NextAttemptAt, was.NextAttemptAt)
		}
	}
}

// TestRetryNow: the operator action makes every row that waits due now,
// whatever its last error or the receiver's hint, adds one to each
// one's fence and an audit line each; a leased row is left to its
// holder, and an actor and a reason are required.
func TestRetryNow(t *testing.T) { eachBackend(t, testRetryNow) }

func testRetryNow(t *testing.T, b backend) {
	clk := newClock()
	ws := waitingRows(t, b, clk)
	for _, tt := range []struct{ actor, reason string }{{"", "outage over"}, {"ana", ""}} {
		if _, err := ws["A"].RetryNow(t.Context(), tt.actor, tt.reason); !errors.Is(err, system.ErrInvalidInput) {
			t.Errorf("RetryNow(%q, %q): got %v, want %v", tt.actor, tt.reason, err, system.ErrInvalidInput)
		}
	}
	before := rowsByKey(t, ws["A"])
	keys, err := ws["A"].RetryNow(t.Context(), "ana", "outage over")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{system.KeyPrefix + "case-1", system.KeyPrefix + "case-2", system.KeyPrefix + "case-3"}
	if !slices.Equal(keys, want) {
		t.Errorf("made due %v, want %v", keys, want)
	}
	after := rowsByKey(t, ws["A"])
	for key, r := range after {
		was := before[key]
		due := slices.Contains(want, key)
		switch {
		case due && (!r.NextAttemptAt.Equal(clk.now) || r.Fence != was.Fence+1):
			t.Errorf("%s: next attempt %v, fence %d; want now (%v) and fence %d", key, r.NextAttemptAt, r.Fence, clk.now, was.Fence+1)
		case !due && (!r.NextAttemptAt.Equal(was.NextAttemptAt) || r.Fence != was.Fence):
			t.Errorf("%s, leased: moved to %v, fence %d", key, r.NextAttemptAt, r.Fence)
		}
	}
	audit, err := ws["A"].Audit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != len(want) || audit[0].Action != system.ActionRetryNow || audit[0].Actor != "ana" || audit[0].Reason != "outage over" {
		t.Errorf("audit log %+v, want a retry-now line by ana for each of %v", audit, want)
	}
}

// TestRetryNowLeavesASentRow: a row a person reconciled as sent while
// it waited out a backoff keeps that backoff's time, but waits for
// nothing: RetryNow leaves it as it is, names only the pending rows it
// made due, and audits only them.
func TestRetryNowLeavesASentRow(t *testing.T) { eachBackend(t, testRetryNowLeavesASentRow) }

func testRetryNowLeavesASentRow(t *testing.T, b backend) {
	clk := newClock()
	ws := waitingRows(t, b, clk)
	reconciled := system.KeyPrefix + "case-1"
	if err := ws["A"].Reconcile(t.Context(), reconciled, 7, "ana", "found task 7 in the CRM"); err != nil {
		t.Fatal(err)
	}
	was := rowsByKey(t, ws["A"])[reconciled]
	if was.State != system.Sent || !was.NextAttemptAt.After(clk.now) {
		t.Fatalf("the reconciled row: %+v; want sent, its next attempt still after now (%v)", was, clk.now)
	}
	keys, err := ws["A"].RetryNow(t.Context(), "ana", "outage over")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{system.KeyPrefix + "case-2", system.KeyPrefix + "case-3"}; !slices.Equal(keys, want) {
		t.Errorf("made due %v, want %v: the sent row waits for nothing", keys, want)
	}
	if r := rowsByKey(t, ws["A"])[reconciled]; r != was {
		t.Errorf("the sent row after RetryNow: %+v, want it as it was: %+v", r, was)
	}
	audit, err := ws["A"].Audit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range audit {
		if e.Action == system.ActionRetryNow && e.Key == reconciled {
			t.Errorf("the audit log has %+v: a retry-now of a sent row", e)
		}
	}
}

// rowsByKey is the outbox's rows by key.
func rowsByKey(t *testing.T, o *system.Outbox) map[string]system.Row {
	t.Helper()
	rows := map[string]system.Row{}
	for _, r := range snapshot(t, o).Outbox {
		rows[r.Key] = r
	}
	return rows
}
