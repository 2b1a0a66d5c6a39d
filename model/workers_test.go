package model_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/model"
)

const (
	start = model.ScenarioStart
	key2  = model.KeyPrefix + "case-2"
)

// opened returns the empty state under the scenario options changed by
// change, with case-1 (and more cases) approved.
func opened(t *testing.T, change func(*model.Config), cases ...string) model.State {
	t.Helper()
	c := model.Scenario()
	change(&c)
	s, err := model.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append([]string{"case-1"}, cases...) {
		s, _, _ = s.Approve(id, "t", false)
	}
	return s
}

func same(*model.Config) {}

func tick(t *testing.T, s model.State, ms int64) model.State {
	t.Helper()
	s, ok := s.Tick(ms)
	if !ok {
		t.Fatalf("Tick(%d) refused", ms)
	}
	return s
}

// claim claims for worker and fails the test unless it got a claim.
func claim(t *testing.T, s model.State, worker string) model.State {
	t.Helper()
	s, c := s.Claim(worker)
	if c.Result != model.ResultClaimed {
		t.Fatalf("Claim(%s): got %+v, want claimed", worker, c)
	}
	return s
}

// send sends for worker and fails the test unless it heard want.
func send(t *testing.T, s model.State, worker string, in model.Request, want model.Result) model.State {
	t.Helper()
	s, r := s.Send(worker, in)
	if r != want {
		t.Fatalf("Send(%s, %+v): got %s, want %s", worker, in, r, want)
	}
	return s
}

func TestTick(t *testing.T) {
	s := model.New(3)
	if s, ok := s.Tick(5); !ok || s.Now != start+5 {
		t.Errorf("Tick(5): got %d, %v; want %d, true", s.Now, ok, start+5)
	}
	if s, ok := s.Tick(-1); ok || s.Now != start {
		t.Errorf("Tick(-1): got %d, %v; want %d, false", s.Now, ok, start)
	}
}

