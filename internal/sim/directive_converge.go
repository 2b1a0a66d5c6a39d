package sim

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// converge turns faults off and delivers until the worker is idle. The
// step claims convergence: invariant 7 checks what it leaves, and a worker
// still busy at the limit (Busy) breaks it.
//
//	converge
func (e *Env) converge(ctx context.Context, s Step) (stepResult, error) {
	// Faults stop and time passes every lease and backoff: the model says
	// how far, and the system's clock follows.
	next, m := e.model.Converge()
	e.now = next.Now
	// No correct worker needs more than one claim per attempt, one block
	// and one idle answer per row.
	limit := (len(e.before.Outbox)+1)*(e.model.MaxAttempts+2) + 1
	network, err := e.network("", model.Request{})
	if err != nil {
		return stepResult{}, err
	}
	r := stepResult{converging: true}
	var n int64
	for {
		d, err := e.app.DeliverOne(ctx, faults.Counted(e.sends, network))
		n++
		if err != nil {
			r.line, r.got = fmt.Sprintf("error on delivery %d: %s", n, system.OneLine(err.Error())), Answer{Kind: Error}
			break
		}
		if d.Result == system.Idle {
			r.line, r.got = "converged after "+words.HowMany(n, "delivery"), Answer{Kind: Idle, N: n}
			break
		}
		if n == int64(limit) {
			r.line, r.got = fmt.Sprintf("not idle after %d deliveries", n), Answer{Kind: Busy, N: n}
			break
		}
	}
	e.model = next
	r.want = Answer{Kind: Idle, N: int64(m)}
	return r, nil
}
