package sim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// settle has a named worker record what its send heard, fenced: stale,
// and nothing written, when the row moved on since its claim. jitter is
// the backoff drawn for a transient failure, within the ceiling. A busy
// app database refuses the settle, and the cause it would record too: the
// claim ends and the row keeps its lease until it runs out. A lost commit
// loses the settle's write; the worker then records that the outcome is
// unknown as the row's last error, and the row keeps its lease as well.
// A lost reply to the commit leaves the write standing, and the worker
// records the same over it if the row is still pending.
//
//	settle worker=A [jitter=MS] [fault=app-busy|commit-lost|commit-reply-lost]
func (e *Env) settle(ctx context.Context, s Step) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	jitter, err := jitterArg(s)
	if err != nil {
		return stepResult{}, err
	}
	name, w, err := e.worker(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	var r stepResult
	if w.claim == nil || !w.heard {
		r.line, r.got = fmt.Sprintf("%s has nothing sent to settle", name), Answer{Kind: OutOfTurn}
	} else if c := e.model.Claims[name]; c.Heard == model.ResultTransient && (jitter < 0 || jitter > e.model.JitterCeiling(c.Attempt)) {
		return stepResult{}, fmt.Errorf("%w: jitter=%d is outside [0, %d], the backoff ceiling after attempt %d", ErrScenario, jitter, e.model.JitterCeiling(c.Attempt), c.Attempt)
	} else {
		e.jitter = time.Duration(jitter) * time.Millisecond
		var d system.Delivery
		claim := *w.claim
		if ferr := e.withDatabaseFault(ctx, fault, w.app, func() { d, err = w.phases.Settle(ctx, claim, w.taskID, w.sendErr) }); ferr != nil {
			return stepResult{}, ferr
		}
		e.jitter = 0
		key, fence := w.claim.Key, w.claim.Fence
		r.backoffAfter = &attemptOf{key, e.model.Claims[name].Attempt}
		w.claim, w.heard, w.taskID, w.sendErr = nil, false, 0, nil
		if err != nil {
			r.line, r.got = "error: "+system.OneLine(err.Error()), Answer{Kind: errorAnswer(err), Key: key}
		} else {
			r.got = Answer{Kind: workerAnswers[d.Result], Key: key}
			r.settling = true
			if (r.got.Kind == Sent || r.got.Kind == Blocked) && e.cfg.Design.Supports.Fences {
				r.settled = &fenced{key, fence}
			}
			r.line = fmt.Sprintf("%s settled %s: %s", name, key, d.Result)
			if d.LastError != "" {
				r.line += " (" + d.LastError + ")"
			}
		}
	}
	next, res, key := e.model.Settle(name, jitter)
	switch refused := faultTable[fault].refusal; refused {
	case model.Accepted:
	case model.CommitLost:
		next, res, key = e.model.SettleCommitLost(name)
	case model.CommitReplyLost:
		next, res, key = e.model.SettleCommitReplyLost(name, jitter)
	default:
		next, res, key = e.model.SettleRefused(name, refused)
	}
	if fault != "" && res != model.ResultOutOfTurn {
		r.fired = fault
	}
	e.model, r.key = next, key
	r.want = Answer{Kind: resultAnswers[res], Key: key}
	return r, nil
}

// jitterArg reads the step's jitter= argument in milliseconds, 0 when it
// has none.
func jitterArg(s Step) (int64, error) {
	v, ok := s.Arg("jitter")
	if !ok {
		return 0, nil
	}
	jitter, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: jitter=%q is not a whole number of milliseconds", ErrScenario, v)
	}
	return jitter, nil
}