func TestClaim(t *testing.T) {
	failed := func(s model.State) model.State {
		s = claim(t, s, "A")
		s = send(t, s, "A", model.Request{Network: model.Offline}, model.ResultTransient)
		s, _, _ = s.Settle("A", 0)
		return s
	}
	tests := []struct {
		name   string
		change func(*model.Config)
		setup  func(model.State) model.State
		want   model.ClaimResult
		row    model.Row // the first row afterwards
	}{
		{"claimed", same, func(s model.State) model.State { return tick(t, s, 7) },
			model.ClaimResult{Result: model.ResultClaimed, Key: key},
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start + 7, LeaseOwner: "B", LeaseUntil: start + 7 + 30_000, Fence: 1}},
		{"a second claim keeps the first claim's time", same, func(s model.State) model.State { return tick(t, failed(s), 7) },
			model.ClaimResult{Result: model.ResultClaimed, Key: key},
			model.Row{Key: key, State: model.Pending, Attempts: 2, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "B", LeaseUntil: start + 7 + 30_000, Fence: 2}},
		{"nothing pending", same, func(s model.State) model.State {
			s, _ = s.Reconcile(model.Operator{}, key, 9)
			return s
		}, model.ClaimResult{Result: model.Idle},
			model.Row{Key: key, State: model.Sent, RemoteID: 9, CreatedAt: start, NextAttemptAt: start, Fence: 1}},
		{"backoff: idle until the next attempt", func(c *model.Config) { c.BackoffBase = 1_000 }, func(s model.State) model.State {
			s = claim(t, s, "A")
			s = send(t, s, "A", model.Request{Network: model.Offline}, model.ResultTransient)
			s, _, _ = s.Settle("A", 600)
			return tick(t, s, 599)
		}, model.ClaimResult{Result: model.Idle, Wake: start + 600},
			model.Row{Key: key, State: model.Pending, Attempts: 1, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start + 600, FirstClaimedAt: start, Fence: 1}},
		{"a live lease: idle until it runs out", same, func(s model.State) model.State { return tick(t, claim(t, s, "A"), 29_999) },
			model.ClaimResult{Result: model.Idle, Wake: start + 30_000},
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "A", LeaseUntil: start + 30_000, Fence: 1}},
		{"a lease that ran out", same, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultClaimed, Key: key},
			model.Row{Key: key, State: model.Pending, Attempts: 2, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "B", LeaseUntil: start + 60_000, Fence: 2}},
		{"budget exhausted", func(c *model.Config) { c.MaxAttempts = 1 }, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultBlocked, Key: key, LastError: model.BudgetExhausted},
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.BudgetExhausted, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
		{"budget exhausted comes before deadline and retention", func(c *model.Config) { c.MaxAttempts, c.MaxAge, c.Retention = 1, 1, 10_001 }, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultBlocked, Key: key, LastError: model.BudgetExhausted},
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.BudgetExhausted, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
		{"not yet the deadline", func(c *model.Config) { c.MaxAge = 5 }, func(s model.State) model.State { return tick(t, s, 4) },
			model.ClaimResult{Result: model.ResultClaimed, Key: key},
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start + 4, LeaseOwner: "B", LeaseUntil: start + 4 + 30_000, Fence: 1}},
		{"deadline", func(c *model.Config) { c.MaxAge = 5 }, func(s model.State) model.State { return tick(t, s, 5) },
			model.ClaimResult{Result: model.ResultBlocked, Key: key, LastError: model.Deadline},
			model.Row{Key: key, State: model.Blocked, LastError: model.Deadline, CreatedAt: start, NextAttemptAt: start, Fence: 1}},
		{"deadline comes before retention", func(c *model.Config) { c.MaxAge, c.Retention = 30_000, 40_000 }, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultBlocked, Key: key, LastError: model.Deadline},
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.Deadline, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
		{"not yet past retention", func(c *model.Config) { c.Retention = 40_001 }, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultClaimed, Key: key},
			model.Row{Key: key, State: model.Pending, Attempts: 2, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "B", LeaseUntil: start + 60_000, Fence: 2}},
		{"retention expired", func(c *model.Config) { c.Retention = 40_000 }, func(s model.State) model.State { return tick(t, claim(t, s, "A").Crash("A"), 30_000) },
			model.ClaimResult{Result: model.ResultBlocked, Key: key, LastError: model.RetentionExpired},
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.RetentionExpired, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
		{"the worker still holds a claim", same, func(s model.State) model.State {
			s, _, _ = s.Approve("case-2", "t", false)
			return claim(t, s, "B")
		}, model.ClaimResult{Result: model.ResultOutOfTurn},
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "B", LeaseUntil: start + 30_000, Fence: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(opened(t, tt.change))
			s, got := s.Claim("B")
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if diff := cmp.Diff(tt.row, s.Outbox[0]); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaimTakesTheOldestEligibleRow(t *testing.T) {
	s := claim(t, opened(t, same, "case-2", "case-3"), "A")
	s, c := s.Claim("B")
	if c.Key != key2 {
		t.Errorf("got %+v, want %s: case-1 is leased to A", c, key2)
	}
	if s, c = s.Claim(""); c.Result != model.ResultOutOfTurn {
		t.Errorf("a worker without a name: got %+v, want out-of-turn", c)
	}
	s, c = s.Claim("C")
	if c.Key != model.KeyPrefix+"case-3" {
		t.Errorf("got %+v, want case-3", c)
	}
	if _, c = s.Claim("D"); c.Result != model.Idle || c.Wake != start+30_000 {
		t.Errorf("got %+v, want idle until %d", c, start+30_000)
	}
}

func TestSendOutOfTurn(t *testing.T) {
	s := opened(t, same)
	if _, r := s.Send("A", model.Request{}); r != model.ResultOutOfTurn {
		t.Errorf("a send without a claim: got %s, want out-of-turn", r)
	}
	s = send(t, claim(t, s, "A"), "A", model.Request{}, model.ResultTask)
	if _, r := s.Send("A", model.Request{}); r != model.ResultOutOfTurn {
		t.Errorf("a second send: got %s, want out-of-turn", r)
	}
	if len(s.Tasks) != 1 {
		t.Errorf("got %d tasks, want 1", len(s.Tasks))
	}
}

func TestSettle(t *testing.T) {
	backoff := func(c *model.Config) { c.BackoffBase, c.BackoffCap = 1_000, 1_500 }
	tests := []struct {
		name   string
		change func(*model.Config)
		setup  func(*testing.T, model.State) model.State // claims and sends for A
		jitter int64
		result model.Result
		row    model.Row
	}{
		{"a task id", same, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{}, model.ResultTask)
		}, 0, model.ResultSent,
			model.Row{Key: key, State: model.Sent, Attempts: 1, RemoteID: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 1}},
		{"a transient failure waits for the jitter", backoff, func(t *testing.T, s model.State) model.State {
			return tick(t, send(t, claim(t, s, "A"), "A", model.Request{Network: model.Throttled, RetryAfter: 300}, model.ResultTransient), 10)
		}, 1_000, model.ResultPending,
			model.Row{Key: key, State: model.Pending, Attempts: 1, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start + 10 + 1_000, FirstClaimedAt: start, Fence: 1}},
		{"a retry hint larger than the jitter", backoff, func(t *testing.T, s model.State) model.State {
			return tick(t, send(t, claim(t, s, "A"), "A", model.Request{Network: model.Throttled, RetryAfter: 5_000}, model.ResultTransient), 10)
		}, 1_000, model.ResultPending,
			model.Row{Key: key, State: model.Pending, Attempts: 1, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start + 10 + 5_000, FirstClaimedAt: start, Fence: 1}},
		{"a jitter above the ceiling", backoff, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.LostReply}, model.ResultTransient)
		}, 1_001, model.ResultInvalidJitter,
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "A", LeaseUntil: start + 30_000, Fence: 1}},
		{"a negative jitter", backoff, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.LostReply}, model.ResultTransient)
		}, -1, model.ResultInvalidJitter,
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "A", LeaseUntil: start + 30_000, Fence: 1}},
		{"any jitter while backoff is off is too large", same, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient)
		}, 1, model.ResultInvalidJitter,
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "A", LeaseUntil: start + 30_000, Fence: 1}},
		{"the ceiling doubles with the attempt", backoff, func(t *testing.T, s model.State) model.State {
			s = send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient)
			s, _, _ = s.Settle("A", 0)
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient)
		}, 1_500, model.ResultPending,
			model.Row{Key: key, State: model.Pending, Attempts: 2, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start + 1_500, FirstClaimedAt: start, Fence: 2}},
		{"a transient failure of the last attempt blocks", func(c *model.Config) { c.MaxAttempts = 1 }, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient)
		}, 0, model.ResultBlocked,
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.Transient, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 1}},
		{"a key conflict blocks", same, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.ForeignTask, Foreign: foreign}, model.ResultConflict)
		}, 0, model.ResultBlocked,
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.Conflict, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 1}},
		{"a refusal for good blocks", same, func(t *testing.T, s model.State) model.State {
			return send(t, claim(t, s, "A"), "A", model.Request{Network: model.Refused}, model.ResultRejected)
		}, 0, model.ResultBlocked,
			model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.Rejected, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 1}},
		{"nothing sent yet", same, func(t *testing.T, s model.State) model.State { return claim(t, s, "A") }, 0, model.ResultOutOfTurn,
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "A", LeaseUntil: start + 30_000, Fence: 1}},
		{"another worker claimed after the lease ran out", same, func(t *testing.T, s model.State) model.State {
			s = tick(t, send(t, claim(t, s, "A"), "A", model.Request{}, model.ResultTask), 30_000)
			return claim(t, s, "B")
		}, 0, model.ResultStale,
			model.Row{Key: key, State: model.Pending, Attempts: 2, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, LeaseOwner: "B", LeaseUntil: start + 60_000, Fence: 2}},
		{"a person reconciled after the lease ran out", same, func(t *testing.T, s model.State) model.State {
			s = tick(t, send(t, claim(t, s, "A"), "A", model.Request{}, model.ResultTask), 30_000)
			s, _ = s.Reconcile(model.Operator{Actor: "ann"}, key, 1)
			return s
		}, 0, model.ResultStale,
			model.Row{Key: key, State: model.Sent, Attempts: 1, RemoteID: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
		{"a person requeued a row blocked after the lease ran out", func(c *model.Config) { c.MaxAttempts = 1 }, func(t *testing.T, s model.State) model.State {
			s = tick(t, send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient), 30_000)
			s, _ = s.Claim("B")
			s, _ = s.Requeue(model.Operator{Actor: "ann"}, key)
			return s
		}, 0, model.ResultStale,
			model.Row{Key: key, State: model.Pending, CreatedAt: start, NextAttemptAt: start + 30_000, FirstClaimedAt: start, Fence: 3}},
		{"the worker's name was restarted", same, func(t *testing.T, s model.State) model.State {
			s = send(t, claim(t, s, "A"), "A", model.Request{}, model.ResultTask)
			claims := s.Claims
			s, _ = s.Restart("A")
			s.Claims = claims // a zombie of the old process settles
			return s
		}, 0, model.ResultStale,
			model.Row{Key: key, State: model.Pending, Attempts: 1, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup(t, opened(t, tt.change))
			s, r, _ := s.Settle("A", tt.jitter)
			if r != tt.result {
				t.Errorf("got %s, want %s", r, tt.result)
			}
			if diff := cmp.Diff(tt.row, s.Outbox[0]); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
			_, held := s.Claims["A"]
			if want := tt.result == model.ResultInvalidJitter || tt.result == model.ResultOutOfTurn; held != want {
				t.Errorf("A holds a claim: got %v, want %v", held, want)
			}
		})
	}
}

