package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// approve records an approval; case and title may be missing (then empty).
// A busy app database refuses it; a full one refuses a new approval that
// needs another page; a lost commit loses a new approval or a repeat; a
// lost reply to the commit records it all the same. Either way the app
// hears that the outcome is unknown.
//
//	approve case=case-104 title="Call about the approved repair plan" [fault=crash-between-inserts|app-busy|app-full|commit-lost|commit-reply-lost]
func (e *Env) approve(ctx context.Context, s Step) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	caseID, _ := s.Arg("case")
	title, _ := s.Arg("title")

	var key string
	e.injector.Arm(faults.Point(fault))
	if ferr := e.withDatabaseFault(ctx, fault, e.app, func() { key, err = e.app.RecordApproval(ctx, caseID, title) }); ferr != nil {
		return stepResult{}, ferr
	}
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
		r.line, r.got = "refused: "+system.OneLine(err.Error()), Answer{Kind: refusal(err)}
	}

	// The model hears of the crash the step asked for, or of one that
	// struck where the harness enumerates crash points.
	crash := faultTable[fault].crashesApproval || crashAt(crashed).crashesApproval
	var verdict model.Verdict
	if refused := faultTable[fault].refusal; refused != model.Accepted && crashed == "" {
		before := e.model
		e.model, verdict, key = e.model.ApproveRefused(caseID, title, refused)
		if verdict == model.Busy || verdict == model.Full || verdict == model.CommitUnknown {
			r.fired = fault
		}
		if verdict == model.Full {
			// The approval may have found room all the same.
			alt, v, _ := before.Approve(caseID, title, false)
			r.otherwise = &prediction{alt, approvalAnswer(v, key)}
		}
	} else {
		e.model, verdict, key = e.model.Approve(caseID, title, crash)
	}
	if crashed != "" {
		// The default worker started again and released its leases: one
		// may be left from a delivery whose settle failed.
		e.model, _ = e.model.Restart(model.DefaultWorker)
	}
	r.key, r.want = key, approvalAnswer(verdict, key)
	return r, nil
}

// approvalAnswer is the answer the model predicts for an approval of key
// with verdict v.
func approvalAnswer(v model.Verdict, key string) Answer {
	a := Answer{Kind: verdictAnswers[v]}
	if a.Kind == Approved {
		a.Key = key
	}
	return a
}

// refusal classifies a refused approval for comparison with the model.
func refusal(err error) AnswerKind {
	switch {
	case errors.Is(err, system.ErrInvalidInput):
		return Invalid
	case errors.Is(err, system.ErrKeyConflict):
		return Conflict
	}
	return errorAnswer(err)
}
