package system_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/system"
)

// TestHistory: a row's history keeps what the row does not: every claim
// with the attempt it counted, what each attempt came to, the block and
// its reason (at an answer, and at a claim), a repair with who and why
// and what it cleared; a later attempt's claim counts from 1 again.
func TestHistory(t *testing.T) { eachBackend(t, testHistory) }

// answers is a receiver that answers each create with the next of its
// errors, and with a task once they are spent.
type answers struct{ errs []error }

func (a *answers) CreateTask(context.Context, string, string) (int64, error) {
	if len(a.errs) == 0 {
		return 7, nil
	}
	err := a.errs[0]
	a.errs = a.errs[1:]
	return 0, err
}

func testHistory(t *testing.T, b backend) {
	ctx := t.Context()
	app, _, p := openPair(t, b, system.Options{Worker: "w1", MaxAttempts: 2, NoBackoff: true})
	down := fmt.Errorf("%w: 503 Service Unavailable", system.ErrTransient)
	r := &answers{errs: []error{down, down}}
	for _, c := range []string{"case-1", "case-2"} {
		if _, err := app.RecordApproval(ctx, c, "Call back"); err != nil {
			t.Fatal(err)
		}
	}
	one, two := system.KeyPrefix+"case-1", system.KeyPrefix+"case-2"
	for range 2 { // case-1: transient twice, blocked
		if _, err := app.DeliverOne(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// The person repairs from a machine whose clock is an hour behind the
	// worker's: the history keeps the order things were written in.
	behind, err := system.Open(ctx, p.app, system.Options{Worker: "ana", Harness: system.Harness{Now: func() time.Time { return time.Now().Add(-time.Hour) }}})
	if err != nil {
		t.Fatal(err)
	}
	defer behind.Close()
	if err := behind.Requeue(ctx, one, 0, "ana", "the CRM is back"); err != nil {
		t.Fatal(err)
	}
	if d, err := app.DeliverOne(ctx, r); err != nil || d.Key != one || d.Result != system.ResultSent {
		t.Fatalf("the delivery after the requeue: %+v, %v", d, err)
	}
	// case-2: one transient attempt, then a worker of a smaller budget
	// blocks it at its claim.
	r.errs = []error{down}
	if _, err := app.DeliverOne(ctx, r); err != nil {
		t.Fatal(err)
	}
	small, err := system.Open(ctx, p.app, system.Options{Worker: "w2", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if d, err := small.DeliverOne(ctx, r); err != nil || d.Key != two || d.Result != system.ResultBlocked {
		t.Fatalf("the claim of the smaller budget: %+v, %v", d, err)
	}
	for key, want := range map[string][]string{
		one: {
			"w1 claim: attempt 1 of 2 counted, fence 1",
			"w1 retry: attempt 1: system: transient failure: 503 Service Unavailable; the next attempt in 0s",
			"w1 claim: attempt 2 of 2 counted, fence 2",
			"w1 blocked: attempt 2: transient: system: transient failure: 503 Service Unavailable",
			"ana cleared: 2 attempts and last error transient of the blocked row",
			"ana requeue: the CRM is back",
			"w1 claim: attempt 1 of 2 counted, fence 4",
			"w1 sent: attempt 1: CRM task 7",
		},
		two: {
			"w1 claim: attempt 1 of 2 counted, fence 1",
			"w1 retry: attempt 1: system: transient failure: 503 Service Unavailable; the next attempt in 0s",
			"w2 blocked: budget-exhausted at a claim, after 1 attempts: nothing sent",
		},
	} {
		h, err := app.History(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range h {
			got = append(got, fmt.Sprintf("%s %s: %s", e.Actor, e.Action, e.Reason))
			if e.Key != key || e.At.IsZero() {
				t.Errorf("an entry of %s: %+v", key, e)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the history of %s:\n%s\nwant\n%s", key, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// The audit log keeps a person's actions alone.
	if audit, err := app.Audit(ctx); err != nil || len(audit) != 1 || audit[0].Action != system.ActionRequeue {
		t.Errorf("the audit log: %+v, %v; want the one requeue", audit, err)
	}
}