func TestCrashAndRestart(t *testing.T) {
	s := claim(t, claim(t, opened(t, same, "case-2", "case-3"), "A"), "B")
	s = send(t, s.Crash("A"), "B", model.Request{}, model.ResultTask)
	s, _, _ = s.Settle("B", 0)
	s = claim(t, s.Crash("A"), "A")
	if _, held := s.Claims["A"]; !held {
		t.Fatal("A lost the claim it made after crashing")
	}
	s = s.Crash("A")
	if _, held := s.Claims["A"]; held || s.Outbox[0].LeaseOwner != "A" {
		t.Errorf("after a crash: got claims %v and lease owner %q, want no claim and A's lease", s.Claims, s.Outbox[0].LeaseOwner)
	}
	s, released := s.Restart("A")
	if diff := cmp.Diff([]string{key, model.KeyPrefix + "case-3"}, released); diff != "" {
		t.Errorf("released (-want +got):\n%s", diff)
	}
	var fences []int64
	for _, r := range s.Outbox {
		fences = append(fences, r.Fence)
		if r.LeaseOwner != "" || r.LeaseUntil != 0 {
			t.Errorf("%s keeps a lease: %+v", r.Key, r)
		}
	}
	if diff := cmp.Diff([]int64{2, 1, 2}, fences); diff != "" {
		t.Errorf("fences (-want +got):\n%s", diff)
	}
	if _, c := s.Claim("C"); c.Key != key {
		t.Errorf("after the restart: got %+v, want %s eligible at once", c, key)
	}
	if _, released := s.Restart("A"); released != nil {
		t.Errorf("a second restart released %v, want nothing", released)
	}
}

