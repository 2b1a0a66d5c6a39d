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
			if len(s.Outbox) != 1 || s.Outbox[0].Untimed() != tt.row {
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
	before := s
	snapshot := cmp.Diff(model.State{}, s)
	s.Deliver(model.Delivery{Network: model.LostReply})
	s.Deliver(model.Delivery{Network: model.ForeignTask, Foreign: foreign})
	s.Approve("case-3", "t", false)
	s.Converge()
	if got := cmp.Diff(model.State{}, before); got != snapshot {
		t.Errorf("a transition changed its input state:\n%s", got)
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
