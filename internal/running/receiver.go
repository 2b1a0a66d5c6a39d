package running

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outboxlab/handoff/system"
)

// Receiver is the harness's receiver in a running run: the spec's
// receiver (a task per key, a replay answered with the task, another
// payload a conflict), reached in memory, that answers each request as
// the schedule says and records every request and every task.
type Receiver struct {
	schedule Schedule
	start    time.Time

	mu       sync.Mutex
	tasks    []Task
	byKey    map[string]int64 // the task of each key
	requests []Request
	refused  map[string]bool // keys and payloads the receiver refused for good
}

// Task is one task the receiver created.
type Task struct {
	ID           int64
	Key, Payload string
	At           time.Duration
}

// Request is one request a process sent, and what came of it.
type Request struct {
	N            int           // its number, from 1, as the schedule counts
	At           time.Duration // when it was sent
	Generation   int           // the boot of the process that sent it
	Worker       string        // the worker that sent it, when the design names it
	Key, Payload string
	Answer       Answer
	// Reached says the receiver took it: an outage's and a crashed
	// process's requests never arrive.
	Reached bool
	// Outcome says what the receiver did and what the worker heard.
	Outcome string
}

func newReceiver(s Schedule, start time.Time) *Receiver {
	return &Receiver{schedule: s, start: start, byKey: map[string]int64{}, refused: map[string]bool{}}
}

// create is CreateTask for the process p.
func (r *Receiver) create(ctx context.Context, p *process, worker, key, payload string) (int64, error) {
	p.watch.moved()
	r.mu.Lock()
	n := len(r.requests) + 1
	rule := r.schedule.rule(n)
	req := Request{N: n, At: time.Since(r.start), Generation: p.gen, Worker: worker, Key: key, Payload: payload, Answer: rule.Answer}
	r.requests = append(r.requests, req)
	r.mu.Unlock()
	done := func(reached bool, outcome string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests[n-1].Reached, r.requests[n-1].Outcome = reached, outcome
	}
	if !p.alive() {
		done(false, "never left: the process had crashed")
		return 0, fmt.Errorf("%w: %w", system.ErrTransient, ErrCrashed)
	}
	if r.down(req.At) {
		done(false, "the receiver is down: failed before it acted")
		return 0, fmt.Errorf("%w: connection refused (outage)", system.ErrTransient)
	}
	if rule.Answer == Hold {
		// The worker is paused: it sends only after the hold, whatever
		// its timeout says.
		select {
		case <-time.After(rule.Wait):
		case <-p.crashed:
		case <-p.stopping:
		}
		if !p.alive() {
			done(false, fmt.Sprintf("held %s, and the process crashed meanwhile: never left", rule.Wait))
			return 0, fmt.Errorf("%w: %w", system.ErrTransient, ErrCrashed)
		}
	}
	switch rule.Answer {
	case Busy, Throttled:
		done(true, fmt.Sprintf("%s, retry after %s, before acting", rule.Answer, rule.Wait))
		return 0, &system.RetryHint{After: rule.Wait, Err: fmt.Errorf("%w: %s", system.ErrTransient, rule.Answer)}
	case InFlight:
		done(true, "409: in flight elsewhere, before acting")
		return 0, fmt.Errorf("%w: 409 in flight", system.ErrTransient)
	case Refused, Conflict:
		r.mu.Lock()
		r.refused[key], r.refused[payload] = true, true
		r.mu.Unlock()
		if rule.Answer == Conflict {
			done(true, "422: the key holds another payload, before acting")
			return 0, fmt.Errorf("%w: 422", system.ErrKeyConflict)
		}
		done(true, "400: refused for good, before acting")
		return 0, fmt.Errorf("%w: 400", system.ErrRejected)
	}
	id, replayed, err := r.store(key, payload)
	if err != nil {
		r.mu.Lock()
		r.refused[key], r.refused[payload] = true, true
		r.mu.Unlock()
		done(true, "422: the key holds another payload")
		return 0, err
	}
	acted := fmt.Sprintf("created task %d", id)
	if replayed {
		acted = fmt.Sprintf("replayed task %d", id)
	}
	switch rule.Answer {
	case LostReply:
		done(true, acted+"; the reply was lost")
		return 0, fmt.Errorf("%w: reply lost", system.ErrTransient)
	case Failed:
		done(true, acted+"; answered 500")
		return 0, fmt.Errorf("%w: 500", system.ErrTransient)
	case Slow:
		select {
		case <-ctx.Done():
		case <-time.After(time.Minute): // a client with no timeout
		case <-p.crashed:
		case <-p.stopping:
		}
		done(true, acted+"; the reply came after the client gave up")
		return 0, fmt.Errorf("%w: answer too slow: %w", system.ErrTransient, context.DeadlineExceeded)
	}
	done(true, acted)
	return id, nil
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

// store creates the task of key, or replays it.
func (r *Receiver) store(key, payload string) (int64, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.byKey[key]; ok {
		if r.tasks[id-1].Payload != payload {
			return 0, false, fmt.Errorf("%w: %s", system.ErrKeyConflict, key)
		}
		return id, true, nil
	}
	id := int64(len(r.tasks) + 1)
	r.tasks = append(r.tasks, Task{ID: id, Key: key, Payload: payload, At: time.Since(r.start)})
	r.byKey[key] = id
	return id, false, nil
}

// seen is what the receiver knows at one moment.
type seen struct {
	tasks    []Task
	requests map[string]int  // requests that reached it, by key
	refused  map[string]bool // keys and payloads refused for good
}

// snapshot is what the receiver knows now.
func (r *Receiver) snapshot() seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := seen{tasks: append([]Task(nil), r.tasks...), requests: map[string]int{}, refused: map[string]bool{}}
	for _, q := range r.requests {
		if q.Reached {
			s.requests[q.Key]++
		}
	}
	for k := range r.refused {
		s.refused[k] = true
	}
	return s
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