// TestRestartKeepsLeases: with RestartKeepsLeases, a worker that starts
// again releases nothing: its row stays leased, under its fence, until the
// lease runs out, and then another worker claims it with the next fence.
func TestRestartKeepsLeases(t *testing.T) {
	s := claim(t, opened(t, func(c *model.Config) { c.RestartKeepsLeases = true }), "A")
	held := s.Outbox[0]
	s, released := s.Restart("A")
	if released != nil || s.Outbox[0] != held {
		t.Errorf("restart released %v and left %+v, want nothing released and %+v", released, s.Outbox[0], held)
	}
	if _, held := s.Claims["A"]; held {
		t.Error("A keeps its claim in flight after restarting")
	}
	if _, c := s.Claim("B"); c.Result != model.Idle || c.Wake != held.LeaseUntil {
		t.Errorf("while A's lease lives: got %+v, want idle until %d", c, held.LeaseUntil)
	}
	s = claim(t, tick(t, s, held.LeaseUntil-s.Now), "B")
	if r := s.Outbox[0]; r.LeaseOwner != "B" || r.Fence != held.Fence+1 || r.Attempts != 2 {
		t.Errorf("after the lease ran out: %+v, want B's lease at fence %d, attempt 2", r, held.Fence+1)
	}
}

func TestReceiverRetention(t *testing.T) {
	s := opened(t, func(c *model.Config) { c.Retention = 60_000 })
	s = send(t, claim(t, s, "A"), "A", model.Request{Network: model.LostReply}, model.ResultTransient)
	s, _, _ = s.Settle("A", 0)
	s = claim(t, tick(t, s, 49_999), "B") // claims stop at 60 s − 10 s after the first claim
	payload := `{"case_id":"case-1","title":"t"}`

	// A send that arrives before the key is forgotten is a replay.
	replay := send(t, tick(t, s, 9_999), "B", model.Request{}, model.ResultTask)
	if diff := cmp.Diff([]model.Task{{ID: 1, Key: key, Payload: payload}}, replay.Tasks); diff != "" {
		t.Errorf("a remembered key (-want +got):\n%s", diff)
	}
	if replay.Memory[key] != (model.Memory{TaskID: 1, StoredAt: start}) {
		t.Errorf("got memory %+v, want task 1 stored at the start", replay.Memory[key])
	}

	// A send that would start at or after the claim's time plus the send
	// timeout (a worker paused since its claim) is not made: it could
	// reach the receiver after the key is forgotten.
	late := send(t, tick(t, s, 10_000), "B", model.Request{}, model.ResultTransient)
	if diff := cmp.Diff([]model.Task{{ID: 1, Key: key, Payload: payload}}, late.Tasks); diff != "" {
		t.Errorf("a late send reached the receiver (-want +got):\n%s", diff)
	}

	// A person who found no task starts the retention clock afresh: a send
	// exactly a retention after the key was stored finds it forgotten.
	s, _, _ = late.Settle("B", 0)
	s, v := s.ReconcileAbsent(model.Operator{Actor: "ann", Reason: "no task in the CRM"}, key)
	if v != model.OpDone {
		t.Fatalf("reconcile --absent: %v", v)
	}
	forgotten := send(t, claim(t, tick(t, s, start+60_000-s.Now), "C"), "C", model.Request{}, model.ResultTask)
	if diff := cmp.Diff([]model.Task{{ID: 1, Key: key, Payload: payload}, {ID: 2, Key: key, Payload: payload}}, forgotten.Tasks); diff != "" {
		t.Errorf("a key stored exactly a retention ago (-want +got):\n%s", diff)
	}
}

