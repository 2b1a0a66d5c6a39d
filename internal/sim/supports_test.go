package sim

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/model"
)

func TestSupported(t *testing.T) {
	none := designs.Design{Name: "mine"}
	timed := designs.Design{Name: "mine", Supports: designs.Capabilities{Time: true}}
	own := designs.WithReceiver("mine", "", designs.Handoff.OpenCRM)
	tests := []struct {
		d    designs.Design
		step string
		ok   bool
	}{
		{none, "approve case=a title=b", true},
		{none, "deliver fault=lost-reply", true},
		{none, "deliver fault=crash-after-reply", true},
		{none, "restart", true},
		{none, "converge", true},
		{none, "config max-attempts=5", true},
		{none, "tick ms=1000", false},
		{timed, "tick ms=1000", true},
		{none, "claim worker=A", false},
		{none, "send worker=A", false},
		{none, "settle worker=A", false},
		{none, "crash worker=A", false},
		{none, "requeue case=a", false},
		{none, "reconcile case=a absent=true", false},
		{none, "stale older-than=0", false},
		{timed, "config backoff-base=1000 backoff-cap=8000", true},
		{timed, "config lease=5000 send-timeout=2000", false},
		{timed, "config retention=60000", false},
		{none, "deliver fault=app-busy", false},
		{none, "approve case=a title=b fault=app-full", false},
		{designs.Handoff, "deliver fault=app-busy", true},
		{designs.Handoff, "transport name=http", true},
		{own, "transport name=http", false},
		{own, "deliver fault=crm-busy", false},
	}
	for _, tt := range tests {
		s, err := ParseStep(tt.step)
		if err != nil {
			t.Fatal(err)
		}
		err = Supported(tt.d, s)
		if ok := err == nil; ok != tt.ok || !ok && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s on %v: got %v, want supported %t", tt.step, tt.d.Supports, err, tt.ok)
		}
	}
}

func TestShownHidesWhatADesignDoesNotKeep(t *testing.T) {
	row := model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2, FirstClaimedAt: 3,
		LeaseOwner: "A", LeaseUntil: 4, Fence: 5}
	obs := model.Observation{Outbox: []model.Row{row}}
	tests := []struct {
		supports designs.Capabilities
		want     model.Row
	}{
		{designs.Everything, row},
		{designs.Capabilities{Time: true}, model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2}},
		{designs.Capabilities{Time: true, Retention: true}, model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2, FirstClaimedAt: 3}},
		{designs.Capabilities{Time: true, Leases: true, Workers: true}, model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2}},
		{designs.Capabilities{Time: true, Leases: true, Holders: true}, model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2,
			LeaseOwner: "A", LeaseUntil: 4}},
		{designs.Capabilities{Time: true, Leases: true, Fences: true}, model.Row{Key: "k", State: model.Pending, Attempts: 1, CreatedAt: 1, NextAttemptAt: 2, Fence: 5}},
		{designs.Capabilities{}, model.Row{Key: "k", State: model.Pending, Attempts: 1}},
	}
	for _, tt := range tests {
		got := shown(designs.Design{Supports: tt.supports}, obs)
		if diff := cmp.Diff(model.Observation{Outbox: []model.Row{tt.want}}, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.supports, diff)
		}
	}
	if obs.Outbox[0] != row {
		t.Error("shown changed the observation it was given")
	}
	if got := shown(designs.Design{}, model.Observation{}); got.Outbox != nil {
		t.Error("shown made an empty outbox of none")
	}
}

// TestTheRealDesignSupportsTheCorpus: every step of every corpus file of
// the real design (on SQLite) is one it supports, so that nothing is
// skipped or masked for it.
func TestTheRealDesignSupportsTheCorpus(t *testing.T) {
	scenarios := corpusScenarios(t)
	n := 0
	for _, sc := range scenarios {
		if sc.Design() != designs.Handoff.Name {
			continue
		}
		if err := ScenarioSupported(designs.Handoff, sc); err != nil {
			t.Error(err)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d corpus files of the real design", n)
	}
}
