package sim

import (
	"context"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// flush has a pipelined worker make one call of Flush, as a worker that
// stops does: it records the answer of its last send, or sends the row
// it claimed ahead (meeting the fault, taking slow milliseconds) and
// records its answer, or returns a delivery it made and did not return;
// or says nothing is left.
//
//	flush worker=P [slow=MS] [jitter=MS] [fault=offline|lost-reply|duplicate-request|foreign-task|refused]
func (e *Env) flush(ctx context.Context, s Step) (stepResult, error) {
	return e.pipeCall(ctx, s, func(m model.State, name string, step model.PipeStep) (model.State, model.PipeResult) {
		next, r := m.PipeFlush(name, step)
		if !r.Flushed && r.Result != model.ResultInvalidJitter {
			r.Result = model.Idle // nothing left: the worker answers as an idle one
		}
		return next, r
	}, func(ctx context.Context, p designs.Pipe) (system.Delivery, bool, error) {
		return p.Flush(ctx)
	})
}
