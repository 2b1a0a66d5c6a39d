package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// deliver makes one delivery attempt with an optional fault. A busy app
// database refuses the claim, and a lost commit loses it; a busy receiver
// database refuses the task, and a full one a task that needs another
// page.
//
// A transient failure with backoff on waits jitter milliseconds (0 if
// none is given), which must be within the backoff ceiling.
//
//	deliver [jitter=MS] [fault=duplicate-request|foreign-task|offline|lost-reply|crash-after-reply|crash-before-send|app-busy|crm-busy|crm-full|commit-lost]
func (e *Env) deliver(ctx context.Context, s Step) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	jitter, err := jitterArg(s)
	if err != nil {
		return stepResult{}, err
	}
	effect := faultTable[fault]
	req := e.request(fault, 0)
	in := model.Delivery{Network: req.Network, RetryAfter: req.RetryAfter, Crash: effect.crash, Foreign: req.Foreign, Jitter: jitter}
	if effect.database == appFile {
		in.App = effect.refusal
	}
	if _, res, _ := e.model.Deliver(in); res == model.ResultInvalidJitter {
		return stepResult{}, fmt.Errorf("%w: deliver jitter=%d is outside the backoff ceiling of the attempt it settles", ErrScenario, jitter)
	}
	network, err := e.network(fault, req)
	if err != nil {
		return stepResult{}, err
	}
	sent := e.sendCount()
	var d system.Delivery
	e.injector.Arm(faults.Point(fault))
	e.jitter = time.Duration(jitter) * time.Millisecond
	if ferr := e.withDatabaseFault(ctx, fault, e.app, func() { d, err = e.app.DeliverOne(ctx, faults.Counted(e.sends, network)) }); ferr != nil {
		return stepResult{}, ferr
	}
	e.injector.Arm("")
	e.jitter = 0
	var r stepResult
	if faults.Point(fault) == "" && e.sendCount() > sent || effect.database == appFile {
		r.fired = fault
	}
	crashed := e.injector.Crashed()
	switch {
	case crashed != "":
		// A process that dies says nothing: the key it was delivering is
		// the model's (see below).
		r.got, r.fired = Answer{Kind: Crashed}, fault
		if err := e.restart(ctx); err != nil {
			return stepResult{}, err
		}
	case err != nil:
		r.line, r.got = "error: "+system.OneLine(err.Error()), Answer{Kind: errorAnswer(err), Key: d.Key}
	default:
		r.line, r.got = e.describe(d), Answer{Kind: workerAnswers[d.Result], Key: d.Key}
		if d.Result == system.ResultSent || d.Result == system.ResultPending || d.LastError == system.LastErrorTransient || d.LastError == system.LastErrorConflict || d.LastError == system.LastErrorRejected {
			r.claimedForSend = d.Key // the delivery claimed and sent
		}
	}

	if c := crashAt(crashed).crash; c != model.NoCrash { // also a crash the harness enumerated
		in.Crash = c
	}
	before := e.model
	var result model.Result
	e.model, result, r.key = e.model.Deliver(in)
	r.want = deliveryAnswer(result, r.key)
	if crashed != "" {
		r.line, r.got.Key = fmt.Sprintf("crashed at %s delivering %s; restarted", crashed, r.key), r.key
	}
	for _, row := range e.model.Outbox {
		if row.Key == r.key {
			r.backoffAfter = &attemptOf{r.key, row.Attempts}
		}
	}
	if effect.refusal == model.RefusedFull {
		// The task may have found room all the same.
		in.Network, in.RetryAfter = model.Delivered, 0
		alt, result, key := before.Deliver(in)
		r.otherwise = &prediction{alt, deliveryAnswer(result, key)}
	}
	return r, nil
}

// deliveryAnswer is the answer the model predicts for a delivery of key
// with result res.
func deliveryAnswer(res model.Result, key string) Answer {
	return Answer{Kind: resultAnswers[res], Key: key}
}

// request is what the model hears of a request with fault k (and, when
// throttled, the receiver's hint in milliseconds): the fault's network,
// or, for a fault of the receiver's database, what the receiver answers
// over the Env's transport when its database refuses the task.
func (e *Env) request(k faults.Kind, hint int64) model.Request {
	f := faultTable[k]
	r := model.Request{Network: f.network, Foreign: faults.ForeignPayload, RetryAfter: hint}
	if f.database == crmFile && e.cfg.Transport == HTTP {
		r.Network, r.RetryAfter = f.overHTTP, f.retryAfter
	}
	return r
}

// sendCount is how many requests the worker has sent in all.
func (e *Env) sendCount() int {
	n := 0
	for _, c := range e.sends {
		n += c
	}
	return n
}

// describe says in words what a delivery did.
func (e *Env) describe(d system.Delivery) string {
	switch {
	case d.Result == system.Idle:
		blocked := 0
		for _, r := range e.before.Outbox {
			if r.State == model.Blocked {
				blocked++
			}
		}
		if blocked > 0 {
			return fmt.Sprintf("idle: nothing pending, but %s for a person", words.Agree(blocked, "blocked row", "waits", "wait"))
		}
		return "idle: nothing pending"
	case d.Result == system.ResultSent:
		return fmt.Sprintf("sent %s: task %d", d.Key, d.RemoteID)
	case d.Result == system.ResultPending:
		return fmt.Sprintf("pending %s: %s failure, the retry sends the same key", d.Key, d.LastError)
	case d.LastError == system.LastErrorConflict:
		return fmt.Sprintf("blocked %s: the receiver holds other content for the key", d.Key)
	case d.LastError == system.LastErrorBudgetExhausted:
		return fmt.Sprintf("blocked %s: budget exhausted after %s, nothing sent", d.Key, words.HowMany(d.Attempts, "attempt"))
	}
	return fmt.Sprintf("blocked %s: %s failure on the last of %s", d.Key, d.LastError, words.HowMany(d.Attempts, "attempt"))
}
