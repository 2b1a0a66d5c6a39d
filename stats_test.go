package handoff

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReach checks that a default exploration of the real design reaches
// every fault, every outbox transition, every worker result and every
// class of edge input, so that a change to the generators cannot silently
// lose reach. It runs exactly reachChecks sequences, with or without
// -short.
func TestReach(t *testing.T) {
	t.Parallel()
	const reachChecks = 300
	r, err := Explore(t.Context(), ExploreConfig{Checks: reachChecks, Steps: DefaultSteps, Seed: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure != nil {
		t.Fatalf("the real design failed:\n%s", r.Failure.Report(""))
	}
	if got := r.Stats.Sequences.Load(); got != reachChecks {
		t.Errorf("ran %d sequences, want %d", got, reachChecks)
	}
	for _, c := range InputClasses {
		if r.Stats.InputClasses[c] == 0 {
			t.Errorf("input class %q never drawn", c)
		}
	}
	for k := range faultTable {
		if runsOn(k, SQLite) && r.Stats.Faults[k] == 0 {
			t.Errorf("fault %s never took effect", k)
		}
	}
	for _, tr := range []Transition{PendingToSent, PendingToBlockedConflict, PendingToBlockedBudget, PendingToBlockedDeadline,
		PendingToBlockedRetention, PendingToBlockedRejected, PendingToPending, BlockedToPending, BlockedToSent} {
		if r.Stats.Transitions[tr] == 0 {
			t.Errorf("transition %s never happened", tr)
		}
	}
	for _, res := range []AnswerKind{Idle, Sent, Pending, Blocked, Crashed, DatabaseBusy} {
		if r.Stats.Results[res] == 0 {
			t.Errorf("worker result %s never happened", res)
		}
	}
	for _, p := range []string{"claim claimed", "claim idle", "claim blocked", "send task", "send transient", "send conflict",
		"send rejected", "settle sent", "settle pending", "settle blocked", "settle stale", "crash crashed", "tick ticked",
		"requeue done", "reconcile done", "config configured", "stale listed", "send database-busy", "settle database-busy"} {
		if r.Stats.Phases[p] == 0 {
			t.Errorf("step and answer %q never happened", p)
		}
	}
	t.Logf("phases %v", r.Stats.Phases)
	t.Logf("faults %v; transitions %v; results %v; input classes %v", r.Stats.Faults, r.Stats.Transitions, r.Stats.Results, r.Stats.InputClasses)
}

// TestStatsAddAndGob sends Stats with every counter and every map set
// through gob, adds both copies, and checks that each value doubled: a
// lane in another process sends its Stats so, and its run adds them. A
// field of a kind the test does not know fails it, so that a field added
// to Stats cannot be left out of GobEncode or Add.
func TestStatsAddAndGob(t *testing.T) {
	st := NewStats()
	fields := reflect.ValueOf(st).Elem()
	mutex := reflect.TypeFor[sync.Mutex]()
	for i := range fields.NumField() {
		f, name := fields.Field(i), fields.Type().Field(i).Name
		if f.Type() == mutex {
			continue
		}
		switch f.Kind() {
		case reflect.Map:
			f.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.ValueOf(i+1))
		case reflect.Struct:
			switch c := f.Addr().Interface().(type) {
			case *atomic.Int64:
				c.Store(int64(i + 1))
			default:
				t.Fatalf("Stats.%s is a %s, which this test does not know", name, f.Type())
			}
		default:
			t.Fatalf("Stats.%s is a %s, which this test does not know", name, f.Type())
		}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(st); err != nil {
		t.Fatal(err)
	}
	got := NewStats()
	if err := gob.NewDecoder(&b).Decode(got); err != nil {
		t.Fatal(err)
	}
	got.Add(st)
	gotFields := reflect.ValueOf(got).Elem()
	for i := range fields.NumField() {
		f, g, name := fields.Field(i), gotFields.Field(i), fields.Type().Field(i).Name
		if f.Type() == mutex {
			continue
		}
		switch c := g.Addr().Interface().(type) {
		case *atomic.Int64:
			if c.Load() != int64(2*(i+1)) {
				t.Errorf("Stats.%s: got %d, want %d", name, c.Load(), 2*(i+1))
			}
		default:
			want := reflect.MakeMap(f.Type())
			want.SetMapIndex(reflect.ValueOf("k").Convert(f.Type().Key()), reflect.ValueOf(2*(i+1)))
			if !reflect.DeepEqual(g.Interface(), want.Interface()) {
				t.Errorf("Stats.%s: got %v, want %v", name, g.Interface(), want.Interface())
			}
		}
	}
}
