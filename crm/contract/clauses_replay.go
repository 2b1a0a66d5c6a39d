package contract

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// sameAnswer is the verdict on a replay r of t: the stored response byte
// for byte, marked Idempotent-Replayed.
func sameAnswer(cl Clause, t created, r reply, err error, how string) Result {
	if err != nil {
		return fail(cl, "POST → 201 task %d; again (%s): %v", t.id, how, err)
	}
	again := describe(r, t.key)
	switch {
	case r.status != t.first.status || !bytes.Equal(r.body, t.first.body):
		return fail(cl, "POST → 201 task %d; again (%s) → %s, not the same %d bytes", t.id, how, again, len(t.first.body))
	case !replayed(r):
		return fail(cl, "POST → 201 task %d; again (%s) → the same bytes, without Idempotent-Replayed: true", t.id, how)
	}
	return pass(cl, "POST → 201 task %d; again (%s) → the same %d bytes, Idempotent-Replayed: true", t.id, how, len(r.body))
}

// replaySameConnection checks ClauseReplay.
func (c *checker) replaySameConnection(ctx context.Context) Result {
	cl := ClauseReplay
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	r, err := c.replay(ctx, c.client, t.key, t.payload)
	how := "same connection"
	if err == nil && !r.reused {
		how = "a new connection: the receiver closed the first"
	}
	return sameAnswer(cl, t, r, err, how)
}

// replayNewConnection checks ClauseReplayNewConnection.
func (c *checker) replayNewConnection(ctx context.Context) Result {
	cl := ClauseReplayNewConnection
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	r, err := c.replay(ctx, c.newClient(false), t.key, t.payload)
	return sameAnswer(cl, t, r, err, "new connection")
}

// otherPayload checks ClauseOtherPayload.
func (c *checker) otherPayload(ctx context.Context) Result {
	cl := ClauseOtherPayload
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	var tried []string
	for _, other := range c.otherPayloads(cl) {
		r, err := c.post(ctx, c.client, quoted(t.key), other.payload)
		switch {
		case err != nil:
			return fail(cl, "POST → 201 task %d; %s: %v", t.id, other.words, err)
		case r.status != http.StatusUnprocessableEntity || !isProblem(r):
			return fail(cl, "POST → 201 task %d; %s → %s, want 422 problem+json", t.id, other.words, describe(r, t.key))
		}
		tried = append(tried, other.words)
	}
	again, err := c.replay(ctx, c.client, t.key, t.payload)
	switch {
	case err != nil:
		return fail(cl, "other payloads → 422; then the original: %v", err)
	case again.status != t.first.status || !bytes.Equal(again.body, t.first.body):
		return fail(cl, "other payloads → 422; then the original → %s, not its stored answer (task %d)", describe(again, t.key), t.id)
	}
	return pass(cl, "POST → 201 task %d; %s → 422 problem+json each; the original → task %d again", t.id, strings.Join(tried, ", "), t.id)
}

// cuts are the moments replayAfterCut closes a connection at: a key
// suffix and the words for the evidence.
var cuts = []struct {
	suffix, words string
	answered      bool
}{
	{"-at-once", "cut at once", false},
	{"-as-answered", "cut as answered", true},
}

// settle waits, at most cutSettle, until GET /tasks?key= lists a task for
// key: a client retries a request it abandoned later, not at once (the
// race of two requests at once is ClauseConcurrent's).
func (c *checker) settle(ctx context.Context, key string) {
	deadline := time.Now().Add(cutSettle)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if ids, err := c.lookup(ctx, key); err == nil && len(ids) > 0 {
			return
		}
		time.Sleep(retryPause)
	}
}

// replayAfterCut checks ClauseReplayAfterCut, once per moment of cuts.
func (c *checker) replayAfterCut(ctx context.Context) Result {
	cl := ClauseReplayAfterCut
	payload := c.payload(cl)
	var seen []string
	for _, cut := range cuts {
		key := c.key(cl) + cut.suffix
		if err := c.sendAndCut(ctx, key, payload, cut.answered); err != nil {
			return fail(cl, "POST, %s: %v", cut.words, err)
		}
		c.settle(ctx, key)
		r, err := c.replay(ctx, c.client, key, payload)
		if err != nil {
			return fail(cl, "POST, %s; the replay: %v", cut.words, err)
		}
		id, err := taskOf(r, key, payload)
		if err != nil {
			return fail(cl, "POST, %s; the replay → %v", cut.words, err)
		}
		ids, err := c.lookup(ctx, key)
		switch {
		case err != nil:
			return Result{cl, Skip, fmt.Sprintf("POST, %s; the replay → %s; the tasks cannot be counted: %v", cut.words, describe(r, key), err)}
		case !slices.Equal(ids, []int64{id}):
			return fail(cl, "POST, %s; the replay → %s; GET /tasks?key= → tasks %v: want task %d alone", cut.words, describe(r, key), ids, id)
		}
		seen = append(seen, fmt.Sprintf("%s, replay → %s, lookup [%d]", cut.words, describe(r, key), id))
	}
	return pass(cl, "%s", strings.Join(seen, "; "))
}
