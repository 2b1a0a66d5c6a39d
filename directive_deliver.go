package handoff

import (
	"context"
	"fmt"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// deliver makes one delivery attempt with an optional fault.
//
//	deliver [fault=duplicate-request|foreign-task|offline|lost-reply|crash-after-reply|crash-before-send]
func (e *Env) deliver(ctx context.Context, s Step) (stepResult, error) {
	if err := s.only("fault"); err != nil {
		return stepResult{}, err
	}
	fault, err := faultArg(s, faults.DeliveryKinds...)
	if err != nil {
		return stepResult{}, err
	}
	network, err := e.network(fault, 0)
	if err != nil {
		return stepResult{}, err
	}
	sent := e.sendCount()
	e.injector.Arm(FaultPoint(fault))
	d, err := e.app.DeliverOne(ctx, faults.Counted(e.sends, network))
	e.injector.Arm("")
	var r stepResult
	if FaultPoint(fault) == "" && e.sendCount() > sent {
		r.fired = fault
	}
	crashed := e.injector.Crashed()
	switch {
	case crashed != "":
		r.line, r.got, r.fired = fmt.Sprintf("crashed at %s delivering %s; restarted", crashed, d.Key), Answer{Kind: Crashed, Key: d.Key}, fault
		if err := e.restart(ctx); err != nil {
			return stepResult{}, err
		}
	case err != nil:
		r.line, r.got = "error: "+err.Error(), Answer{Kind: Error}
	default:
		r.line, r.got = e.describe(d), Answer{Kind: workerAnswers[d.Result], Key: d.Key}
		if d.Result == system.ResultSent || d.Result == system.ResultPending || d.LastError == system.LastErrorTransient || d.LastError == system.LastErrorConflict || d.LastError == system.LastErrorRejected {
			r.lateClaim = e.lateClaim(d.Key) // the delivery claimed and sent
		}
	}

	effect := faultTable[fault]
	in := model.Delivery{Network: effect.network, Crash: effect.crash, Foreign: faults.ForeignPayload}
	if c := crashAt(crashed).crash; c != model.NoCrash { // also a crash the harness enumerated
		in.Crash = c
	}
	var result model.Result
	e.model, result, r.key = e.model.Deliver(in)
	r.want = Answer{Kind: resultAnswers[result], Key: r.key}
	return r, nil
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
			return fmt.Sprintf("idle: nothing pending, but %s for a person", plural(blocked, "blocked row waits", "blocked rows wait"))
		}
		return "idle: nothing pending"
	case d.Result == system.ResultSent:
		return fmt.Sprintf("sent %s: task %d", d.Key, d.RemoteID)
	case d.Result == system.ResultPending:
		return fmt.Sprintf("pending %s: %s failure, the retry sends the same key", d.Key, d.LastError)
	case d.LastError == system.LastErrorConflict:
		return fmt.Sprintf("blocked %s: the receiver holds other content for the key", d.Key)
	case d.LastError == system.LastErrorBudgetExhausted:
		return fmt.Sprintf("blocked %s: budget exhausted after %d attempts, nothing sent", d.Key, d.Attempts)
	}
	return fmt.Sprintf("blocked %s: %s failure on the last of %d attempts", d.Key, d.LastError, d.Attempts)
}
