package sim

import (
	"context"
	"fmt"
	"strconv"

	"github.com/outboxlab/handoff/model"
)

// reconcile has a person record what they found in the CRM: the task id
// of the key, or that it holds none.
//
//	reconcile case=case-1 remote-id=1
//	reconcile case=case-1 absent=true
func (e *Env) reconcile(ctx context.Context, s Step) (stepResult, error) {
	key, err := caseKey(s)
	if err != nil {
		return stepResult{}, err
	}
	id, hasID := s.Arg("remote-id")
	absent, _ := s.Arg("absent")
	var r stepResult
	var v model.OpVerdict
	switch {
	case hasID && absent == "":
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return stepResult{}, fmt.Errorf("%w: remote-id=%q is not a whole number", ErrScenario, id)
		}
		r = e.operated(fmt.Sprintf("reconcile %s as task %d", key, n), key, e.operator().Reconcile(ctx, key, n, operator.Actor, operator.Reason))
		e.model, v = e.model.Reconcile(operator, key, n)
	case !hasID && absent == "true":
		r = e.operated("reconcile "+key+" as absent", key, e.operator().ReconcileAbsent(ctx, key, operator.Actor, operator.Reason))
		e.model, v = e.model.ReconcileAbsent(operator, key)
	default:
		return stepResult{}, fmt.Errorf("%w: reconcile takes remote-id=N or absent=true", ErrScenario)
	}
	r.want = Answer{Kind: opAnswers[v], Key: key}
	e.actedOn(key, r.got)
	r.auditDiff, err = e.audited(ctx)
	return r, err
}
