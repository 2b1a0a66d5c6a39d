package model_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/model"
)

var ann = model.Operator{Actor: "ann", Reason: "checked the CRM"}

// blocked returns case-1 blocked by a rejected send of A.
func blocked(t *testing.T, change func(*model.Config)) model.State {
	t.Helper()
	s := send(t, claim(t, opened(t, change), "A"), "A", model.Request{Network: model.Refused}, model.ResultRejected)
	s, _, _ = s.Settle("A", 0)
	return s
}

func TestOperatorActions(t *testing.T) {
	retention := func(c *model.Config) { c.Retention = 60_000 }
	leased := func(t *testing.T) model.State { return claim(t, opened(t, same), "A") }
	expired := func(t *testing.T) model.State { return tick(t, leased(t).Crash("A"), 30_000) }
	sent := func(t *testing.T) model.State { s, _, _ := opened(t, same).Deliver(model.Delivery{}); return s }
	requeue := func(s model.State) (model.State, model.OpVerdict) { return s.Requeue(ann, key) }
	reconcile := func(s model.State) (model.State, model.OpVerdict) { return s.Reconcile(ann, key, 7) }
	absent := func(s model.State) (model.State, model.OpVerdict) { return s.ReconcileAbsent(ann, key) }
	tests := []struct {
		name    string
		setup   func(*testing.T) model.State
		act     func(model.State) (model.State, model.OpVerdict)
		verdict model.OpVerdict
		row     model.Row // when done
		action  string
	}{
		{"requeue a blocked row", func(t *testing.T) model.State { return tick(t, blocked(t, same), 5) }, requeue, model.OpDone,
			model.Row{Key: key, State: model.Pending, CreatedAt: start, NextAttemptAt: start + 5, FirstClaimedAt: start, Fence: 2}, model.ActionRequeue},
		{"requeue just before retention", func(t *testing.T) model.State { return tick(t, blocked(t, retention), 49_999) }, requeue, model.OpDone,
			model.Row{Key: key, State: model.Pending, CreatedAt: start, NextAttemptAt: start + 49_999, FirstClaimedAt: start, Fence: 2}, model.ActionRequeue},
		{"requeue past retention", func(t *testing.T) model.State { return tick(t, blocked(t, retention), 50_000) }, requeue, model.OpRetentionPassed, model.Row{}, ""},
		{"requeue a pending row", expired, requeue, model.OpNotBlocked, model.Row{}, ""},
		{"requeue a sent row", sent, requeue, model.OpNotBlocked, model.Row{}, ""},
		{"requeue an unknown key", func(t *testing.T) model.State { return model.New(3) }, requeue, model.OpUnknownKey, model.Row{}, ""},
		{"reconcile a blocked row", func(t *testing.T) model.State { return blocked(t, same) }, reconcile, model.OpDone,
			model.Row{Key: key, State: model.Sent, Attempts: 1, RemoteID: 7, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}, model.ActionReconcile},
		{"reconcile a pending row whose lease ran out", expired, reconcile, model.OpDone,
			model.Row{Key: key, State: model.Sent, Attempts: 1, RemoteID: 7, CreatedAt: start, NextAttemptAt: start, FirstClaimedAt: start, Fence: 2}, model.ActionReconcile},
		{"reconcile a leased row", leased, reconcile, model.OpLeased, model.Row{}, ""},
		{"reconcile a sent row", sent, reconcile, model.OpAlreadySent, model.Row{}, ""},
		{"reconcile an unknown key", func(t *testing.T) model.State { return model.New(3) }, reconcile, model.OpUnknownKey, model.Row{}, ""},
		{"reconcile with no remote id", func(t *testing.T) model.State { return blocked(t, same) },
			func(s model.State) (model.State, model.OpVerdict) { return s.Reconcile(ann, key, 0) }, model.OpInvalidRemoteID, model.Row{}, ""},
		{"reconcile as absent past retention", func(t *testing.T) model.State { return tick(t, blocked(t, retention), 50_000) }, absent, model.OpDone,
			model.Row{Key: key, State: model.Pending, CreatedAt: start, NextAttemptAt: start + 50_000, Fence: 2}, model.ActionReconcileAbsent},
		{"reconcile as absent a pending row whose lease ran out", expired, absent, model.OpDone,
			model.Row{Key: key, State: model.Pending, CreatedAt: start, NextAttemptAt: start + 30_000, Fence: 2}, model.ActionReconcileAbsent},
		{"reconcile as absent a leased row", leased, absent, model.OpLeased, model.Row{}, ""},
		{"reconcile as absent a sent row", sent, absent, model.OpAlreadySent, model.Row{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.setup(t)
			s, v := tt.act(before)
			if v != tt.verdict {
				t.Fatalf("got %s, want %s", v, tt.verdict)
			}
			if v != model.OpDone {
				if diff := cmp.Diff(before, s); diff != "" {
					t.Errorf("a refusal changed the state (-before +after):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tt.row, s.Outbox[0]); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
			entry := model.AuditEntry{At: s.Now, Actor: "ann", Action: tt.action, Key: key, Reason: "checked the CRM"}
			if diff := cmp.Diff([]model.AuditEntry{entry}, s.Audit); diff != "" {
				t.Errorf("audit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStale(t *testing.T) {
	s := blocked(t, same)                     // case-1, created at the start
	s, _, _ = s.Approve("case-2", "t", false) // pending, created at the start
	s = tick(t, s, 100)
	s, _, _ = s.Approve("case-3", "t", false) // pending, created 100 ms later
	s, _, _ = s.Approve("case-4", "t", false)
	s, _ = s.Reconcile(ann, model.KeyPrefix+"case-4", 9) // sent
	s = tick(t, s, 50)
	list, needed := s.Stale(100)
	want := []model.StaleRow{
		{Key: key, State: model.Blocked, Age: 150, Attempts: 1, LastError: model.Rejected},
		{Key: key2, State: model.Pending, Age: 150},
	}
	if diff := cmp.Diff(want, list); diff != "" || !needed {
		t.Errorf("Stale(100): needed %v, (-want +got):\n%s", needed, diff)
	}
	if list, _ := s.Stale(50); len(list) != 2 {
		t.Errorf("Stale(50): got %+v, want rows created more than 50 ms ago only", list)
	}
	if list, _ = s.Stale(49); len(list) != 3 || list[2].Key != model.KeyPrefix+"case-3" {
		t.Errorf("Stale(49): got %+v, want case-3 last", list)
	}
	s, _, _ = s.Deliver(model.Delivery{})
	s, _, _ = s.Deliver(model.Delivery{})
	s, _ = s.Reconcile(ann, key, 1)
	if list, needed := s.Stale(0); list != nil || needed {
		t.Errorf("nothing stale: got %+v, %v", list, needed)
	}
}
