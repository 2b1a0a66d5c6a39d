package sim

import (
	"slices"
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// TestFaultTable checks that every fault of the step mode has its row
// and a directive that takes it (restart is a directive of its own), that
// every crash has a point and tells the model where it struck, and that
// a directive takes no fault the step mode does not inject.
func TestFaultTable(t *testing.T) {
	if got := Faults(); len(got) != len(faults.StepMode.Kinds()) {
		t.Errorf("the fault table has rows for %v, want one for each of %v", got, faults.StepMode.Kinds())
	}
	for _, k := range faults.StepMode.Kinds() {
		f, ok := faultTable[k]
		if !ok {
			t.Errorf("fault %s has no row in faultTable", k)
			continue
		}
		taken := k == faults.Restart
		for _, d := range directives {
			taken = taken || slices.Contains(d.faults, k)
		}
		if !taken {
			t.Errorf("fault %s: no directive takes it (see directives)", k)
		}
		crashes := f.crash != model.NoCrash || f.crashesApproval || f.pipeCrash != model.NoPipeCrash
		if p := faults.Point(k); (p != "") != crashes || crashes && crashAt(p) != f {
			t.Errorf("fault %s: point %q, model crash %v, approval crash %t: want a point exactly for a crash, and the crash found at its point", k, p, f.crash, f.crashesApproval)
		}
		if database := slices.Contains(faults.DatabaseKinds, k); database != (f.database != "") || database != (f.refusal != model.Accepted) {
			t.Errorf("fault %s: database %q, refusal %v: want both exactly for a fault of a database", k, f.database, f.refusal)
		}
	}
	for name, d := range directives {
		for _, k := range d.faults {
			if !faults.StepMode.Injects(k) {
				t.Errorf("directive %s takes fault=%s, which package faults does not mark as the step mode's", name, k)
			}
		}
	}
}
