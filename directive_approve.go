package handoff

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// approve records an approval; case and title may be missing (then empty).
//
//	approve case=case-104 title="Call about the approved repair plan" [fault=crash-between-inserts]
func (e *Env) approve(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only("case", "title", "fault"); err != nil {
		return stepResult{}, err
	}
	fault, err := faultArg(s, faults.CrashBetweenInserts)
	if err != nil {
		return stepResult{}, err
	}
	caseID, _ := s.Arg("case")
	title, _ := s.Arg("title")

	e.injector.Arm(FaultPoint(fault))
	key, err := e.app.RecordApproval(ctx, caseID, title)
	e.injector.Arm("")
	var r stepResult
	crashed := e.injector.Crashed()
	switch {
	case crashed != "":
		r.line, r.got, r.fired = fmt.Sprintf("crashed at %s; restarted", crashed), Answer{Kind: Crashed}, fault
		if err := e.restart(ctx); err != nil {
			return stepResult{}, err
		}
	case err == nil:
		a, _ := system.NewApproval(caseID, title) // valid: the system just accepted it
		r.line, r.got = fmt.Sprintf("approved %s %s", key, visible(a.Payload)), Answer{Kind: Approved, Key: key}
		r.ifUnchanged = " (already approved: nothing changed)"
	default:
		r.line, r.got = "refused: "+err.Error(), Answer{Kind: refusal(err)}
	}

	// The model hears of the crash the step asked for, or of one that
	// struck where the harness enumerates crash points.
	crash := faultTable[fault].crashesApproval || crashAt(crashed).crashesApproval
	var verdict model.Verdict
	e.model, verdict, key = e.model.Approve(caseID, title, crash)
	r.key, r.want = key, Answer{Kind: verdictAnswers[verdict]}
	if r.want.Kind == Approved {
		r.want.Key = key
	}
	return r, nil
}

// refusal classifies a refused approval for comparison with the model.
func refusal(err error) AnswerKind {
	switch {
	case errors.Is(err, system.ErrInvalidInput):
		return Invalid
	case errors.Is(err, system.ErrKeyConflict):
		return Conflict
	}
	return Error
}