// TestRefusedWrites checks what a busy or full database leaves: nothing
// of a refused approval, claim or settle; after a send whose receiver's
// database refused the task, no task, and a settle that records the cause
// and keeps the lease.
func TestRefusedWrites(t *testing.T) {
	s := model.New(3)
	if next, v, _ := s.ApproveRefused("case-1", "t", model.RefusedBusy); v != model.Busy || len(next.Outbox) != 0 {
		t.Fatalf("busy approval: got %v with %d rows, want busy and none", v, len(next.Outbox))
	}
	s, _, _ = s.Approve("case-1", "t", false)
	if _, v, _ := s.ApproveRefused("case-1", "t", model.RefusedFull); v != model.Repeated {
		t.Errorf("full repeat: got %v, want repeated: a repeat needs no room", v)
	}
	if next, r, key := s.Deliver(model.Delivery{App: model.RefusedBusy}); r != model.ResultBusy || key != "" || next.Outbox[0] != s.Outbox[0] {
		t.Errorf("busy claim: got %v %q, row %+v; want busy, no key, the row as it was", r, key, next.Outbox[0])
	}
	next, r, _ := s.Deliver(model.Delivery{Network: model.ReceiverFull})
	row := next.Outbox[0]
	if r != model.ResultFull || len(next.Tasks) != 0 || row.Attempts != 1 || row.LastError != model.LocalFull || row.LeaseOwner != model.DefaultWorker {
		t.Errorf("full receiver: got %v, %d tasks, row %+v; want full, no task, the attempt counted, the cause recorded, the lease kept", r, len(next.Tasks), row)
	}
	s, _ = s.Claim("A")
	s, _ = s.Send("A", model.Request{})
	next, r, _ = s.SettleRefused("A", model.RefusedBusy)
	if _, holds := next.Claims["A"]; r != model.ResultBusy || holds || next.Outbox[0] != s.Outbox[0] {
		t.Errorf("busy settle: got %v, claim held %t, row %+v; want busy, the claim ended, the row as it was", r, holds, next.Outbox[0])
	}
}

