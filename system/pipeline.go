package system

import (
	"context"
	"time"
)

// Pipeline delivers rows for one worker, one after the other, as
// DeliverOne does, but records each answer while the next row is claimed
// and sent: a worker then waits on its receiver, not on its database. At
// most one settle is in flight, beside the next claim and send (SQLite
// commits the settle and the claim together; PostgreSQL on two
// connections). The protocol is DeliverOne's: every claim commits before
// its send, and every settle is fenced. A Pipeline passes no fault
// points: the harness crashes DeliverOne, and real crashes (handoff trial)
// a Pipeline. It is not safe for concurrent use; run one per worker.
type Pipeline struct {
	o         *Outbox
	r         Receiver
	retention time.Duration
	settling  chan settled // the settle in flight; nil when none is
	ready     *settled     // a result to return before claiming again
}

// settled is what a delivery came to.
type settled struct {
	d   Delivery
	err error
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
// blocked at its claim, Idle, or the error of a claim. To keep one send
// ahead, it may claim and send the following row before it returns, and
// leave that row's settle in flight: Flush waits for it. Idle comes only
// when no settle is in flight, so its NextEligible is up to date. A
// cancelled ctx stops the claiming; a send under way and the settles run
// to their end.
func (p *Pipeline) Next(ctx context.Context) (Delivery, error) {
	for {
		if r := p.ready; r != nil {
			p.ready = nil
			return r.d, r.err
		}
		c, d, err := p.o.ClaimNext(ctx, p.retention)
		switch {
		case p.settling == nil && (err != nil || d.Result != ResultPending):
			return d, err
		case err == nil && d.Result == Idle:
			// The row in flight may be what keeps the outbox from being
			// idle, or hold the earliest eligible time: claim again
			// once it is settled.
			return p.wait()
		case err != nil || d.Result != ResultPending:
			p.ready = &settled{d, err}
			return p.wait()
		}
		taskID, sendErr := p.o.Send(context.WithoutCancel(ctx), c, p.r)
		earlier := p.settling
		p.settling = make(chan settled, 1)
		go func(done chan<- settled) {
			d, err := p.o.Settle(context.WithoutCancel(ctx), c, taskID, sendErr)
			done <- settled{d, err}
		}(p.settling)
		if earlier != nil {
			r := <-earlier
			return r.d, r.err
		}
	}
}

// Flush waits for the settle in flight, if any, and returns what its
// delivery came to; flushed is false when none was in flight. A worker
// that stops calls it, so that it leaves no answer unrecorded.
func (p *Pipeline) Flush() (d Delivery, flushed bool, err error) {
	if p.settling == nil {
		return Delivery{}, false, nil
	}
	d, err = p.wait()
	return d, true, err
}

// wait waits for the settle in flight and returns what its delivery came
// to.
func (p *Pipeline) wait() (Delivery, error) {
	r := <-p.settling
	p.settling = nil
	return r.d, r.err
}
