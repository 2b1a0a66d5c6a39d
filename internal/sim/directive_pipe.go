package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// pipe has a pipelined worker (system.Pipeline, as handoff work runs it)
// make one call of Next: it returns the oldest delivery it has not
// returned, and, while it sends a row, records the answer before and,
// after a fast answer, claims the row after. Every send of the call meets
// the fault and takes slow milliseconds of the clock; a slow answer (more
// than half the send timeout) stops the claiming ahead. A crash strikes
// in the background, after the recording or after the claim ahead; the
// worker starts again at its next step. A busy app database refuses the
// call's writes (its claim, the recording of an answer, its claim ahead)
// but not its read of when the next row is due: a worker whose last claim
// found nothing due answers Idle while nothing is.
//
//	pipe worker=P [slow=MS] [jitter=MS] [fault=offline|lost-reply|duplicate-request|foreign-task|refused|crash-after-record|crash-after-claim-ahead|app-busy]
func (e *Env) pipe(ctx context.Context, s Step) (stepResult, error) {
	return e.pipeCall(ctx, s, model.State.PipeNext, func(ctx context.Context, p designs.Pipe) (system.Delivery, bool, error) {
		d, err := p.Next(ctx)
		return d, true, err
	})
}

// pipeCall runs one call of a pipelined worker through call, with the
// model's prediction from predict.
func (e *Env) pipeCall(ctx context.Context, s Step,
	predict func(model.State, string, model.PipeStep) (model.State, model.PipeResult),
	call func(context.Context, designs.Pipe) (system.Delivery, bool, error)) (stepResult, error) {
	fault, err := e.faultArg(s)
	if err != nil {
		return stepResult{}, err
	}
	jitter, err := jitterArg(s)
	if err != nil {
		return stepResult{}, err
	}
	var slow int64
	if v, ok := s.Arg("slow"); ok {
		if slow, err = strconv.ParseInt(v, 10, 64); err != nil || slow < 0 {
			return stepResult{}, fmt.Errorf("%w: slow=%q, want a whole number of milliseconds, 0 or more", ErrScenario, v)
		}
	}
	name, w, err := e.pipeWorker(ctx, s)
	if err != nil {
		return stepResult{}, err
	}
	effect := faultTable[fault]
	step := model.PipeStep{Request: e.request(fault, 0), Slow: slow, Jitter: jitter, Crash: effect.pipeCrash}
	if effect.database == appFile {
		step.App = effect.refusal
	}
	before := e.model
	next, res := predict(before, name, step)
	if res.Result == model.ResultInvalidJitter {
		return stepResult{}, fmt.Errorf("%w: jitter=%d is outside the backoff ceiling of the attempt the call records", ErrScenario, jitter)
	}
	netFault := fault
	if effect.pipeCrash != model.NoPipeCrash {
		netFault = ""
	}
	network, err := e.network(netFault, step.Request)
	if err != nil {
		return stepResult{}, err
	}
	w.net.begin(network, time.Duration(slow)*time.Millisecond, e.uncounted(before, name))
	sent := e.sendCount()
	e.injector.Arm(faults.Point(fault))
	e.jitter = time.Duration(jitter) * time.Millisecond
	var d system.Delivery
	var flushed bool
	if ferr := e.withDatabaseFault(ctx, fault, w.app, func() { d, flushed, err = call(ctx, w.pipe) }); ferr != nil {
		return stepResult{}, ferr
	}
	e.injector.Arm("")
	e.jitter = 0
	var r stepResult
	switch {
	case step.App != model.Accepted:
		// The fault took effect when it refused a write: the call came to
		// something else than it would with the database free.
		free := step
		free.App = model.Accepted
		if freeNext, freeRes := predict(before, name, free); freeRes != res || !reflect.DeepEqual(freeNext, next) {
			r.fired = fault
		}
	case fault != "" && (effect.pipeCrash != model.NoPipeCrash || e.sendCount() > sent):
		r.fired = fault
	}
	if crashed := e.injector.Crashed(); crashed != "" {
		if c := crashAt(crashed).pipeCrash; c != step.Crash { // a crash the harness enumerated
			step.Crash = c
			next, res = predict(before, name, step)
		}
		r.line, r.got, r.fired = fmt.Sprintf("%s crashed at %s; it starts again at its next step", name, crashed), Answer{Kind: Crashed, Key: res.Key}, fault
		if err := w.app.Close(); err != nil {
			return stepResult{}, fmt.Errorf("handoff: crashing worker %s: %w", name, err)
		}
		delete(e.workers, name)
	} else {
		switch {
		case err != nil:
			r.line, r.got = "error: "+err.Error(), Answer{Kind: errorAnswer(err), Key: d.Key}
		case !flushed:
			r.line, r.got = fmt.Sprintf("%s flushed: nothing left", name), Answer{Kind: Idle}
		default:
			r.line, r.got = name+": "+e.describe(d), Answer{Kind: workerAnswers[d.Result], Key: d.Key}
			if d.Result == system.Idle {
				r.got.At = filecheck.Millis(d.NextEligible)
			}
		}
	}
	e.model = next
	r.want = Answer{Kind: resultAnswers[res.Result], Key: res.Key, At: res.Wake}
	r.key = res.Key
	if c, ok := before.Claims[name]; ok && c.Key == res.Key && c.Heard != "" {
		r.settling = true
		r.backoffAfter = &attemptOf{c.Key, c.Attempt}
	}
	return r, nil
}