// TestLostCommits checks what a write whose commit was lost leaves:
// nothing of an approval (new or repeated) or a claim; a conflict, which
// never commits, is still a conflict; a settle records that the outcome
// is unknown and keeps the lease, unless the send heard the receiver's
// database refuse the task, whose cause is then what is lost.
func TestLostCommits(t *testing.T) {
	s := model.New(3)
	if next, v, _ := s.ApproveRefused("case-1", "t", model.CommitLost); v != model.CommitUnknown || len(next.Outbox) != 0 {
		t.Fatalf("lost approval: got %v with %d rows, want commit-unknown and none", v, len(next.Outbox))
	}
	s, _, _ = s.Approve("case-1", "t", false)
	for title, want := range map[string]model.Verdict{"t": model.CommitUnknown, "other": model.Conflicting} {
		if _, v, _ := s.ApproveRefused("case-1", title, model.CommitLost); v != want {
			t.Errorf("lost approval of title %q: got %v, want %v", title, v, want)
		}
	}
	if next, r, key := s.Deliver(model.Delivery{App: model.CommitLost}); r != model.ResultCommitUnknown || key != "" || next.Outbox[0] != s.Outbox[0] {
		t.Errorf("lost delivery: got %v %q, row %+v; want commit-unknown, no key, the row as it was", r, key, next.Outbox[0])
	}
	if next, r := s.ClaimCommitLost("A"); r != model.ResultCommitUnknown || next.Outbox[0] != s.Outbox[0] || len(next.Claims) != 0 {
		t.Errorf("lost claim: got %v, row %+v, claims %v; want commit-unknown, the row as it was, no claim", r, next.Outbox[0], next.Claims)
	}
	claimed, _ := s.Claim("A")
	sent, _ := claimed.Send("A", model.Request{})
	next, r, _ := sent.SettleCommitLost("A")
	want := sent.Outbox[0]
	want.LastError = model.LocalCommitUnknown
	if _, holds := next.Claims["A"]; r != model.ResultCommitUnknown || holds || next.Outbox[0] != want {
		t.Errorf("lost settle: got %v, claim held %t, row %+v; want commit-unknown, the claim ended, row %+v", r, holds, next.Outbox[0], want)
	}
	refused, _ := claimed.Send("A", model.Request{Network: model.ReceiverBusy})
	if next, r, _ := refused.SettleCommitLost("A"); r != model.ResultBusy || next.Outbox[0] != refused.Outbox[0] {
		t.Errorf("lost cause: got %v, row %+v; want busy, the row as it was", r, next.Outbox[0])
	}
}

// TestLostCommitReplies checks what a write whose commit committed but
// whose reply was lost leaves: the write stands (an approval, a claim's
// lease and attempt, a settle's outcome) and the writer hears that the
// outcome is unknown; a settle's worker records that over a row still
// pending, and hears what its send heard when the write was the cause's.
func TestLostCommitReplies(t *testing.T) {
	s := model.New(3)
	s, v, _ := s.ApproveRefused("case-1", "t", model.CommitReplyLost)
	if v != model.CommitUnknown || len(s.Outbox) != 1 {
		t.Fatalf("approval: got %v with %d rows, want commit-unknown and the row", v, len(s.Outbox))
	}
	if _, v, _ := s.ApproveRefused("case-1", "other", model.CommitReplyLost); v != model.Conflicting {
		t.Errorf("conflicting approval: got %v, want conflicting (it never commits)", v)
	}
	claimed, c := s.Claim("A")
	next, r := s.ClaimCommitReplyLost("A")
	if _, holds := next.Claims["A"]; r != model.ResultCommitUnknown || holds || next.Outbox[0] != claimed.Outbox[0] || c.Result != model.ResultClaimed {
		t.Errorf("claim: got %v, claim held %t, row %+v; want commit-unknown, no claim in flight, row %+v", r, holds, next.Outbox[0], claimed.Outbox[0])
	}
	if next, r, _ := s.Deliver(model.Delivery{App: model.CommitReplyLost}); r != model.ResultCommitUnknown || next.Outbox[0].Attempts != 1 || len(next.Claims) != 0 {
		t.Errorf("delivery: got %v, row %+v, claims %v; want commit-unknown, the attempt counted, no claim in flight", r, next.Outbox[0], next.Claims)
	}
	for _, tt := range []struct {
		name    string
		req     model.Request
		result  model.Result
		state   string
		lastErr string
	}{
		{"task", model.Request{}, model.ResultCommitUnknown, model.Sent, ""},
		{"transient", model.Request{Network: model.Offline}, model.ResultCommitUnknown, model.Pending, model.LocalCommitUnknown},
		{"receiver busy", model.Request{Network: model.ReceiverBusy}, model.ResultBusy, model.Pending, model.LocalBusy},
	} {
		sent, _ := claimed.Send("A", tt.req)
		next, r, _ := sent.SettleCommitReplyLost("A", 0)
		row := next.Outbox[0]
		if _, holds := next.Claims["A"]; r != tt.result || holds || row.State != tt.state || row.LastError != tt.lastErr {
			t.Errorf("settle after %s: got %v, claim held %t, row %+v; want %v, the claim ended, %s with last error %q", tt.name, r, holds, row, tt.result, tt.state, tt.lastErr)
		}
	}
	if _, r, _ := s.SettleCommitReplyLost("A", 0); r != model.ResultOutOfTurn {
		t.Errorf("settle without a claim: got %v, want out-of-turn", r)
	}
}

