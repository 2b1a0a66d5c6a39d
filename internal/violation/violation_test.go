package violation

import (
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// TestAsDocumented: a design is caught as documented by its invariant
// reported first, or by the alternative its entry names reported with it
// at the same step; another invariant reported first is not, even when
// the documented one broke too.
func TestAsDocumented(t *testing.T) {
	retention, err := designs.Lookup("ignore-retention")
	if err != nil {
		t.Fatal(err)
	}
	budget, err := designs.Lookup("no-budget")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		d    designs.Design
		v    Violation
		want bool
	}{
		{retention, Violation{Invariant: 6}, true},
		{retention, Violation{Invariant: 1, Also: []int{6}}, true},
		{retention, Violation{Invariant: 1}, false},
		{retention, Violation{Invariant: 3, Also: []int{6}}, false},
		{budget, Violation{Invariant: 6}, true},
		{budget, Violation{Invariant: 4, Also: []int{6}}, false},
	}
	for _, tt := range tests {
		if got := tt.v.AsDocumented(tt.d); got != tt.want {
			t.Errorf("%s, invariant %d also %v: AsDocumented %v, want %v", tt.d.Name, tt.v.Invariant, tt.v.Also, got, tt.want)
		}
	}
}
