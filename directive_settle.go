package handoff

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/model"
)

// settle has a named worker record what its send heard, fenced: stale,
// and nothing written, when the row moved on since its claim. jitter is
// the backoff drawn for a transient failure, within the ceiling.
//
//	settle worker=A [jitter=MS]
func (e *Env) settle(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only("worker", "jitter"); err != nil {
		return stepResult{}, err
	}
	var jitter int64
	if v, ok := s.Arg("jitter"); ok {
		var err error
		if jitter, err = strconv.ParseInt(v, 10, 64); err != nil {
			return stepResult{}, fmt.Errorf("%w: jitter=%q is not a whole number of milliseconds", ErrScenario, v)
		}
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
		d, err := w.app.Settle(ctx, *w.claim, w.taskID, w.sendErr)
		e.jitter = 0
		key, fence := w.claim.Key, w.claim.Fence
		w.claim, w.heard, w.taskID, w.sendErr = nil, false, 0, nil
		if err != nil {
			r.line, r.got = "error: "+err.Error(), Answer{Kind: Error, Key: key}
		} else {
			r.got = Answer{Kind: workerAnswers[d.Result], Key: key}
			if r.got.Kind == Sent || r.got.Kind == Blocked {
				r.settled = &fenced{key, fence}
			}
			r.line = fmt.Sprintf("%s settled %s: %s", name, key, d.Result)
			if d.LastError != "" {
				r.line += " (" + d.LastError + ")"
			}
		}
	}
	next, res, key := e.model.Settle(name, jitter)
	e.model, r.key = next, key
	r.want = Answer{Kind: resultAnswers[res], Key: key}
	return r, nil
}
