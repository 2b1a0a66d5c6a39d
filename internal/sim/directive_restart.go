package sim

import (
	"context"
	"maps"
	"slices"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// restartStep is every process dying and starting again: every database
// handle closed and reopened from its file. The default worker releases
// its leases at once (one may be left from a delivery whose settle
// failed); a named worker's claim in flight is gone, and it
// releases its leases when it next starts.
//
//	restart
func (e *Env) restartStep(ctx context.Context, s Step) (stepResult, error) {
	for _, name := range slices.Sorted(maps.Keys(e.workers)) {
		e.model = e.model.Crash(name)
	}
	e.model, _ = e.model.Restart(model.DefaultWorker)
	if err := e.restartAll(ctx); err != nil {
		return stepResult{}, err
	}
	return stepResult{line: "restarted: every handle closed and reopened from its file", got: Answer{Kind: Restarted}, want: Answer{Kind: Restarted}, fired: faults.Restart}, nil
}
