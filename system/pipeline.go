package system

import (
	"context"
	"time"
)

// Pipeline delivers rows for one worker, one after the other, as
// DeliverOne does, but hides the database's latency behind the receiver's:
// while a row is sent, it records the answer of the row before and claims
// the row after, both in one write transaction. A worker then waits on
// its receiver, not on its claims and answers, and commits once a
// delivery. The protocol is DeliverOne's: every claim commits before
// its send, every settle is fenced, and a row claimed ahead, or whose
// answer is not yet recorded, keeps its lease, so no other worker takes
// it meanwhile. A row claimed ahead must be sent by its claim's time plus
// the send timeout (see Send), and the send before it takes from that
// window: a Pipeline claims ahead only once the receiver has answered
// within half the send timeout, and stops as soon as an answer takes
// longer or a row's window runs out, so that a receiver that turns slow
// costs at most the one row claimed ahead during its first slow answer an
// attempt. While it sends, it records and claims through
// Options.Harness.Background, on a goroutine of its own by default, and
// passes PointPipelineRecorded and PointPipelineClaimedAhead there:
// Options.Harness.Hook and Options.Harness.Now may run on both at once.
// It is not safe for concurrent use; run one per worker.
type Pipeline struct {
	o         *Outbox
	r         Receiver
	retention time.Duration
	sent      *answer  // the last send, whose answer is not yet recorded
	ahead     *claimed // a claim made while the last row was sent
	ready     *settled // a result to return before claiming again
	heard     error    // what the send of the delivery last returned heard
	fast      bool     // the last send was answered within half the send timeout and its window: claim ahead
	idle      bool     // the last claim found nothing due: read when a row is due before claiming again
}

// answer is what the send of a claim heard.
type answer struct {
	c      Claim
	taskID int64
	err    error
}

// claimed is what a claim came to.
type claimed struct {
	c   Claim
	d   Delivery
	err error
}

// pending reports whether the claim took a row to send.
func (c claimed) pending() bool { return c.err == nil && c.d.Result == ResultPending }

// settled is what a delivery came to, and what its send heard.
type settled struct {
	d     Delivery
	err   error
	heard error
}

// Pipeline returns a Pipeline that delivers this Outbox's rows to r. The
// receiver's retention comes from r if it is a Retainer, else from
// Options.Retention.
func (o *Outbox) Pipeline(r Receiver) (*Pipeline, error) {
	if r == nil {
		return nil, invalid("receiver is nil")
	}
	retention := o.opts.Retention
	if rt, ok := r.(Retainer); ok {
		retention = rt.Retention()
	}
	return &Pipeline{o: o, r: r, retention: retention}, nil
}

// Next returns the next delivery this worker made, in the order it made
// them, as DeliverOne would have returned it: a settled one (sent,
// pending for a retry, blocked, stale, or an *AttemptError), a row
// blocked at its claim, Idle, or the error of a claim. It sends the row
// claimed ahead, or claims one, and while it sends that row it records
// the answer of the last send and claims the next row; it leaves the new
// answer unrecorded until the next call (or Flush). Idle comes only when
// every answer is recorded, so its NextEligible is up to date. A
// cancelled ctx stops the claiming (Next then returns its error, after
// the rows already claimed are sent and their answers recorded); a claim,
// a send under way and the recording of answers run to their end.
func (p *Pipeline) Next(ctx context.Context) (Delivery, error) {
	for {
		if r := p.ready; r != nil {
			p.ready = nil
			return p.deliver(*r)
		}
		// An interrupt stops the claiming between claims, never in one:
		// a claim cancelled during its COMMIT may have taken its row
		// all the same, and nobody would release that lease.
		var next claimed
		switch {
		case p.ahead != nil && p.ahead.err == nil && p.ahead.d.Result == Idle:
			// Claimed while the last row was in flight, its NextEligible
			// is out of date: look again (a read of when the next row is
			// due, then a claim if one is).
			p.ahead = nil
			continue
		case p.ahead != nil:
			next, p.ahead = *p.ahead, nil
		case ctx.Err() != nil:
			next = claimed{err: ctx.Err()}
		default:
			next = p.claim(ctx)
		}
		switch {
		case p.sent == nil && !next.pending():
			return p.deliver(settled{d: next.d, err: next.err})
		case next.err == nil && next.d.Result == Idle:
			// The row whose answer is unrecorded may be what keeps the
			// outbox from being idle: claim again once it is recorded.
			return p.record(ctx)
		case !next.pending():
			p.ready = &settled{d: next.d, err: next.err}
			return p.record(ctx)
		}
		// While next is sent, the background records the answer of the
		// last send, then claims the row after, one after the other, so
		// that the claim sees the answer recorded.
		earlier, ahead := p.sent, ctx.Err() == nil && p.fast
		var done chan background
		if earlier != nil || ahead {
			done = make(chan background, 1)
			p.o.opts.Harness.Background(func() { done <- p.background(ctx, earlier, ahead) })
		}
		p.sent = p.send(ctx, next.c)
		if done == nil {
			continue
		}
		b := <-done
		if b.died != nil {
			return Delivery{}, b.died
		}
		if b.ahead != nil {
			p.ahead = b.ahead
		}
		if b.recorded != nil {
			return p.deliver(*b.recorded)
		}
	}
}

