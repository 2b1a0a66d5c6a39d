package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxlab/handoff/system"
)

// Network returns a Receiver that carries requests to inner with fault k:
// Offline fails before inner acts, LostReply lets inner act and loses the
// reply, DuplicateRequest delivers every request twice, ForeignTask first
// has another system create a task with ForeignPayload under the key. Any
// other kind is a healthy network and returns inner itself.
func Network(k Kind, inner system.Receiver) system.Receiver {
	switch k {
	case ForeignTask:
		return foreign{inner}
	case Offline:
		return offline{}
	case LostReply:
		return lostReply{inner}
	case DuplicateRequest:
		return duplicate{inner}
	case Refused:
		return refused{}
	}
	return inner
}

// Throttle returns a Receiver that answers every request with a transient
// failure and the hint to retry after after, without acting: what a
// receiver's 429 or 503 with Retry-After says.
func Throttle(after time.Duration) system.Receiver { return throttled(after) }

type throttled time.Duration

func (t throttled) CreateTask(context.Context, string, string) (int64, error) {
	return 0, &system.RetryHint{After: time.Duration(t), Err: fmt.Errorf("%w: throttled", system.ErrTransient)}
}

type refused struct{}

func (refused) CreateTask(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("%w: the request was refused for good", system.ErrRejected)
}

type offline struct{}

func (offline) CreateTask(context.Context, string, string) (int64, error) {
	return 0, fmt.Errorf("%w: offline, the request never reached the receiver", system.ErrTransient)
}

type foreign struct{ inner system.Receiver }

func (f foreign) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	_, _ = f.inner.CreateTask(ctx, key, ForeignPayload) // refused where the key is taken: that is the receiver's business
	return f.inner.CreateTask(ctx, key, payload)
}

type lostReply struct{ inner system.Receiver }

func (l lostReply) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if _, err := l.inner.CreateTask(ctx, key, payload); err != nil {
		return 0, fmt.Errorf("%w: the reply was lost (the receiver said %v)", system.ErrTransient, err)
	}
	return 0, fmt.Errorf("%w: the reply was lost after the receiver acted", system.ErrTransient)
}

// Window is implemented by receivers that look a key up and insert its task
// in separate steps. CreateTaskWindow calls between after the lookup and
// before the insert, which is where a duplicate request can slip in.
type Window interface {
	CreateTaskWindow(ctx context.Context, key, payload string, between func()) (int64, error)
}

type duplicate struct{ inner system.Receiver }

// CreateTask sends the request twice, as a retrying client does while its
// first request is still in flight. A receiver with a Window gets the second
// copy inside it; any other receiver gets it after the first. The worker
// hears the first copy's reply.
func (d duplicate) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	w, ok := d.inner.(Window)
	if !ok {
		id, err := d.inner.CreateTask(ctx, key, payload)
		_, _ = d.inner.CreateTask(ctx, key, payload) // the copy's reply goes nowhere
		return id, err
	}
	return w.CreateTaskWindow(ctx, key, payload, func() {
		_, _ = d.inner.CreateTask(ctx, key, payload) // the copy's reply goes nowhere
	})
}

// Counted returns a Receiver that adds one to sends[key] for every request
// the worker sends, before passing it to next. The harness keeps sends
// across restarts to check that no key is sent more often than its row
// counts attempts.
func Counted(sends map[string]int, next system.Receiver) system.Receiver {
	return counter{sends, next}
}

type counter struct {
	sends map[string]int
	next  system.Receiver
}

func (c counter) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	c.sends[key]++
	return c.next.CreateTask(ctx, key, payload)
}
