package sim

import (
	"bytes"
	"encoding/gob"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/outboxlab/handoff/model"
)

// TestStatsAddAndGob sends Stats with every counter and every map set
// through gob, adds both copies, and checks that each value doubled: a
// lane in another process sends its Stats so, and its run adds them. A
// field of a kind the test does not know fails it, so that a field added
// to Stats cannot be left out of GobEncode or Add.
func TestStatsAddAndGob(t *testing.T) {
	// mapKey is a key of type k that is not its zero value where k is a
	// string or an integer, its zero value otherwise.
	mapKey := func(k reflect.Type) reflect.Value {
		switch k.Kind() {
		case reflect.String:
			return reflect.ValueOf("k").Convert(k)
		case reflect.Int:
			return reflect.ValueOf(7).Convert(k)
		}
		return reflect.Zero(k)
	}
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
			f.SetMapIndex(mapKey(f.Type().Key()), reflect.ValueOf(i+1))
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
			want.SetMapIndex(mapKey(f.Type().Key()), reflect.ValueOf(2*(i+1)))
			if !reflect.DeepEqual(g.Interface(), want.Interface()) {
				t.Errorf("Stats.%s: got %v, want %v", name, g.Interface(), want.Interface())
			}
		}
	}
}

// TestStatsCountTransitionsAndShapes: what one step counts: how a row's
// change is named (a row blocked with its last error transient spent its
// budget on that failure), a fault's third step in a row, and pending
// rows at three attempt counts at once.
func TestStatsCountTransitionsAndShapes(t *testing.T) {
	row := func(key, state string, attempts int, lastError string) model.Row {
		return model.Row{Key: key, State: state, Attempts: attempts, LastError: lastError}
	}
	deliver := NewStep("deliver", "fault", "offline")
	none := map[Shape]int{}
	for _, tt := range []struct {
		name          string
		before, after []model.Row
		burst         int
		transitions   map[Transition]int
		shapes        map[Shape]int
	}{
		{"a retry", []model.Row{row("a", model.Pending, 0, "")}, []model.Row{row("a", model.Pending, 1, model.Transient)}, 1,
			map[Transition]int{PendingToPending: 1}, none},
		{"a last transient failure", []model.Row{row("a", model.Pending, 2, model.Transient)}, []model.Row{row("a", model.Blocked, 3, model.Transient)}, 1,
			map[Transition]int{PendingToBlockedBudget: 1}, none},
		{"a conflict", []model.Row{row("a", model.Pending, 0, "")}, []model.Row{row("a", model.Blocked, 1, model.Conflict)}, 0,
			map[Transition]int{PendingToBlockedConflict: 1}, none},
		{"a fault the second step in a row", nil, nil, 2, map[Transition]int{}, none},
		{"a fault the third step in a row", nil, nil, 3, map[Transition]int{}, map[Shape]int{FaultBurst: 1}},
		{"two attempt counts", nil, []model.Row{row("a", model.Pending, 0, ""), row("b", model.Pending, 1, ""), row("c", model.Pending, 1, "")}, 0,
			map[Transition]int{}, none},
		{"three attempt counts, one not pending", nil, []model.Row{row("a", model.Pending, 0, ""), row("b", model.Pending, 1, ""), row("c", model.Sent, 2, "")}, 0,
			map[Transition]int{}, none},
		{"three attempt counts", nil, []model.Row{row("a", model.Pending, 0, ""), row("b", model.Pending, 1, ""), row("c", model.Pending, 2, "")}, 0,
			map[Transition]int{}, map[Shape]int{AttemptSpread: 1}},
	} {
		st := NewStats()
		st.count(deliver, stepResult{got: Answer{Kind: Pending}}, model.Observation{Outbox: tt.before}, model.Observation{Outbox: tt.after}, tt.burst, nil)
		if !reflect.DeepEqual(st.Transitions, tt.transitions) || !reflect.DeepEqual(st.Shapes, tt.shapes) {
			t.Errorf("%s: transitions %v and shapes %v, want %v and %v", tt.name, st.Transitions, st.Shapes, tt.transitions, tt.shapes)
		}
	}
}
