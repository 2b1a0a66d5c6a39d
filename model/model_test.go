package model_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/model"
)

const key = model.KeyPrefix + "case-1"

func TestAction(t *testing.T) {
	tests := []struct {
		caseID, title string
		wantPayload   string // empty: invalid
	}{
		{"case-1", "  Call back\t", `{"case_id":"case-1","title":"Call back"}`},
		{"c", "a\u2028b <&>", "{\"case_id\":\"c\",\"title\":\"a\u2028b <&>\"}"},
		{"c", "q\"b\\\x1f", `{"case_id":"c","title":"q\"b\\\u001f"}`},
		{"c", strings.Repeat("é", 160), `{"case_id":"c","title":"` + strings.Repeat("é", 160) + `"}`},
		{"c", strings.Repeat("é", 161), ""},
		{strings.Repeat("a", 81), "t", ""},
		{"a_b", "t", ""},
		{"c", "\u2028", ""}, // only white space
		{"c", "\xff", ""},
	}
	for _, tt := range tests {
		a, ok := model.Action(tt.caseID, tt.title)
		if ok != (tt.wantPayload != "") || a.Payload != tt.wantPayload {
			t.Errorf("Action(%q, %q): got %q, %v; want %q", tt.caseID, tt.title, a.Payload, ok, tt.wantPayload)
		}
	}
}

// step is one input to the model in a table of transitions.
type step func(model.State) (model.State, string)

func approve(caseID, title string, crash bool) step {
	return func(s model.State) (model.State, string) {
		s, v, _ := s.Approve(caseID, title, crash)
		return s, string(v)
	}
}

const foreign = `{"note":"other content"}`

func deliver(net model.Network, crash model.Crash) step {
	return func(s model.State) (model.State, string) {
		s, r, _ := s.Deliver(model.Delivery{Network: net, Crash: crash, Foreign: foreign})
		return s, string(r)
	}
}

var ok = deliver(model.Delivered, model.NoCrash)

func TestTransitions(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		results []string
		row     model.Row
		tasks   int
	}{
		{"lost reply then retry", []step{approve("case-1", "t", false), deliver(model.LostReply, model.NoCrash), ok, ok},
			[]string{"recorded", "pending", "sent", "idle"}, model.Row{Key: key, State: model.Sent, Attempts: 2, RemoteID: 1}, 1},
		{"offline until the budget is spent", []step{approve("case-1", "t", false), deliver(model.Offline, model.NoCrash), deliver(model.Offline, model.NoCrash), deliver(model.Offline, model.NoCrash), ok},
			[]string{"recorded", "pending", "pending", "blocked", "idle"}, model.Row{Key: key, State: model.Blocked, Attempts: 3, LastError: model.Transient}, 0},
		{"crashes after the reply until the budget is spent", []step{approve("case-1", "t", false), deliver(model.Delivered, model.CrashAfterReply), deliver(model.Delivered, model.CrashAfterReply), deliver(model.Delivered, model.CrashAfterReply), ok},
			[]string{"recorded", "crashed", "crashed", "crashed", "blocked"}, model.Row{Key: key, State: model.Blocked, Attempts: 3, LastError: model.BudgetExhausted}, 1},
		{"crash before the send counts the attempt", []step{approve("case-1", "t", false), deliver(model.Delivered, model.CrashBeforeSend)},
			[]string{"recorded", "crashed"}, model.Row{Key: key, State: model.Pending, Attempts: 1}, 0},
		{"other content at the receiver blocks", []step{approve("case-1", "t", false), deliver(model.ForeignTask, model.NoCrash), ok},
			[]string{"recorded", "blocked", "idle"}, model.Row{Key: key, State: model.Blocked, Attempts: 1, LastError: model.Conflict}, 1},
		{"other content after a lost reply is refused", []step{approve("case-1", "t", false), deliver(model.LostReply, model.NoCrash), deliver(model.ForeignTask, model.NoCrash)},
			[]string{"recorded", "pending", "sent"}, model.Row{Key: key, State: model.Sent, Attempts: 2, RemoteID: 1}, 1},
		{"a duplicate request is one task", []step{approve("case-1", "t", false), deliver(model.DuplicateRequest, model.NoCrash)},
			[]string{"recorded", "sent"}, model.Row{Key: key, State: model.Sent, Attempts: 1, RemoteID: 1}, 1},
		{"repeat, conflict, invalid and crashed approvals change nothing", []step{approve("case-1", "t", false), approve("case-1", " t ", false), approve("case-1", "u", false), approve("", "t", false), approve("case-2", "t", true)},
			[]string{"recorded", "repeated", "conflict", "invalid", "crashed"}, model.Row{Key: key, State: model.Pending}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := model.New(3)
			var results []string
			for _, st := range tt.steps {
				var r string
				s, r = st(s)
				results = append(results, r)
			}
			if diff := cmp.Diff(tt.results, results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if len(s.Outbox) != 1 || untimed(s.Outbox[0]) != tt.row {
				t.Errorf("got rows %+v, want [%+v]", s.Outbox, tt.row)
			}
			if len(s.Tasks) != tt.tasks {
				t.Errorf("got %d tasks, want %d", len(s.Tasks), tt.tasks)
			}
		})
	}
}