// background is what a Pipeline did while a row was sent: the answer of
// the last send recorded, a row claimed ahead, or the error of the Hook
// at a fault point it passed, where the process died.
type background struct {
	recorded *settled
	ahead    *claimed
	died     error
}

// background records the answer of earlier, if any, then, if ahead,
// claims the next row, passing a fault point after each. When it does
// both, they share one write transaction, and both points pass after its
// commit.
func (p *Pipeline) background(ctx context.Context, earlier *answer, ahead bool) background {
	var b background
	if earlier != nil && ahead {
		ctx = context.WithoutCancel(ctx)
		d, err, c, cd, cerr := p.o.settleThenClaim(ctx, earlier.c, earlier.taskID, earlier.err, p.retention)
		p.idle = cerr == nil && cd.Result == Idle
		b.recorded, b.ahead = &settled{d: d, err: err, heard: earlier.err}, &claimed{c, cd, cerr}
		if b.died = p.o.opts.Harness.Hook.pass(PointPipelineRecorded); b.died != nil {
			return b
		}
		b.died = p.o.opts.Harness.Hook.pass(PointPipelineClaimedAhead)
		return b
	}
	if earlier != nil {
		r := p.settle(ctx, earlier)
		b.recorded = &r
		if b.died = p.o.opts.Harness.Hook.pass(PointPipelineRecorded); b.died != nil {
			return b
		}
	}
	if ahead {
		a := p.claim(ctx)
		b.ahead = &a
		b.died = p.o.opts.Harness.Hook.pass(PointPipelineClaimedAhead)
	}
	return b
}

// Flush records the answer of the last send, if any, and returns what its
// delivery came to; or sends the row claimed ahead and records its
// answer; or returns a delivery Next made but has not returned yet (a row
// blocked at its claim, or a claim's error); flushed is false when there
// is none left (an Idle claimed ahead is dropped: it is no delivery). A
// worker that stops calls it until then, so that it leaves no row claimed
// and unsent, no answer unrecorded and no delivery unreported.
func (p *Pipeline) Flush(ctx context.Context) (d Delivery, flushed bool, err error) {
	switch {
	case p.sent != nil:
		d, err = p.record(ctx)
	case p.ahead != nil && p.ahead.pending():
		p.sent, p.ahead = p.send(ctx, p.ahead.c), nil
		d, err = p.record(ctx)
	case p.ahead != nil && p.ahead.err == nil && p.ahead.d.Result == Idle:
		// Claimed while a row was in flight: its NextEligible is out of
		// date, and Next looks again.
		p.ahead = nil
		return p.Flush(ctx)
	case p.ahead != nil:
		d, err = p.deliver(settled{d: p.ahead.d, err: p.ahead.err})
		p.ahead = nil
	case p.ready != nil:
		d, err = p.deliver(*p.ready)
		p.ready = nil
	default:
		return Delivery{}, false, nil
	}
	return d, true, err
}

// claim claims the next row. After a claim that found nothing due, it
// first reads when the next row is due (Outbox.NextDue), and claims only
// once one is: an idle worker polls with one read, not a write
// transaction.
func (p *Pipeline) claim(ctx context.Context) claimed {
	ctx = context.WithoutCancel(ctx)
	if p.idle {
		due, pending, err := p.o.NextDue(ctx)
		switch {
		case err != nil:
			return claimed{err: err}
		case !pending:
			return claimed{d: Delivery{Result: Idle}}
		case due.After(p.o.opts.Harness.Now()):
			return claimed{d: Delivery{Result: Idle, NextEligible: due}}
		}
	}
	c, d, err := p.o.ClaimNext(ctx, p.retention)
	p.idle = err == nil && d.Result == Idle
	return claimed{c, d, err}
}

// send sends c and notes whether the receiver answered fast: within
// half the send timeout, and before c's window ran out (a send cut short,
// or never made, says nothing of the receiver's speed).
func (p *Pipeline) send(ctx context.Context, c Claim) *answer {
	start := p.o.opts.Harness.Now()
	taskID, err := p.o.Send(context.WithoutCancel(ctx), c, p.r)
	end := p.o.opts.Harness.Now()
	p.fast = end.Sub(start) <= p.o.opts.SendTimeout/2 && end.Before(c.SendBy)
	return &answer{c, taskID, err}
}

// Heard is what the send of the delivery that Next or Flush last
// returned heard: the receiver's error, which the row records only by
// its class (transient, rejected …), for a person to read in a log; nil
// when it heard a task or sent nothing.
func (p *Pipeline) Heard() error { return p.heard }

// record records the answer of the last send and returns what its
// delivery came to.
func (p *Pipeline) record(ctx context.Context) (Delivery, error) {
	a := p.sent
	p.sent = nil
	return p.deliver(p.settle(ctx, a))
}

// settle records a's answer.
func (p *Pipeline) settle(ctx context.Context, a *answer) settled {
	d, err := p.o.Settle(context.WithoutCancel(ctx), a.c, a.taskID, a.err)
	return settled{d: d, err: err, heard: a.err}
}

// deliver returns what r's delivery came to, noting what its send heard.
func (p *Pipeline) deliver(r settled) (Delivery, error) {
	p.heard = r.heard
	return r.d, r.err
}
