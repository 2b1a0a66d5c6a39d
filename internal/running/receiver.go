package running

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// Receiver is the harness's receiver in a running run: the spec's
// receiver (a task per key, a replay answered with the task, another
// payload a conflict), reached in memory as a function or over HTTP,
// that answers each request as the schedule says (by its number, or for
// good by its case) and records every request and every task.
type Receiver struct {
	schedule Schedule
	start    time.Time

	mu       sync.Mutex
	tasks    []Task
	byKey    map[string]int64 // the task of each key
	requests []Request
	cases    map[string]string // the case of each approved key and payload
	keyOf    map[string]string // the approved key of each payload
}

// Task is one task the receiver created.
type Task struct {
	ID           int64
	Key, Payload string
	At           time.Duration
	// Keyless says the request carried no Idempotency-Key: the receiver
	// created the task without looking for one, and Key is the key
	// approved with its payload.
	Keyless bool
}

// Request is one request a process sent, and what came of it.
type Request struct {
	N          int           // its number, from 1, as the schedule counts
	At         time.Duration // when it was sent
	Done       time.Duration // when its answer went back, or it ended unanswered
	Generation int           // the boot of the process that sent it
	Replica    int           // the process, from 1, that sent it
	Worker     string        // the worker that sent it, when the design names it
	// Case is the approved case whose key or payload the request carries,
	// "" when it carries neither.
	Case         string
	Key, Payload string
	// Keyless says an HTTP request carried no Idempotency-Key.
	Keyless bool
	// Answer is what the receiver did with it: Answered (a task created
	// or replayed, and its answer sent), another answer the schedule's
	// rule for its number or its key's lasting fault gave, KeyConflict when
	// the key held another payload, or Down when it never reached the
	// receiver. Until it ends, the rule's answer.
	Answer Answer
	// Reached says the receiver took it: an outage's and a crashed
	// process's requests never arrive.
	Reached bool
	// Outcome says what the receiver did and what the worker heard.
	Outcome string

	neverLeft bool // the process had crashed: the request never left it
	unheard   bool // the process crashed before the answer reached it
}

// Down is the answer of a request that failed before it reached the
// receiver: an outage, a key the receiver is offline for, or a process
// that had crashed. No schedule draws it for a request.
var Down = Answer{Fault: faults.Offline}

// refusal reports whether the receiver refused the request for good.
func (q Request) refusal() bool {
	return q.Reached && (q.Answer == Refused || q.Answer == KeyConflict)
}

// made reports whether the request left its process: it reached the
// receiver, or failed at it (an outage). A request of a crashed process
// never left.
func (q Request) made() bool { return q.Reached || q.Answer == Down && !q.neverLeft }

// id is who a request is for: its case where the harness knows it (a
// design may send one case under keys of its own), else its key.
func (q Request) id() string {
	if q.Case != "" {
		return q.Case
	}
	return q.Key
}

func newReceiver(s Schedule, start time.Time) *Receiver {
	return &Receiver{schedule: s, start: start, byKey: map[string]int64{}, cases: map[string]string{}, keyOf: map[string]string{}}
}

// approved tells the receiver the key and payload the app derived for a
// case, so that a request carrying either is known to be that case's.
func (r *Receiver) approved(caseID, key, payload string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key != "" {
		r.cases[key] = caseID
	}
	if payload != "" {
		r.cases[payload] = caseID
		r.keyOf[payload] = key
	}
}

// caseOf is the case of a request's key or payload: as the app approved
// it, or, for a request that comes before the harness heard of its
// approval, the case_id of a payload in the spec's form. r.mu is held.
func (r *Receiver) caseOf(key, payload string) string {
	if c := r.cases[key]; c != "" {
		return c
	}
	if c := r.cases[payload]; c != "" {
		return c
	}
	var p struct {
		CaseID string `json:"case_id"`
	}
	if json.Unmarshal([]byte(payload), &p) == nil {
		return p.CaseID
	}
	return ""
}

// reply is what the receiver did with one request, for either way of
// reaching it to say.
type reply struct {
	answer   Answer // Answered, a drawn answer, or Down
	replayed bool
	task     Task          // the task created or replayed, when the receiver acted
	wait     time.Duration // the retry hint of a 503 or 429
	// err is the answer as a system.Receiver says it.
	err error
}