// TestTransitionsArePure checks that a transition never changes the state
// it was given: the harness keeps old states to compare against.
func TestTransitionsArePure(t *testing.T) {
	s, _, _ := model.New(3).Approve("case-1", "t", false)
	s, _ = s.Claim("B")
	s, _ = s.Send("B", model.Request{Network: model.LostReply})
	s, _, _ = s.Settle("B", 0)
	s, _, _ = s.Approve("case-2", "t", false)
	s, _ = s.Claim("C") // the claims, memory and audit are not nil
	s, _ = s.Reconcile(model.Operator{}, key2, 1)
	s, _, _ = s.Approve("case-3", "t", false)
	claimed, _ := s.Claim("A")
	sent, _ := claimed.Send("A", model.Request{Network: model.ForeignTask, Foreign: foreign})
	blocked, _, _ := sent.Deliver(model.Delivery{Network: model.Refused})
	transitions := []struct {
		name string
		from model.State
		do   func(model.State)
	}{
		{"deliver a lost reply", s, func(s model.State) { s.Deliver(model.Delivery{Network: model.LostReply}) }},
		{"deliver to a foreign task", s, func(s model.State) { s.Deliver(model.Delivery{Network: model.ForeignTask, Foreign: foreign}) }},
		{"approve", s, func(s model.State) { s.Approve("case-4", "t", false) }},
		{"converge", s, func(s model.State) { s.Converge() }},
		{"claim", s, func(s model.State) { s.Claim("A") }},
		{"send", claimed, func(s model.State) { s.Send("A", model.Request{}) }},
		{"crash", claimed, func(s model.State) { s.Crash("A") }},
		{"restart", claimed, func(s model.State) { s.Restart("A") }},
		{"tick", claimed, func(s model.State) { s.Tick(5) }},
		{"settle", sent, func(s model.State) { s.Settle("A", 0) }},
		{"reconcile", sent, func(s model.State) { s.Reconcile(model.Operator{}, key, 1) }},
		{"reconcile absent", sent, func(s model.State) { s.ReconcileAbsent(model.Operator{}, key) }},
		{"stale", sent, func(s model.State) { s.Stale(0) }},
		{"requeue", blocked, func(s model.State) { s.Requeue(model.Operator{}, key) }},
	}
	for _, tt := range transitions {
		snapshot := cmp.Diff(model.State{}, tt.from)
		tt.do(tt.from)
		if got := cmp.Diff(model.State{}, tt.from); got != snapshot {
			t.Errorf("%s changed its input state:\n%s", tt.name, got)
		}
	}
}

