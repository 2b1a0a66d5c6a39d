package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// send has a named worker send the row it claimed, outside any
// transaction, over a network with an optional fault; the worker keeps
// what it heard until it settles. A throttled answer carries the
// receiver's retry hint. A busy receiver database refuses the task, and
// a full one a task that needs another page. Over HTTP a hop may answer
// a status of its own (answered status=N), or spoil the receiver's
// answer (mangled spoil=KIND).
//
//	send worker=A [fault=offline|lost-reply|duplicate-request|foreign-task|refused|throttled retry-after=MS|crm-busy|crm-full|answered status=N|mangled spoil=cut-body|gateway-error|not-json|no-task-id|other-key]
func (e *Env) send(ctx context.Context, s Step) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	req, err := e.sendArgs(s, fault)
	if err != nil {
		return stepResult{}, err
	}
	network, err := e.network(fault, req)
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
		claim := *w.claim
		if ferr := e.withDatabaseFault(ctx, fault, w.app, func() { w.taskID, w.sendErr = w.phases.Send(ctx, claim, network) }); ferr != nil {
			return stepResult{}, ferr
		}
		w.heard = true
		r.got = heardAnswer(w.taskID, w.sendErr, w.claim.Key)
		r.line = fmt.Sprintf("%s sent %s and heard %s", name, w.claim.Key, r.got)
		if r.got.Kind == Error {
			r.line += ": " + system.OneLine(w.sendErr.Error())
		}
	}
	c := e.model.Claims[name]
	before := e.model
	e.model, r.want = predictSend(e.model, name, req)
	r.key = c.Key
	if faultTable[fault].refusal == model.RefusedFull {
		// The task may have found room all the same.
		req.Network, req.RetryAfter = model.Delivered, 0
		alt, want := predictSend(before, name, req)
		r.otherwise = &prediction{alt, want}
	}
	return r, nil
}

// sendArgs reads what a send's fault does from its arguments: a
// throttled answer's retry-after, an answered status, a mangled answer's
// spoiling; each goes with its fault alone.
func (e *Env) sendArgs(s Step, fault faults.Kind) (model.Request, error) {
	var hint int64
	if v, ok := s.Arg("retry-after"); ok {
		var err error
		if hint, err = strconv.ParseInt(v, 10, 64); err != nil || hint < 0 || fault != faults.Throttled {
			return model.Request{}, fmt.Errorf("%w: retry-after=%q goes with fault=throttled, a whole number of milliseconds", ErrScenario, v)
		}
	}
	req := e.request(fault, hint)
	status, hasStatus := s.Arg("status")
	switch n, err := strconv.Atoi(status); {
	case hasStatus != (fault == faults.Answered):
		return model.Request{}, fmt.Errorf("%w: status= goes with fault=answered, and fault=answered with a status", ErrScenario)
	case hasStatus && (err != nil || n < 100 || n > 599):
		return model.Request{}, fmt.Errorf("%w: status=%q is not an HTTP status (100 to 599)", ErrScenario, status)
	case hasStatus:
		req.Status = n
	}
	spoil, hasSpoil := s.Arg("spoil")
	switch {
	case hasSpoil != (fault == faults.Mangled):
		return model.Request{}, fmt.Errorf("%w: spoil= goes with fault=mangled, and fault=mangled with a spoiling", ErrScenario)
	case hasSpoil && !slices.Contains(model.Mangles, model.Mangle(spoil)):
		return model.Request{}, fmt.Errorf("%w: spoil=%q, want one of %v", ErrScenario, spoil, model.Mangles)
	case hasSpoil:
		req.Mangle = model.Mangle(spoil)
	}
	return req, nil
}

// predictSend is the model's state after worker's send of req from s,
// and the answer it predicts: what the worker hears.
func predictSend(s model.State, worker string, req model.Request) (model.State, Answer) {
	c := s.Claims[worker]
	next, heard := s.Send(worker, req)
	want := Answer{Kind: resultAnswers[heard], Key: c.Key}
	switch heard {
	case model.ResultTask:
		want.N = next.Claims[worker].RemoteID
	case model.ResultOutOfTurn:
		want.Key = ""
	}
	return next, want
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
	return Answer{Kind: errorAnswer(err), Key: key}
}
