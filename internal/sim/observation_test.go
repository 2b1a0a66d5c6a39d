package sim

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/model"
)

// TestSameObservation: the comparison run after every step agrees with
// cmp.Equal, nil lists apart from empty ones included, and a field added
// to model.Observation must be added to it (the field count says so).
func TestSameObservation(t *testing.T) {
	if n := reflect.TypeFor[model.Observation]().NumField(); n != 3 {
		t.Fatalf("model.Observation has %d fields; sameObservation compares 3: compare the new one too", n)
	}
	row := model.Row{Key: "k", State: model.Pending, Attempts: 1}
	base := model.Observation{
		Approvals: []model.Approval{{Key: "k", Payload: "{}"}},
		Outbox:    []model.Row{row},
		Tasks:     []model.Task{{ID: 1, Key: "k", Payload: "{}"}},
	}
	change := func(f func(*model.Observation)) model.Observation {
		o := model.Observation{Approvals: append([]model.Approval(nil), base.Approvals...),
			Outbox: append([]model.Row(nil), base.Outbox...), Tasks: append([]model.Task(nil), base.Tasks...)}
		f(&o)
		return o
	}
	for _, tt := range []struct {
		name string
		b    model.Observation
	}{
		{"the same", change(func(*model.Observation) {})},
		{"another attempt count", change(func(o *model.Observation) { o.Outbox[0].Attempts = 2 })},
		{"another fence", change(func(o *model.Observation) { o.Outbox[0].Fence = 1 })},
		{"another task id", change(func(o *model.Observation) { o.Tasks[0].ID = 2 })},
		{"another payload", change(func(o *model.Observation) { o.Approvals[0].Payload = "[]" })},
		{"a task more", change(func(o *model.Observation) { o.Tasks = append(o.Tasks, model.Task{ID: 2, Key: "j"}) })},
		{"no tasks, empty", change(func(o *model.Observation) { o.Tasks = []model.Task{} })},
		{"no tasks, nil", change(func(o *model.Observation) { o.Tasks = nil })},
		{"no rows, nil", change(func(o *model.Observation) { o.Outbox = nil })},
		{"no approvals, empty", change(func(o *model.Observation) { o.Approvals = []model.Approval{} })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := sameObservation(base, tt.b), cmp.Equal(base, tt.b); got != want {
				t.Errorf("sameObservation = %v, cmp.Equal = %v", got, want)
			}
		})
	}
	empty, none := model.Observation{Tasks: []model.Task{}}, model.Observation{}
	if got, want := sameObservation(empty, none), cmp.Equal(empty, none); got != want {
		t.Errorf("empty against nil tasks: sameObservation = %v, cmp.Equal = %v", got, want)
	}
}
