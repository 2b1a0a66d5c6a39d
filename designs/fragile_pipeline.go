package designs

import (
	"context"

	"github.com/outboxlab/handoff/system"
)

// eagerOutbox is the real outbox whose pipelined worker claims ahead on
// every send.
type eagerOutbox struct{ outbox }

// Pipeline returns an eagerPipe that delivers to r.
func (o eagerOutbox) Pipeline(r system.Receiver) (Pipe, error) {
	return &eagerPipe{o: o.outbox, r: r}, nil
}

// eagerPipe is a pipelined worker written by hand: while it sends a row
// it records the answer of the row before and claims the row after, as
// system.Pipeline does, but it claims ahead on every send, "so that the
// worker never waits for a claim", whatever the receiver's speed.
type eagerPipe struct {
	o     outbox
	r     system.Receiver
	sent  *eagerAnswer // the last send, whose answer is not recorded
	ahead *eagerClaim  // a claim made while the last row was sent
	ready *eagerClaim  // a claim that took no row, returned before claiming again
}

type eagerClaim struct {
	c   system.Claim
	d   system.Delivery
	err error
}

func (c eagerClaim) pending() bool { return c.err == nil && c.d.Result == system.ResultPending }

type eagerAnswer struct {
	c      system.Claim
	taskID int64
	err    error
}

// eagerBackground is what the worker did while it sent.
type eagerBackground struct {
	recorded *eagerClaim
	ahead    *eagerClaim
	died     error
}

// Next returns the next delivery, as system.Pipeline's does.
func (p *eagerPipe) Next(ctx context.Context) (system.Delivery, error) {
	for {
		if r := p.ready; r != nil {
			p.ready = nil
			return r.d, r.err
		}
		var next eagerClaim
		if p.ahead != nil {
			next, p.ahead = *p.ahead, nil
		} else {
			next = p.claim(ctx)
		}
		switch {
		case p.sent == nil && !next.pending():
			return next.d, next.err
		case next.err == nil && next.d.Result == system.Idle:
			return p.record(ctx)
		case !next.pending():
			p.ready = &next
			return p.record(ctx)
		}
		earlier := p.sent
		done := make(chan eagerBackground, 1)
		p.o.Options().Harness.Background(func() { done <- p.background(ctx, earlier) }) // the shortcut: it always claims ahead
		id, err := p.o.Send(ctx, next.c, p.r)
		p.sent = &eagerAnswer{next.c, id, err}
		b := <-done
		if b.died != nil {
			return system.Delivery{}, b.died
		}
		p.ahead = b.ahead
		if b.recorded != nil {
			return b.recorded.d, b.recorded.err
		}
	}
}

// Flush records what is left, as system.Pipeline's does.
func (p *eagerPipe) Flush(ctx context.Context) (system.Delivery, bool, error) {
	switch {
	case p.sent != nil:
	case p.ahead != nil && p.ahead.pending():
		id, err := p.o.Send(ctx, p.ahead.c, p.r)
		p.sent, p.ahead = &eagerAnswer{p.ahead.c, id, err}, nil
	case p.ahead != nil && p.ahead.err == nil && p.ahead.d.Result == system.Idle:
		p.ahead = nil
		return p.Flush(ctx)
	case p.ahead != nil:
		a := *p.ahead
		p.ahead = nil
		return a.d, true, a.err
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

func (p *eagerPipe) claim(ctx context.Context) eagerClaim {
	c, d, err := p.o.ClaimNext(ctx)
	return eagerClaim{c, d, err}
}

func (p *eagerPipe) settle(ctx context.Context, a *eagerAnswer) eagerClaim {
	d, err := p.o.Settle(ctx, a.c, a.taskID, a.err)
	return eagerClaim{d: d, err: err}
}

func (p *eagerPipe) record(ctx context.Context) (system.Delivery, error) {
	r := p.settle(ctx, p.sent)
	p.sent = nil
	return r.d, r.err
}

// background records the answer of earlier, if any, and claims ahead,
// passing the fault points system.Pipeline passes.
func (p *eagerPipe) background(ctx context.Context, earlier *eagerAnswer) eagerBackground {
	hook := p.o.Options().Harness.Hook
	var b eagerBackground
	if earlier != nil {
		r := p.settle(ctx, earlier)
		b.recorded = &r
		if b.died = pass(hook, system.PointPipelineRecorded); b.died != nil {
			return b
		}
	}
	a := p.claim(ctx)
	b.ahead = &a
	b.died = pass(hook, system.PointPipelineClaimedAhead)
	return b
}
