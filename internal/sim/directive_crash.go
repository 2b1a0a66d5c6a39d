package sim

import (
	"context"
	"fmt"
)

// crash kills a named worker's process: its claim in flight is gone and
// its lease stays until it runs out, or until the worker starts again.
//
//	crash worker=A
func (e *Env) crash(ctx context.Context, s Step) (stepResult, error) {
	name, w, err := e.worker(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	if err := w.app.Close(); err != nil {
		return stepResult{}, fmt.Errorf("handoff: crashing worker %s: %w", name, err)
	}
	delete(e.workers, name)
	e.model = e.model.Crash(name)
	return stepResult{line: fmt.Sprintf("%s crashed: its lease stays until it runs out", name), got: Answer{Kind: Crashed}, want: Answer{Kind: Crashed}}, nil
}
