package outbox

import (
	"context"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

// Pipeline returns a pipelined worker that delivers this handle's rows to
// r: while it sends one message's key, it records the answer of the one
// before and receives the one after, each in a transaction of its own,
// so that the worker waits on the receiver, not on the database. It runs
// the protocol of system.Pipeline on ClaimNext, Send and Settle: it
// receives ahead only after an answer that came within half the send
// timeout and before its claim's window ran out, and stops after a slower
// one; a message received ahead, or whose answer is not recorded yet,
// stays hidden by goqite for the lease. The recording and the receive
// ahead run through Options.Harness.Background, which passes
// system.PointPipelineRecorded and system.PointPipelineClaimedAhead.
func (a *App) Pipeline(r system.Receiver) (designs.Pipe, error) {
	return &pipe{a: a, r: r}, nil
}

// pipe is a pipelined worker; it is not safe for concurrent use.
type pipe struct {
	a     *App
	r     system.Receiver
	sent  *answer // the last send, whose answer is not recorded yet
	ahead *result // a claim made while the last message was sent
	ready *result // a delivery to return before claiming again
	fast  bool    // the last send was answered fast enough to claim ahead
}

// answer is what the send of a claim heard.
type answer struct {
	c      system.Claim
	taskID int64
	err    error
}

// result is what a claim, or the recording of an answer, came to.
type result struct {
	c   system.Claim
	d   system.Delivery
	err error
}

// pending reports whether the claim took a row to send.
func (r result) pending() bool { return r.err == nil && r.d.Result == system.ResultPending }

// idle reports whether the claim found nothing to send.
func (r result) idle() bool { return r.err == nil && r.d.Result == system.Idle }

// Next returns the next delivery, in the order the worker made them: a
// settled one, a row blocked at its claim, Idle (once every answer is
// recorded), or a claim's error.
func (p *pipe) Next(ctx context.Context) (system.Delivery, error) {
	for {
		if r := p.ready; r != nil {
			p.ready = nil
			return r.d, r.err
		}
		var next result
		switch {
		case p.ahead != nil && p.ahead.idle():
			p.ahead = nil // found idle while a message was in flight: out of date
			continue
		case p.ahead != nil:
			next, p.ahead = *p.ahead, nil
		case ctx.Err() != nil:
			next = result{err: ctx.Err()}
		default:
			next = p.claim(ctx)
		}
		switch {
		case p.sent == nil && !next.pending():
			return next.d, next.err
		case next.idle():
			return p.record(ctx)
		case !next.pending():
			p.ready = &next
			return p.record(ctx)
		}
		earlier, claimAhead := p.sent, ctx.Err() == nil && p.fast
		if earlier == nil && !claimAhead {
			p.sent = p.send(ctx, next.c)
			continue
		}
		done := make(chan background, 1)
		p.a.opts.Harness.Background(func() { done <- p.background(ctx, earlier, claimAhead) })
		p.sent = p.send(ctx, next.c)
		b := <-done
		if b.died != nil {
			return system.Delivery{}, b.died
		}
		if b.ahead != nil {
			p.ahead = b.ahead
		}
		if b.recorded != nil {
			return b.recorded.d, b.recorded.err
		}
	}
}

// background is what the worker did while a message was sent.
type background struct {
	recorded, ahead *result
	died            error // the hook's error where the process died
}

// background records earlier's answer, if any, then, if claimAhead,
// receives the next message, passing a fault point after each.
func (p *pipe) background(ctx context.Context, earlier *answer, claimAhead bool) background {
	var b background
	if earlier != nil {
		r := p.settle(ctx, earlier)
		b.recorded = &r
		if b.died = p.a.pass(system.PointPipelineRecorded); b.died != nil {
			return b
		}
	}
	if claimAhead {
		r := p.claim(ctx)
		b.ahead = &r
		b.died = p.a.pass(system.PointPipelineClaimedAhead)
	}
	return b
}

// Flush records the last answer, or sends the message received ahead and
// records its answer, or returns a delivery Next made and has not
// returned; flushed is false when nothing is left.
func (p *pipe) Flush(ctx context.Context) (system.Delivery, bool, error) {
	switch {
	case p.sent != nil:
	case p.ahead != nil && p.ahead.pending():
		p.sent, p.ahead = p.send(ctx, p.ahead.c), nil
	case p.ahead != nil && p.ahead.idle():
		p.ahead = nil
		return p.Flush(ctx)
	case p.ahead != nil:
		r := *p.ahead
		p.ahead = nil
		return r.d, true, r.err
	case p.ready != nil:
		r := *p.ready
		p.ready = nil
		return r.d, true, r.err
	default:
		return system.Delivery{}, false, nil
	}
	d, err := p.record(ctx)
	return d, true, err
}

// claim receives the next message; a claim runs to its end, whatever ctx.
func (p *pipe) claim(ctx context.Context) result {
	c, d, err := p.a.ClaimNext(context.WithoutCancel(ctx))
	return result{c, d, err}
}

// send sends c and notes whether the receiver answered fast: within half
// the send timeout, and before c's window ran out.
func (p *pipe) send(ctx context.Context, c system.Claim) *answer {
	start := p.a.opts.Harness.Now()
	taskID, err := p.a.Send(context.WithoutCancel(ctx), c, p.r)
	end := p.a.opts.Harness.Now()
	p.fast = end.Sub(start) <= p.a.opts.SendTimeout/2 && end.Before(c.SendBy)
	return &answer{c, taskID, err}
}

// settle records a's answer.
func (p *pipe) settle(ctx context.Context, a *answer) result {
	d, err := p.a.Settle(context.WithoutCancel(ctx), a.c, a.taskID, a.err)
	return result{d: d, err: err}
}

// record records the last send's answer and returns its delivery.
func (p *pipe) record(ctx context.Context) (system.Delivery, error) {
	r := p.settle(ctx, p.sent)
	p.sent = nil
	return r.d, r.err
}
