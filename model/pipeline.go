package model

// A pipelined worker (system.Pipeline) sends one row while it records the
// answer of the row before and claims the row after, under one name: it
// holds two claims at once. Its call Next returns one delivery, the
// oldest it has not returned, and leaves the answer of its last send
// unrecorded until the next call; Flush records what is left. The model
// keeps the claim whose answer is unrecorded in Claims[worker], the claim
// made and not yet sent in Claims[worker+pipeNext], and the rest in Pipes.
//
// A call's steps come in this order: a claim of the next row, unless one
// was made ahead; then, while that row is sent, the answer of the last
// send recorded (PipeRecorded) and, if the last send was answered fast,
// the row after claimed ahead (PipeClaimedAhead), with PipeOneCommit the
// two in one write transaction when there are both, so that a crash
// after the recording then comes after the claim ahead too; then the
// send reaches the receiver and takes PipeStep.Slow of the clock. (The real Pipeline
// records and claims while it sends; the harness runs that background in
// line before the send, so that the order, and the time each reads, is
// this.) A worker that dies in a call keeps its leases until it starts
// again (see Restart).
//
// After a claim that found nothing due, the worker's next claim is first
// a read of when the next row is due, and a claim only once one is: an
// idle worker polls with a read. A call under a busy app database
// (PipeStep.App) makes its reads but none of its writes: the idle read
// goes through, while a claim, the recording of an answer and a claim
// ahead are each refused, writing nothing, and the call goes on as the
// Pipeline does after each.

// pipeNext is the suffix of the slot of Claims that holds a pipelined
// worker's claim not yet sent.
const pipeNext = " next"

// Pipe is what a pipelined worker keeps between its calls, beside its
// claims.
type Pipe struct {
	// Ahead is a claim made ahead that took no row: Idle (with Wake), or
	// a row blocked at its claim.
	Ahead *ClaimResult
	// Ready is a delivery made and not yet returned: a row blocked at its
	// claim, returned after the answer recorded before it.
	Ready *PipeResult
	// Fast says the last send was answered within half the send timeout
	// and before its claim's window ran out: the next call claims ahead
	// while it sends.
	Fast bool
	// Idle says the worker's last claim found nothing due: its next claim
	// first reads when the next row is due, and claims only once one is.
	Idle bool
}

// PipeResult is what a call of a pipelined worker returns: a delivery,
// as DeliverOne would return it (Result, the row's Key; Wake when Idle),
// or ResultCrashed when the worker died in the call. Flushed, for Flush,
// is false when there was nothing left to return.
type PipeResult struct {
	Result  Result
	Key     string
	Wake    int64
	Flushed bool
}

// PipeStep is what happens in one call: the request every send of the
// call meets, how long each send takes in milliseconds, the backoff
// jitter of a transient failure the call records, where, if anywhere,
// the worker dies, and whether the app database refuses the call's
// writes (Accepted, or RefusedBusy: busy for the whole call).
type PipeStep struct {
	Request Request
	Slow    int64
	Jitter  int64
	Crash   PipeCrash
	App     Refusal
}

// PipeCrash is where, if anywhere, a pipelined worker dies in a call.
type PipeCrash int

const (
	NoPipeCrash PipeCrash = iota
	// PipeRecorded: after the answer of the last send was recorded, before
	// the row after is claimed ahead (with PipeOneCommit, after that claim,
	// which shares the recording's commit), and before the send reaches
	// the receiver.
	PipeRecorded
	// PipeClaimedAhead: after the row after was claimed ahead, before the
	// send reaches the receiver.
	PipeClaimedAhead
)

// PipeNext predicts one call of worker's Next: what it returns. A jitter
// outside the ceiling of the attempt it records gives ResultInvalidJitter
// and s unchanged.
func (s State) PipeNext(worker string, step PipeStep) (State, PipeResult) {
	start := s
	s = s.clone()
	s.Pipes = cloneOrMake(s.Pipes)
	p := s.Pipes[worker]
	for {
		if r := p.Ready; r != nil {
			p.Ready = nil
			s.Pipes[worker] = p
			return s, *r
		}
		next, pending := s.nextClaim(worker, &p, step.App)
		_, sent := s.Claims[worker]
		switch {
		case !sent && !pending:
			s.Pipes[worker] = p
			return s, PipeResult{Result: next.Result, Key: next.Key, Wake: next.Wake}
		case next.Result == Idle:
			return s.pipeRecord(start, worker, p, step)
		case !pending:
			p.Ready = &PipeResult{Result: next.Result, Key: next.Key}
			return s.pipeRecord(start, worker, p, step)
		}
		var recorded *PipeResult
		if sent {
			var r Result
			var key string
			if s, r, key = s.pipeSettle(worker, step); r == ResultInvalidJitter {
				return start, PipeResult{Result: r, Key: key}
			}
			recorded = &PipeResult{Result: r, Key: key}
			if step.Crash == PipeRecorded && !(p.Fast && s.PipeOneCommit) {
				return s.Crash(worker), PipeResult{Result: ResultCrashed, Key: key}
			}
		}
		c := s.Claims[worker+pipeNext]
		delete(s.Claims, worker+pipeNext)
		s.Claims[worker] = c
		if p.Fast {
			var ahead ClaimResult
			if s, ahead = s.pipeClaim(worker, &p, step.App); ahead.Result != ResultClaimed {
				p.Ahead = &ahead
			}
			switch {
			case step.Crash == PipeRecorded && recorded != nil:
				// The recording shared its commit with the claim ahead.
				return s.Crash(worker), PipeResult{Result: ResultCrashed, Key: recorded.Key}
			case step.Crash == PipeClaimedAhead:
				return s.Crash(worker), PipeResult{Result: ResultCrashed, Key: c.Key}
			}
		}
		s, p.Fast = s.pipeSend(worker, step)
		if recorded != nil {
			s.Pipes[worker] = p
			return s, *recorded
		}
	}
}

