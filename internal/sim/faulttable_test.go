package sim

import (
	"slices"
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// TestFaultTable checks that every fault a step can carry has its row,
// and that every crash has a point and tells the model where it struck.
func TestFaultTable(t *testing.T) {
	for _, k := range slices.Concat([]faults.Kind{faults.CrashBetweenInserts, faults.Restart}, faults.DeliveryKinds, faults.SendKinds, faults.DatabaseKinds) {
		f, ok := faultTable[k]
		if !ok {
			t.Errorf("fault %s has no row in faultTable", k)
			continue
		}
		crashes := f.crash != model.NoCrash || f.crashesApproval
		if (f.point != "") != crashes || crashes && crashAt(f.point) != f {
			t.Errorf("fault %s: point %q, model crash %v, approval crash %t: want a point exactly for a crash, and the crash found at its point", k, f.point, f.crash, f.crashesApproval)
		}
		if database := slices.Contains(faults.DatabaseKinds, k); database != (f.database != "") || database != (f.refusal != model.Accepted) {
			t.Errorf("fault %s: database %q, refusal %v: want both exactly for a fault of a database", k, f.database, f.refusal)
		}
	}
}