// pipeWorker returns the named worker of s as a pipelined worker: its
// Pipe is made on first use, and again after it crashed.
func (e *Env) pipeWorker(ctx context.Context, s Step) (string, *worker, error) {
	name, w, err := e.worker(ctx, s)
	if err != nil {
		return "", nil, err
	}
	if w.pipe != nil {
		return name, w, nil
	}
	if w.claim != nil {
		return "", nil, fmt.Errorf("%w: worker %s claims phase by phase; a pipelined worker needs a name of its own", ErrScenario, name)
	}
	w.net = &pipeNet{e: e}
	p, err := w.app.(designs.Pipeliner).Pipeline(w.net) // a pipe step needs Pipeline, hence Pipeliner (see Supported, CheckApp)
	if err != nil {
		return "", nil, fmt.Errorf("handoff: worker %s starting its pipeline: %w", name, err)
	}
	w.pipe = p
	return name, w, nil
}

// uncounted is the keys whose sends by worker's claims of state s are no
// longer the row's to count: a person acted on the row after the claim
// (see Env.actedFence).
func (e *Env) uncounted(s model.State, worker string) map[string]bool {
	keys := map[string]bool{}
	for _, slot := range []string{worker, worker + " next"} {
		if c, ok := s.Claims[slot]; ok && c.Fence <= e.actedFence[c.Key] {
			keys[c.Key] = true
		}
	}
	return keys
}

// pipeNet is a pipelined worker's receiver in the simulation: each send
// meets the step's network, is counted (unless a person acted on its row
// since its claim), and takes the step's time; a send made after the
// worker died in its background (which the Env runs in line, before the
// send) goes nowhere.
type pipeNet struct {
	e    *Env
	net  system.Receiver // the step's network, which counts nothing
	slow time.Duration
	skip map[string]bool // keys whose sends are not counted (see Env.uncounted)
	died bool
}

// begin readies n for one call: its network, each send's time, and the
// keys not to count.
func (n *pipeNet) begin(net system.Receiver, slow time.Duration, skip map[string]bool) {
	n.net, n.slow, n.skip, n.died = net, slow, skip, false
}

var errDied = errors.New("handoff: the worker died before the request left")

// CreateTask sends key and payload over the step's network.
func (n *pipeNet) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if n.died {
		return 0, errDied
	}
	if !n.skip[key] { // a send of a claim older than a person's action is not the row's to count
		n.e.sends[key]++
	}
	id, err := n.net.CreateTask(ctx, key, payload)
	n.e.now += n.slow.Milliseconds()
	return id, err
}

// namedHook is the hook of named worker name's handle: at the points a
// pipelined worker passes in its background, the fault injector's, which
// tells the worker's pipeNet when the worker died there; other points
// pass.
func (e *Env) namedHook(name string) system.Hook {
	crash := e.injector.Hook()
	return func(p system.FaultPoint) error {
		if p != system.PointPipelineRecorded && p != system.PointPipelineClaimedAhead {
			return nil
		}
		err := crash(p)
		if w := e.workers[name]; w != nil && w.net != nil && err != nil {
			w.net.died = true
		}
		return err
	}
}