// PipeFlush predicts one call of worker's Flush: the answer of the last
// send recorded; or the row claimed ahead sent (meeting step's request,
// taking step's time) and its answer recorded; or a delivery made and not
// yet returned. A claim ahead that found nothing is dropped, as out of
// date. Flushed is false when nothing is left.
func (s State) PipeFlush(worker string, step PipeStep) (State, PipeResult) {
	start := s
	s = s.clone()
	s.Pipes = cloneOrMake(s.Pipes)
	p := s.Pipes[worker]
	_, sent := s.Claims[worker]
	_, ahead := s.Claims[worker+pipeNext]
	switch {
	case sent:
	case ahead:
		c := s.Claims[worker+pipeNext]
		delete(s.Claims, worker+pipeNext)
		s.Claims[worker] = c
		s, p.Fast = s.pipeSend(worker, step)
	case p.Ahead != nil && p.Ahead.Result == Idle:
		p.Ahead = nil
		s.Pipes[worker] = p
		return s.PipeFlush(worker, step)
	case p.Ahead != nil:
		r := PipeResult{Result: p.Ahead.Result, Key: p.Ahead.Key, Flushed: true}
		p.Ahead = nil
		s.Pipes[worker] = p
		return s, r
	case p.Ready != nil:
		r := *p.Ready
		r.Flushed = true
		p.Ready = nil
		s.Pipes[worker] = p
		return s, r
	default:
		return start, PipeResult{}
	}
	next, r := s.pipeRecord(start, worker, p, step)
	r.Flushed = r.Result != ResultInvalidJitter
	return next, r
}

// nextClaim is the claim a call of worker sends next: the one made
// ahead, or a new one (into Claims[worker+pipeNext]) under app; pending
// says it took a row to send.
func (s *State) nextClaim(worker string, p *Pipe, app Refusal) (ClaimResult, bool) {
	if c, ok := s.Claims[worker+pipeNext]; ok {
		return ClaimResult{Result: ResultClaimed, Key: c.Key}, true
	}
	if a := p.Ahead; a != nil {
		p.Ahead = nil
		if a.Result != Idle { // an idle claim ahead is out of date: claim afresh
			return *a, false
		}
	}
	var c ClaimResult
	*s, c = s.pipeClaim(worker, p, app)
	return c, c.Result == ResultClaimed
}

// pipeClaim is a claim of worker into Claims[worker+pipeNext] while the
// app database refuses writes with app. After a claim that found nothing
// due (p.Idle) it is first a read of when the next row is due, which app
// does not refuse: while nothing is due it answers Idle, claiming
// nothing. A refused claim takes nothing and names no row.
func (s State) pipeClaim(worker string, p *Pipe, app Refusal) (State, ClaimResult) {
	next, c := s.claimInto(worker+pipeNext, worker)
	switch {
	case p.Idle && c.Result == Idle: // the read found nothing due
		return s, c
	case app != Accepted:
		p.Idle = false
		return s, ClaimResult{Result: refusedResults[app]}
	}
	p.Idle = c.Result == Idle
	return next, c
}

// pipeRecord records the answer of worker's last send under step and
// returns what its delivery came to; start is the state before the call,
// returned with ResultInvalidJitter.
func (s State) pipeRecord(start State, worker string, p Pipe, step PipeStep) (State, PipeResult) {
	next, r, key := s.pipeSettle(worker, step)
	if r == ResultInvalidJitter {
		return start, PipeResult{Result: r, Key: key}
	}
	next.Pipes[worker] = p
	return next, PipeResult{Result: r, Key: key}
}

// pipeSettle records the answer of worker's last send with step's
// jitter. A write the app database refuses (step.App) records nothing,
// not even the cause of a failed send: the answer is dropped and the row
// keeps its lease until it runs out.
func (s State) pipeSettle(worker string, step PipeStep) (State, Result, string) {
	next, r, key := s.Settle(worker, step.Jitter)
	if r == ResultInvalidJitter || step.App == Accepted {
		return next, r, key
	}
	s = s.clone()
	delete(s.Claims, worker)
	return s, refusedResults[step.App], key
}

// pipeSend sends worker's claim in Claims[worker] meeting step's request,
// the clock moving step.Slow while it does, and reports whether it was
// answered fast: within half the send timeout, and before the claim's
// window ran out. A claim whose window ran out before the send is not
// sent (see Send): no answer comes, and no time passes waiting for one.
func (s State) pipeSend(worker string, step PipeStep) (State, bool) {
	c := s.Claims[worker]
	if s.Now >= c.At+s.SendTimeout {
		s, _ = s.Send(worker, step.Request)
		return s, false
	}
	s, _ = s.Send(worker, step.Request)
	s.Now += step.Slow
	return s, step.Slow <= s.SendTimeout/2 && s.Now < c.At+s.SendTimeout
}