// create is CreateTask for the process p.
func (r *Receiver) create(ctx context.Context, p *process, worker, key, payload string) (int64, error) {
	rep := r.handle(ctx, p, worker, key, payload, false, malformedRequest{})
	if rep.err != nil {
		return 0, rep.err
	}
	if rep.replayed {
		system.NoteReplay(ctx)
	}
	return rep.task.ID, nil
}

// malformedRequest, when its status is not zero, is why the receiver
// over HTTP refuses a request for good before it reaches the store: a
// malformed key or body.
type malformedRequest struct {
	status int
	detail string
}

// handle takes one request of process p: it records it, answers it as
// the schedule says, and returns what it did. A malformed request (bad)
// that left and found the receiver up is refused for good before acting,
// whatever answer the schedule drew for it.
func (r *Receiver) handle(ctx context.Context, p *process, worker, key, payload string, keyless bool, bad malformedRequest) reply {
	p.watch.moved()
	r.mu.Lock()
	n := len(r.requests) + 1
	rule := r.schedule.rule(n)
	caseID := r.caseOf(key, payload)
	at := time.Since(r.start)
	r.requests = append(r.requests, Request{N: n, At: at, Generation: p.gen, Replica: p.replica, Worker: worker,
		Case: caseID, Key: key, Payload: payload, Keyless: keyless, Answer: rule.Answer})
	r.mu.Unlock()
	fault, lasting := r.schedule.keyFault(caseID)
	end := func(answer Answer, reached bool, outcome string, set func(*Request)) {
		r.mu.Lock()
		defer r.mu.Unlock()
		q := &r.requests[n-1]
		q.Answer, q.Reached, q.Outcome, q.Done = answer, reached, outcome, time.Since(r.start)
		if set != nil {
			set(q)
		}
	}
	done := func(answer Answer, reached bool, outcome string) { end(answer, reached, outcome, nil) }
	neverLeft := func(outcome string) reply {
		end(Down, false, outcome, func(q *Request) { q.neverLeft = true })
		return reply{answer: Down, err: fmt.Errorf("%w: %w", system.ErrTransient, ErrCrashed)}
	}
	if !p.alive() {
		return neverLeft("never left: the process had crashed")
	}
	if r.down(at) {
		done(Down, false, "the receiver is down: failed before it acted")
		return reply{answer: Down, err: fmt.Errorf("%w: connection refused (outage)", system.ErrTransient)}
	}
	if rule.Answer == Paused {
		// The worker is paused: it sends only once the pause is over,
		// whatever its timeout says.
		select {
		case <-time.After(rule.Wait):
		case <-p.crashed:
		case <-p.stopping:
		}
		if !p.alive() {
			return neverLeft(fmt.Sprintf("held %s, and the process crashed meanwhile: never left", rule.Wait))
		}
	}
	if lasting && fault == DownKey {
		done(Down, false, "the receiver is down for this key, for good: failed before it acted")
		return reply{answer: Down, err: fmt.Errorf("%w: connection refused (down for this key)", system.ErrTransient)}
	}
	if bad.status != 0 {
		done(Refused, true, fmt.Sprintf("%d: %s, before acting", bad.status, bad.detail))
		return reply{answer: Refused, err: fmt.Errorf("%w: %d", system.ErrRejected, bad.status)}
	}
	answer := rule.Answer
	if lasting {
		answer = map[KeyFault]Answer{RefuseKey400: Refused, RefuseKey422: KeyConflict, SlowKey: LateReply}[fault]
	}
	forGood := ""
	if lasting {
		forGood = ", as every request for this key"
	}
	switch answer {
	case Throttled503, Throttled429:
		done(answer, true, fmt.Sprintf("%d, retry after %s, before acting", answer.Status, rule.Wait))
		return reply{answer: answer, wait: rule.Wait, err: &system.RetryHint{After: rule.Wait, Err: fmt.Errorf("%w: %d", system.ErrTransient, answer.Status)}}
	case InFlight:
		done(answer, true, "409: in flight elsewhere, before acting")
		return reply{answer: answer, err: fmt.Errorf("%w: 409 in flight", system.ErrTransient)}
	case KeyConflict:
		done(answer, true, "422: the key holds another payload, before acting"+forGood)
		return reply{answer: answer, err: fmt.Errorf("%w: 422", system.ErrKeyConflict)}
	case Refused:
		done(answer, true, "400: refused for good, before acting"+forGood)
		return reply{answer: answer, err: fmt.Errorf("%w: 400", system.ErrRejected)}
	}
	t, replayed, err := r.store(key, payload, keyless)
	if err != nil {
		done(KeyConflict, true, "422: the key holds another payload")
		return reply{answer: KeyConflict, err: err}
	}
	acted := fmt.Sprintf("created task %d", t.ID)
	switch {
	case replayed:
		acted = fmt.Sprintf("replayed task %d", t.ID)
	case keyless:
		acted = fmt.Sprintf("created task %d: no Idempotency-Key, so no replay looked for", t.ID)
	}
	rep := reply{answer: answer, replayed: replayed, task: t}
	switch answer {
	case LostReply:
		done(answer, true, acted+"; the reply was lost")
		return reply{answer: answer, task: t, err: fmt.Errorf("%w: reply lost", system.ErrTransient)}
	case FailedAfterActing:
		done(answer, true, acted+"; answered 500")
		return reply{answer: answer, task: t, err: fmt.Errorf("%w: 500", system.ErrTransient)}
	case LateReply:
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute): // a client with no timeout
		case <-p.crashed:
		case <-p.stopping:
		}
		if !p.alive() {
			end(answer, true, acted+"; the process crashed before the reply came", func(q *Request) { q.unheard = true })
		} else {
			done(answer, true, acted+"; the reply came after the client gave up"+forGood)
		}
		return reply{answer: answer, task: t, err: fmt.Errorf("%w: answer too slow: %w", system.ErrTransient, context.DeadlineExceeded)}
	}
	done(Answered, true, acted)
	rep.answer = Answered
	return rep
}

