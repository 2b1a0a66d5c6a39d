package system_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/internal/bulk"
	"github.com/outboxlab/handoff/system"
)

// TestPage: reading the outbox page by page, in every state and before a
// time, gives the rows a snapshot has, in its order, each once.
func TestPage(t *testing.T) { eachBackend(t, testPage) }

func testPage(t *testing.T, b backend) {
	app, _, _ := openPair(t, b, system.Options{})
	start := approvedAt.Add(-time.Hour)
	if err := bulk.Fill(t.Context(), app, 250, bulk.Mix{Pending: 3, Blocked: 7}, start); err != nil {
		t.Fatal(err)
	}
	all := snapshot(t, app).Outbox
	cut := start.Add(120 * time.Millisecond)
	for _, st := range []system.State{"", system.Pending, system.Sent, system.Blocked} {
		for _, before := range []time.Time{{}, cut} {
			var want []system.Row
			for _, r := range all {
				if (st == "" || r.State == st) && (before.IsZero() || r.CreatedAt.Before(before)) {
					want = append(want, r)
				}
			}
			var got []system.Row
			pages := 0
			for after := int64(0); ; pages++ {
				p, err := app.Page(t.Context(), system.PageQuery{State: st, ApprovedBefore: before, After: after, Limit: 40})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Rows) > 40 || p.Next != 0 && len(p.Rows) != 40 {
					t.Fatalf("state %q: a page of %d rows, next %d", st, len(p.Rows), p.Next)
				}
				got = append(got, p.Rows...)
				if p.Next == 0 {
					break
				}
				after = p.Next
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("state %q, before %v, %d pages (-snapshot +pages):\n%s", st, before, pages, diff)
			}
		}
	}
	for _, pq := range []system.PageQuery{{State: "done", Limit: 1}, {Limit: 0}, {Limit: system.MaxPageRows + 1}, {Limit: 1, After: -1}} {
		if _, err := app.Page(t.Context(), pq); !errors.Is(err, system.ErrInvalidInput) {
			t.Errorf("%+v: got %v, want ErrInvalidInput", pq, err)
		}
	}
	// The largest page holds every row of an outbox no larger than it.
	if p, err := app.Page(t.Context(), system.PageQuery{Limit: system.MaxPageRows}); err != nil || p.Next != 0 || !cmp.Equal(p.Rows, all) {
		t.Errorf("a page of %d rows: %d rows, next %d, %v; want all %d rows and no next page", system.MaxPageRows, len(p.Rows), p.Next, err, len(all))
	}
	a, err := app.Approval(t.Context(), system.KeyPrefix+"bulk-7")
	if err != nil || a.CaseID != "bulk-7" || a.Title != "Call back" || a.Payload != `{"case_id":"bulk-7","title":"Call back"}` {
		t.Errorf("approval of bulk-7: %+v, %v", a, err)
	}
	if _, err := app.Approval(t.Context(), "nope"); !errors.Is(err, system.ErrNotFound) {
		t.Errorf("approval of an unknown key: %v, want ErrNotFound", err)
	}
}

// TestAuditOf: the audit entries of one key, and none of another's.
func TestAuditOf(t *testing.T) { eachBackend(t, testAuditOf) }