func TestConvergeWithTime(t *testing.T) {
	c := model.Scenario()
	c.BackoffBase = 1_000
	s, _ := model.Open(c)
	for _, id := range []string{"case-1", "case-2", "case-3"} {
		s, _, _ = s.Approve(id, "t", false)
	}
	s, _, _ = s.Deliver(model.Delivery{Network: model.Throttled, RetryAfter: 90_000}) // case-1 waits 90 s
	s, _, _ = s.Deliver(model.Delivery{Network: model.Offline, Jitter: 1_000})        // case-2 waits 1 s
	s, _ = s.Claim("A")                                                               // case-3 leased for 30 s
	s = s.Crash("A")
	s, n := s.Converge()
	if n != 4 || s.Now != start+90_000 {
		t.Errorf("got %d deliveries at %d, want 4 at %d", n, s.Now, start+90_000)
	}
	for _, r := range s.Outbox {
		if r.State != model.Sent || r.LeaseOwner != "" {
			t.Errorf("got %+v, want sent without a lease", r)
		}
	}
	if len(s.Tasks) != 3 {
		t.Errorf("got %d tasks, want 3", len(s.Tasks))
	}
}

func TestDeliverAsTheDefaultWorker(t *testing.T) {
	s, _, _ := model.New(3).Approve("case-1", "t", false)
	if _, r, _ := s.Deliver(model.Delivery{Network: model.Offline, Jitter: 1}); r != model.ResultInvalidJitter {
		t.Errorf("a jitter while backoff is off: got %s, want invalid-jitter", r)
	}
	s, r, _ := s.Deliver(model.Delivery{Network: model.Throttled, RetryAfter: 2_000})
	if r != model.ResultPending || s.Outbox[0].NextAttemptAt != start+2_000 {
		t.Errorf("throttled: got %s and %+v, want pending until %d", r, s.Outbox[0], start+2_000)
	}
	if _, r, _ := s.Deliver(model.Delivery{}); r != model.Idle {
		t.Errorf("before the retry hint: got %s, want idle", r)
	}
	s, r, _ = tick(t, s, 2_000).Deliver(model.Delivery{Crash: model.CrashBeforeSend})
	if r != model.ResultCrashed || s.Outbox[0].LeaseOwner != "" || s.Outbox[0].Fence != 3 {
		t.Errorf("a crash releases the lease at once: got %s and %+v, want fence 3", r, s.Outbox[0])
	}
	s, _ = s.Claim(model.DefaultWorker)
	s, r, _ = s.Deliver(model.Delivery{})
	if r != model.Idle || s.Outbox[0].LeaseOwner != model.DefaultWorker || s.Claims[model.DefaultWorker] != (model.Claim{}) {
		t.Errorf("a claim in flight is dropped and its lease kept: got %s, %+v, %+v", r, s.Outbox[0], s.Claims)
	}
	s, r, _ = s.Deliver(model.Delivery{Network: model.Refused})
	if r != model.Idle {
		t.Errorf("got %s, want idle while the lease lives", r)
	}
	s, r, _ = tick(t, s, 30_000).Deliver(model.Delivery{Network: model.Refused})
	if r != model.ResultBlocked || s.Outbox[0].LastError != model.BudgetExhausted {
		t.Errorf("got %s and %+v, want blocked: the dropped claim counted the third attempt", r, s.Outbox[0])
	}
}

func TestConverge(t *testing.T) {
	s := model.New(3)
	s, _, _ = s.Approve("case-1", "t", false)
	s, _, _ = s.Approve("case-2", "t", false)
	s, n := s.Converge()
	if n != 3 || s.Outbox[0].State != model.Sent || s.Outbox[1].State != model.Sent {
		t.Errorf("got %d deliveries and rows %+v, want 3 and both sent", n, s.Outbox)
	}
}

// untimed is r without the fields of production delivery (times, lease
// and fence): what the single-worker part of the spec observes.
func untimed(r model.Row) model.Row {
	return model.Row{Key: r.Key, State: r.State, Attempts: r.Attempts, RemoteID: r.RemoteID, LastError: r.LastError}
}
