package explore

import (
	"testing"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
)

// TestDeliveryWeights: a swarm weighs a delivery without a fault and
// each fault as its levels say, and a swarm that turned them all down
// still delivers, plainly, as by default: the draw needs a weight.
func TestDeliveryWeights(t *testing.T) {
	mixOf := func(plain, fault level) mix {
		m := mix{plain: plain, faults: map[faults.Kind]level{}}
		for _, k := range sim.FaultsOf("deliver") {
			m.faults[k] = fault
		}
		return m
	}
	for _, tt := range []struct {
		name         string
		m            mix
		plain, fault int
	}{
		{"plain often, faults seldom", mixOf(often, seldom), plainWeight[often], 0},
		{"plain seldom, faults often", mixOf(seldom, often), 0, faultWeight[often]},
		{"everything seldom", mixOf(seldom, seldom), plainWeight[byDefault], 0},
	} {
		w := tt.m.deliveryWeights()
		if len(w) != 1+len(sim.FaultsOf("deliver")) || w[0] != tt.plain {
			t.Errorf("%s: weights %v, want %d for a plain delivery first", tt.name, w, tt.plain)
			continue
		}
		for i, k := range sim.FaultsOf("deliver") {
			if w[i+1] != tt.fault {
				t.Errorf("%s: %s weighs %d, want %d", tt.name, k, w[i+1], tt.fault)
			}
		}
	}
}
