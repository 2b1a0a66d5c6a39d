package handoff

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// send has a named worker send the row it claimed, outside any
// transaction, over a network with an optional fault; the worker keeps
// what it heard until it settles. A throttled answer carries the
// receiver's retry hint.
//
//	send worker=A [fault=offline|lost-reply|duplicate-request|foreign-task|refused|throttled retry-after=MS]
func (e *Env) send(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only("worker", "fault", "retry-after"); err != nil {
		return stepResult{}, err
	}
	fault, err := faultArg(s, faults.SendKinds...)
	if err != nil {
		return stepResult{}, err
	}
	var hint int64
	if v, ok := s.Arg("retry-after"); ok {
		if hint, err = strconv.ParseInt(v, 10, 64); err != nil || hint < 0 || fault != faults.Throttled {
			return stepResult{}, fmt.Errorf("%w: retry-after=%q goes with fault=throttled, a whole number of milliseconds", ErrScenario, v)
		}
	}
	network, err := e.network(fault, time.Duration(hint)*time.Millisecond)
	if err != nil {
		return stepResult{}, err
	}
	name, w, err := e.worker(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	var r stepResult
	if w.claim == nil || w.heard {
		r.line, r.got = fmt.Sprintf("%s has nothing claimed to send", name), Answer{Kind: OutOfTurn}
	} else {
		if fault != "" {
			r.fired = fault
		}
		if w.claim.Fence > e.actedFence[w.claim.Key] {
			network = faults.Counted(e.sends, network)
		}
		w.taskID, w.sendErr = w.app.Send(ctx, *w.claim, network)
		w.heard = true
		r.got = heardAnswer(w.taskID, w.sendErr, w.claim.Key)
		r.line = fmt.Sprintf("%s sent %s and heard %s", name, w.claim.Key, r.got)
		if r.got.Kind == Error {
			r.line += ": " + w.sendErr.Error()
		}
	}
	c := e.model.Claims[name]
	var heard model.Result
	e.model, heard = e.model.Send(name, model.Request{Network: faultTable[fault].network, Foreign: faults.ForeignPayload, RetryAfter: hint})
	r.key = c.Key
	r.want = Answer{Kind: resultAnswers[heard], Key: c.Key}
	if heard == model.ResultTask {
		r.want.N = e.model.Claims[name].RemoteID
	}
	if heard == model.ResultOutOfTurn {
		r.want.Key = ""
	}
	return r, nil
}

// heardAnswer is what a send heard: a task id, a transient failure, a
// conflict, a rejection, or another error.
func heardAnswer(taskID int64, err error, key string) Answer {
	switch {
	case err == nil:
		return Answer{Kind: Task, Key: key, N: taskID}
	case errors.Is(err, system.ErrTransient):
		return Answer{Kind: Transient, Key: key}
	case errors.Is(err, system.ErrKeyConflict):
		return Answer{Kind: Conflict, Key: key}
	case errors.Is(err, system.ErrRejected):
		return Answer{Kind: Rejected, Key: key}
	}
	return Answer{Kind: Error, Key: key}
}
