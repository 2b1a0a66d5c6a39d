package handoff

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// converge turns faults off and delivers until the worker is idle. The
// step claims convergence: invariant 7 checks what it leaves, and a worker
// still busy at the limit (Busy) breaks it.
//
//	converge
func (e *Env) converge(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only(); err != nil {
		return stepResult{}, err
	}
	// No correct worker needs more than one claim per attempt, one block
	// and one idle answer per row.
	limit := (len(e.before.Outbox)+1)*(system.DefaultMaxAttempts+2) + 1
	r := stepResult{converging: true}
	n := 0
	for {
		d, err := e.app.DeliverOne(ctx, faults.Counted(e.sends, e.crm))
		n++
		if err != nil {
			r.line, r.got = fmt.Sprintf("error on delivery %d: %v", n, err), Answer{Kind: Error}
			break
		}
		if d.Result == system.Idle {
			r.line, r.got = "converged after "+plural(n, "delivery", "deliveries"), Answer{Kind: Idle, N: n}
			break
		}
		if n == limit {
			r.line, r.got = fmt.Sprintf("not idle after %d deliveries", n), Answer{Kind: Busy, N: n}
			break
		}
	}
	var m int
	e.model, m = e.model.Converge()
	r.want = Answer{Kind: Idle, N: m}
	return r, nil
}