// TestAnswersOverHTTP: what a worker hears of a status a hop answers
// itself (the receiver never acted), and of an answer spoiled after the
// receiver acted (its task exists all the same), as the spec's sender
// table says.
func TestAnswersOverHTTP(t *testing.T) {
	tests := []struct {
		in    model.Request
		heard model.Result
		tasks int
	}{
		{model.Request{Network: model.Answered, Status: 409}, model.ResultTransient, 0},
		{model.Request{Network: model.Answered, Status: 422}, model.ResultConflict, 0},
		{model.Request{Network: model.Answered, Status: 503}, model.ResultTransient, 0},
		{model.Request{Network: model.Answered, Status: 500}, model.ResultTransient, 0},
		{model.Request{Network: model.Answered, Status: 504}, model.ResultTransient, 0},
		{model.Request{Network: model.Answered, Status: 400}, model.ResultRejected, 0},
		{model.Request{Network: model.Answered, Status: 404}, model.ResultRejected, 0},
		{model.Request{Network: model.Answered, Status: 307}, model.ResultRejected, 0},
		{model.Request{Network: model.Answered, Status: 418}, model.ResultRejected, 0},
		{model.Request{Network: model.Mangled, Mangle: model.CutBody}, model.ResultTransient, 1},
		{model.Request{Network: model.Mangled, Mangle: model.GatewayError}, model.ResultTransient, 1},
		{model.Request{Network: model.Mangled, Mangle: model.NotJSON}, model.ResultRejected, 1},
		{model.Request{Network: model.Mangled, Mangle: model.NoTaskID}, model.ResultRejected, 1},
		{model.Request{Network: model.Mangled, Mangle: model.OtherKey}, model.ResultRejected, 1},
	}
	for _, tt := range tests {
		s := claim(t, opened(t, same), "A")
		s, heard := s.Send("A", tt.in)
		if heard != tt.heard || len(s.Tasks) != tt.tasks {
			t.Errorf("%+v: heard %s with %d tasks, want %s with %d", tt.in, heard, len(s.Tasks), tt.heard, tt.tasks)
		}
	}
}

// TestClaimsDueFirst: with ClaimsDueFirst a claim takes the eligible row
// whose next attempt is earliest (the oldest among equals); without it,
// the oldest eligible row.
func TestClaimsDueFirst(t *testing.T) {
	for _, dueFirst := range []bool{false, true} {
		s := opened(t, func(c *model.Config) { c.ClaimsDueFirst = dueFirst; c.BackoffBase, c.BackoffCap = 1_000, 8_000 })
		s = send(t, claim(t, s, "A"), "A", model.Request{Network: model.Offline}, model.ResultTransient)
		s, _, _ = s.Settle("A", 500) // case-1 due again at start+500
		s = tick(t, s, 1)
		s, _, _ = s.Approve("case-2", "t", false) // due at start+1
		s = tick(t, s, 600)
		s, c := s.Claim("B")
		want := key
		if dueFirst {
			want = key2
		}
		if c.Key != want {
			t.Errorf("due first %v: claimed %s, want %s", dueFirst, c.Key, want)
		}
	}
}
