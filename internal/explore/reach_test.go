package explore

import (
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
)

// notDrawn are the directives the generators do not draw as steps, and
// why: Property itself starts a sequence with them, or ends it.
var notDrawn = map[string]string{
	"design":    "a sequence of a fragile design starts with its design line",
	"transport": "an exploration over HTTP starts every sequence with a transport line",
	"backend":   "an exploration names its backend; only a scenario of one backend's fault needs the line",
	"converge":  "every sequence ends with one",
}

// TestReach checks that a default exploration of the real design reaches
// every fault, every outbox transition, every worker result and every
// class of edge input, so that a change to the generators cannot silently
// lose reach. It runs exactly reachChecks sequences, too many for the
// quick suite: -short leaves it to go test ./....
func TestReach(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestReach draws 600 sequences of the real design; run without -short for the generators' reach")
	}
	t.Parallel()
	const reachChecks = 600
	r, err := Run(t.Context(), Config{Checks: reachChecks, Steps: DefaultSteps, Seed: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure != nil {
		t.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
	}
	if got := r.Stats.Sequences.Load(); got != reachChecks {
		t.Errorf("ran %d sequences, want %d", got, reachChecks)
	}
	for _, c := range sim.InputClasses {
		if r.Stats.InputClasses[c] == 0 {
			t.Errorf("input class %q never drawn", c)
		}
	}
	for _, sh := range sim.Shapes {
		if r.Stats.Shapes[sh] == 0 {
			t.Errorf("shape %q never reached", sh)
		}
	}
	for _, k := range sim.Faults() {
		if sim.RunsOn(k, backend.SQLite) && !sim.HTTPOnly(k) && r.Stats.Faults[k] == 0 {
			t.Errorf("fault %s never took effect", k)
		}
	}
	for _, tr := range []sim.Transition{sim.PendingToSent, sim.PendingToBlockedConflict, sim.PendingToBlockedBudget, sim.PendingToBlockedDeadline,
		sim.PendingToBlockedRetention, sim.PendingToBlockedRejected, sim.PendingToPending, sim.BlockedToPending, sim.BlockedToSent} {
		if r.Stats.Transitions[tr] == 0 {
			t.Errorf("transition %s never happened", tr)
		}
	}
	for _, res := range []sim.AnswerKind{sim.Idle, sim.Sent, sim.Pending, sim.Blocked, sim.Crashed, sim.DatabaseBusy} {
		if r.Stats.Results[res] == 0 {
			t.Errorf("worker result %s never happened", res)
		}
	}
	for _, p := range []string{"claim claimed", "claim idle", "claim blocked", "send task", "send transient", "send conflict",
		"send rejected", "settle sent", "settle pending", "settle blocked", "settle stale", "crash crashed", "tick ticked",
		"requeue done", "reconcile done", "config configured", "stale listed", "send database-busy", "settle database-busy",
		"pipe sent", "pipe pending", "pipe idle", "pipe crashed", "pipe database-busy", "flush sent", "flush idle"} {
		if r.Stats.Phases[p] == 0 {
			t.Errorf("step and answer %q never happened", p)
		}
	}
	for _, d := range sim.Directives() {
		if why, ok := notDrawn[d]; ok {
			t.Logf("directive %s is not drawn: %s", d, why)
			continue
		}
		drawn := d == "approve" && len(r.Stats.InputClasses) > 0 || d == "deliver" && len(r.Stats.Results) > 0
		for p := range r.Stats.Phases {
			drawn = drawn || strings.HasPrefix(p, d+" ")
		}
		if !drawn {
			t.Errorf("directive %s is never drawn (draw it in the generators, or say in notDrawn why not)", d)
		}
	}
	t.Logf("phases %v", r.Stats.Phases)
	t.Logf("faults %v; transitions %v; results %v; input classes %v; shapes %v", r.Stats.Faults, r.Stats.Transitions, r.Stats.Results, r.Stats.InputClasses, r.Stats.Shapes)
}