// down reports whether an outage of the schedule covers at.
func (r *Receiver) down(at time.Duration) bool {
	for _, e := range r.schedule.Events {
		if e.Kind == Outage && e.At <= at && at < e.At+e.For {
			return true
		}
	}
	return false
}

// store creates the task of key, or replays it. A keyless request
// creates a task every time, named by the key approved with its
// payload.
func (r *Receiver) store(key, payload string, keyless bool) (Task, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keyless {
		key = r.keyOf[payload]
	} else if id, ok := r.byKey[key]; ok {
		if t := r.tasks[id-1]; t.Payload != payload {
			return Task{}, false, fmt.Errorf("%w: %s", system.ErrKeyConflict, key)
		}
		return r.tasks[id-1], true, nil
	}
	t := Task{ID: int64(len(r.tasks) + 1), Key: key, Payload: payload, At: time.Since(r.start), Keyless: keyless}
	r.tasks = append(r.tasks, t)
	if !keyless {
		r.byKey[key] = t.ID
	}
	return t, false, nil
}

// seen is what the receiver knows at one moment.
type seen struct {
	tasks    []Task
	requests []Request
}

// snapshot is what the receiver knows now.
func (r *Receiver) snapshot() seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return seen{tasks: append([]Task(nil), r.tasks...), requests: append([]Request(nil), r.requests...)}
}

// Requests is every request so far, in the order sent.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// taskOf returns the task of key in s, if any.
func (s seen) taskOf(key string) (Task, bool) {
	for _, t := range s.tasks {
		if t.Key == key {
			return t, true
		}
	}
	return Task{}, false
}

// count is how many requests for key are such.
func (s seen) count(key string, such func(Request) bool) int {
	n := 0
	for _, q := range s.requests {
		if q.Key == key && such(q) {
			n++
		}
	}
	return n
}

// reached is how many requests for key reached the receiver.
func (s seen) reached(key string) int { return s.count(key, func(q Request) bool { return q.Reached }) }

// made is how many requests for key left their process: those that
// reached the receiver and those that failed at it during an outage.
func (s seen) made(key string) int { return s.count(key, Request.made) }

// failed is how many requests for key brought back an error to a
// process that lived to hear it: answered with an error, or failed at
// the receiver. An outbox that counts errors counts at most these; a
// request a crash cut is not among them.
func (s seen) failed(key string) int {
	return s.count(key, func(q Request) bool { return q.made() && !q.unheard && q.Answer != Answered })
}

// refused reports whether the receiver refused some request of key or
// of its payload for good.
func (s seen) refused(key, payload string) bool {
	for _, q := range s.requests {
		if q.refusal() && (q.Key == key || payload != "" && q.Payload == payload) {
			return true
		}
	}
	return false
}
