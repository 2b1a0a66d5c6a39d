package sim

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// claim has a named worker claim the oldest eligible row: a lease and an
// attempt, a block instead (budget, time budget, retention), or idle. A
// lost commit loses the claim, whatever it found; a lost reply to the
// commit leaves the claim standing, but the worker sends nothing.
//
//	claim worker=A [fault=commit-lost|commit-reply-lost]
func (e *Env) claim(ctx context.Context, s Step) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	name, w, err := e.worker(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	var r stepResult
	if w.claim != nil {
		r.line, r.got = fmt.Sprintf("%s holds a claim already: settle it first", name), Answer{Kind: OutOfTurn}
	} else {
		var c system.Claim
		var d system.Delivery
		if ferr := e.withDatabaseFault(ctx, fault, w.app, func() { c, d, err = w.phases.ClaimNext(ctx) }); ferr != nil {
			return stepResult{}, ferr
		}
		switch {
		case err != nil:
			r.line, r.got = "error: "+system.OneLine(err.Error()), Answer{Kind: errorAnswer(err)}
		case d.Result == system.ResultPending:
			w.claim = &c
			r.line, r.got = fmt.Sprintf("%s claimed %s: attempt %d, fence %d", name, c.Key, c.Attempt, c.Fence), Answer{Kind: Claimed, Key: c.Key}
			r.claimedForSend = c.Key
		case d.Result == system.Idle:
			r.line, r.got = fmt.Sprintf("%s idle: nothing eligible", name), Answer{Kind: Idle, At: filecheck.Millis(d.NextEligible)}
		default:
			r.line, r.got = fmt.Sprintf("%s blocked %s: %s, nothing sent", name, d.Key, d.LastError), Answer{Kind: Blocked, Key: d.Key}
		}
	}
	if refused := faultTable[fault].refusal; refused != model.Accepted {
		var res model.Result
		switch refused {
		case model.CommitLost:
			e.model, res = e.model.ClaimCommitLost(name)
		case model.CommitReplyLost:
			e.model, res = e.model.ClaimCommitReplyLost(name)
		default:
			return stepResult{}, fmt.Errorf("handoff: claim has no prediction for fault %s", fault)
		}
		if res != model.ResultOutOfTurn {
			r.fired = fault
		}
		r.want = Answer{Kind: resultAnswers[res]}
		return r, nil
	}
	var cr model.ClaimResult
	e.model, cr = e.model.Claim(name)
	r.key = cr.Key
	r.want = Answer{Kind: resultAnswers[cr.Result], Key: cr.Key, At: cr.Wake}
	return r, nil
}