func testAuditOf(t *testing.T, b backend) {
	now := approvedAt
	app, _, _ := openPair(t, b, system.Options{Harness: system.Harness{Now: func() time.Time { return now }}})
	if err := bulk.Fill(t.Context(), app, 10, bulk.Mix{Blocked: 1}, approvedAt); err != nil {
		t.Fatal(err)
	}
	k1, k2 := system.KeyPrefix+"bulk-1", system.KeyPrefix+"bulk-2"
	if err := app.Requeue(t.Context(), k1, 0, "ana", "checked the CRM"); err != nil {
		t.Fatal(err)
	}
	if err := app.Reconcile(t.Context(), k2, 9, "ana", "found task 9"); err != nil {
		t.Fatal(err)
	}
	if err := app.ReconcileAbsent(t.Context(), k1, "bo", "not there"); err != nil {
		t.Fatal(err)
	}
	got, err := app.AuditOf(t.Context(), k1)
	if err != nil {
		t.Fatal(err)
	}
	want := []system.AuditEntry{{At: now, Actor: "ana", Action: system.ActionRequeue, Key: k1, Reason: "checked the CRM"},
		{At: now, Actor: "bo", Action: system.ActionReconcileAbsent, Key: k1, Reason: "not there"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit of %s (-want +got):\n%s", k1, diff)
	}
}

// TestReleaseGone: the leases of the workers said to be gone are released
// (their fences raised, so that they can no longer settle); a live
// worker's, and the caller's own, are kept.
func TestReleaseGone(t *testing.T) { eachBackend(t, testReleaseGone) }

func testReleaseGone(t *testing.T, b backend) {
	target := b.app(t)
	open := func(worker string) *system.Outbox {
		o, err := system.Open(t.Context(), target, system.Options{Worker: worker})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	dead, live, me := open("dead"), open("live"), open("me")
	if err := bulk.Fill(t.Context(), me, 5, bulk.Mix{Pending: 1}, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	claims := map[string]system.Claim{}
	for _, o := range []*system.Outbox{dead, dead, live, me} {
		c, _, err := o.ClaimNext(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		claims[o.Worker()+c.Key] = c
	}
	var asked []string
	released, err := me.ReleaseGone(t.Context(), func(w string) bool {
		asked = append(asked, w)
		return w == "dead"
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if diff := cmp.Diff(map[string]int{"dead": 2}, released); diff != "" || !slices.Equal(asked, []string{"dead", "live"}) {
		t.Errorf("released %v (asked about %v), want dead's 2 (asked about dead and live only)", released, asked)
	}
	holders := map[string]int{}
	for _, r := range snapshot(t, me).Outbox {
		if r.LeaseOwner != "" {
			holders[r.LeaseOwner]++
		}
	}
	if diff := cmp.Diff(map[string]int{"live": 1, "me": 1}, holders); diff != "" {
		t.Errorf("leases after the release (-want +got):\n%s", diff)
	}
	for k, c := range claims {
		d, err := dead.Settle(t.Context(), c, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if k[:4] == "dead" && d.Result != system.ResultStale {
			t.Errorf("a released claim of dead settled as %s, want stale", d.Result)
		}
	}
}

// TestTookOverAndBackoff: a claim says whose run-out lease it took, and a
// transient failure how long the row now waits.
func TestTookOverAndBackoff(t *testing.T) { eachBackend(t, testTookOverAndBackoff) }

func testTookOverAndBackoff(t *testing.T, b backend) {
	now := approvedAt
	clock := func() time.Time { return now }
	target := b.app(t)
	open := func(worker string) *system.Outbox {
		o, err := system.Open(t.Context(), target, system.Options{Worker: worker, Lease: 2 * time.Second, SendTimeout: time.Second, MaxAttempts: 5,
			BackoffBase: 10 * time.Second, Harness: system.Harness{Now: clock, Jitter: func(c time.Duration) time.Duration { return c / 2 }}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	a, bw := open("a"), open("b")
	if err := bulk.Fill(t.Context(), a, 1, bulk.Mix{Pending: 1}, approvedAt.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, d, err := a.ClaimNext(t.Context(), 0); err != nil || c.TookOver != "" || d.Result != system.ResultPending {
		t.Fatalf("the first claim: %+v, took over %q, %v; want pending, none", d, c.TookOver, err)
	}
	now = now.Add(3 * time.Second)
	c, _, err := bw.ClaimNext(t.Context(), 0)
	if err != nil || c.TookOver != "a" {
		t.Fatalf("b's claim after a's lease ran out: took over %q, %v; want a", c.TookOver, err)
	}
	d, err := bw.Settle(t.Context(), c, 0, system.ErrTransient)
	if err != nil || d.TookOver != "a" || d.Backoff != 10*time.Second || d.Result != system.ResultPending {
		t.Errorf("the settle of attempt 2: %+v, %v; want pending, took over from a, a backoff of 10s (half the ceiling of 20s)", d, err)
	}
	hint := &system.RetryHint{After: time.Minute, Err: system.ErrTransient}
	now = now.Add(10 * time.Second)
	c, _, err = bw.ClaimNext(t.Context(), 0)
	if err != nil || c.TookOver != "" {
		t.Fatalf("b's claim of a free row: took over %q, %v; want none", c.TookOver, err)
	}
	if d, err := bw.Settle(t.Context(), c, 0, hint); err != nil || d.Backoff != time.Minute {
		t.Errorf("a settle with a retry hint of 1m: %+v, %v; want a backoff of 1m", d, err)
	}
}

// TestOwnLeaseRunOutIsNoTakeOver: a worker that claims again a row
// whose lease it held itself, run out (it stalled past its lease and no
// other worker came), takes it over from no one: the claim and its
// Delivery name no other worker, so that a count of takeovers (work's
// metrics) counts only rows taken from another worker.
func TestOwnLeaseRunOutIsNoTakeOver(t *testing.T) { eachBackend(t, testOwnLeaseRunOutIsNoTakeOver) }

func testOwnLeaseRunOutIsNoTakeOver(t *testing.T, b backend) {
	now := approvedAt
	o, err := system.Open(t.Context(), b.app(t), system.Options{Worker: "a", Lease: 2 * time.Second, SendTimeout: time.Second,
		Harness: system.Harness{Now: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := bulk.Fill(t.Context(), o, 1, bulk.Mix{Pending: 1}, approvedAt.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, d, err := o.ClaimNext(t.Context(), 0); err != nil || c.TookOver != "" || d.Result != system.ResultPending {
		t.Fatalf("the first claim: %+v, took over %q, %v; want pending, from no one", d, c.TookOver, err)
	}
	now = now.Add(3 * time.Second) // a's own lease ran out
	c, d, err := o.ClaimNext(t.Context(), 0)
	if err != nil || d.Result != system.ResultPending || c.Attempt != 2 {
		t.Fatalf("a's claim after its own lease ran out: %+v, %v; want attempt 2 pending", d, err)
	}
	if c.TookOver != "" || d.TookOver != "" {
		t.Errorf("a's claim after its own lease ran out took over %q (Delivery %q), want from no one", c.TookOver, d.TookOver)
	}
	if d, err := o.Settle(t.Context(), c, 1, nil); err != nil || d.Result != system.ResultSent || d.TookOver != "" {
		t.Errorf("its settle: %+v, %v; want sent, taken over from no one", d, err)
	}
}
