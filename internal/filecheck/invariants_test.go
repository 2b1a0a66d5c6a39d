package filecheck

import (
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// TestInvariants: each invariant that files show holds on a handoff that
// went right, and breaks, saying so, on one that went wrong its way;
// without the CRM, those that need its tasks are not checked.
func TestInvariants(t *testing.T) {
	const key, payload = "k", `{"case_id":"case-1"}`
	sound := func() model.Observation {
		return model.Observation{
			Approvals: []model.Approval{{Key: key, Payload: payload}},
			Outbox:    []model.Row{{Key: key, State: model.Sent, Attempts: 2, RemoteID: 7}},
			Tasks:     []model.Task{{ID: 7, Key: key, Payload: payload}, {ID: 8, Key: "other", Payload: faults.ForeignPayload}},
		}
	}
	tests := []struct {
		name   string
		breaks func(o *model.Observation)
		sends  map[string]int
		want   int    // the invariant broken
		detail string // what it says, in part
	}{
		{"a second task for the key", func(o *model.Observation) { o.Tasks = append(o.Tasks, model.Task{ID: 9, Key: key, Payload: payload}) }, nil, 1, "has tasks [7 9]"},
		{"an approval without its row", func(o *model.Observation) {
			o.Approvals = append(o.Approvals, model.Approval{Key: "j", Payload: payload})
		}, nil, 2, "approval j has 0 outbox rows"},
		{"a sent row naming no task", func(o *model.Observation) { o.Outbox[0].RemoteID = 3 }, nil, 3, "the CRM has no task 3"},
		{"attempts past the budget", func(o *model.Observation) { o.Outbox[0].Attempts = 4 }, nil, 4, "the budget is 3"},
		{"more sends than attempts", func(*model.Observation) {}, map[string]int{key: 3}, 4, "k was sent 3 times"},
		{"a task without its approval", func(o *model.Observation) { o.Tasks[1].Payload = payload }, nil, 5, "which no approval has"},
		{"a sent row still leased", func(o *model.Observation) { o.Outbox[0].LeaseOwner = "A" }, nil, 9, `still leased to "A"`},
		{"a blocked row still leased", func(o *model.Observation) {
			o.Outbox[0].State, o.Outbox[0].RemoteID, o.Outbox[0].LastError, o.Outbox[0].LeaseUntil = model.Blocked, 0, "rejected", 5
		}, nil, 9, "is blocked and still leased"},
	}
	for _, inv := range Invariants {
		if detail := inv.Check(Input{Observation: sound(), Budget: 3, Sends: map[string]int{key: 2}}); detail != "" {
			t.Errorf("invariant %d breaks on a sound handoff: %s", inv.Number, detail)
		}
	}
	for _, tt := range tests {
		o := sound()
		tt.breaks(&o)
		for _, inv := range Invariants {
			detail := inv.Check(Input{Observation: o, Budget: 3, Sends: tt.sends})
			if broke := detail != ""; broke != (inv.Number == tt.want) {
				t.Errorf("%s: invariant %d says %q; want only %d broken", tt.name, inv.Number, detail, tt.want)
			}
			if inv.Number == tt.want && !strings.Contains(detail, tt.detail) {
				t.Errorf("%s: invariant %d says %q; want it to say %q", tt.name, inv.Number, detail, tt.detail)
			}
		}
	}
	o := sound()
	o.Tasks = append(o.Tasks, model.Task{ID: 9, Key: key, Payload: payload})
	if findings := checkInvariants(o, 3, false); len(findings) != 0 {
		t.Errorf("without the CRM, a second task is still found: %v", findings)
	}
	if findings := checkInvariants(o, 3, true); len(findings) != 1 || findings[0].Where != "invariant 1 (at most one CRM task per action key)" {
		t.Errorf("with the CRM, a second task gives %v; want invariant 1's finding", findings)
	}
}
