package sim

import (
	"context"

	"github.com/outboxlab/handoff/model"
)

// requeue has a person requeue a blocked row: pending, attempts 0,
// eligible now, the same key.
//
//	requeue case=case-1
func (e *Env) requeue(ctx context.Context, s Step) (stepResult, error) {
	key, err := caseKey(s)
	if err != nil {
		return stepResult{}, err
	}
	r := e.operated("requeue "+key, key, e.operator().Requeue(ctx, key, operator.Actor, operator.Reason))
	var v model.OpVerdict
	e.model, v = e.model.Requeue(operator, key)
	r.want = Answer{Kind: opAnswers[v], Key: key}
	e.actedOn(key, r.got)
	r.auditDiff, err = e.audited(ctx)
	return r, err
}
