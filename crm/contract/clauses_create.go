package contract

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// firstCreate checks ClauseFirstCreate.
func (c *checker) firstCreate(ctx context.Context) Result {
	cl := ClauseFirstCreate
	key, payload := c.key(cl), c.payload(cl)
	r, err := c.post(ctx, c.client, quoted(key), payload)
	if err != nil {
		return fail(cl, "POST: %v", err)
	}
	id, err := taskOf(r, key, payload)
	switch loc := r.header.Get("Location"); {
	case err != nil:
		return fail(cl, "POST → %v", err)
	case replayed(r):
		return fail(cl, "POST of a new key → 201 task %d marked Idempotent-Replayed", id)
	case !names(loc, id):
		return fail(cl, "POST → 201 task %d with Location %q, want …/tasks/%d", id, loc, id)
	default:
		return pass(cl, "POST → 201 task %d, Location %s", id, loc)
	}
}

// names says whether location is the path of task id: …/tasks/{id}.
func names(location string, id int64) bool {
	u, err := url.Parse(location)
	return err == nil && strings.HasSuffix(u.Path, "/tasks/"+strconv.FormatInt(id, 10))
}

// concurrent checks ClauseConcurrent.
func (c *checker) concurrent(ctx context.Context) Result {
	cl := ClauseConcurrent
	key, payload := c.key(cl), c.payload(cl)
	client := c.newClient(false)
	answers := make([]reply, concurrentRequests)
	errs := make([]error, concurrentRequests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range concurrentRequests {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = c.post(ctx, client, quoted(key), payload)
		})
	}
	close(start)
	wg.Wait()
	var ids []int64
	var body []byte
	made, replays, conflicts := 0, 0, 0
	for i, r := range answers {
		if errs[i] != nil {
			return fail(cl, "%d requests at once: %v", concurrentRequests, errs[i])
		}
		switch r.status {
		case http.StatusConflict:
			conflicts++
			continue
		case http.StatusCreated:
		default:
			return fail(cl, "%d requests at once: one → %s, want 201 or 409", concurrentRequests, describe(r, key))
		}
		id, err := taskOf(r, key, payload)
		if err != nil {
			return fail(cl, "%d requests at once: one → %v", concurrentRequests, err)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		if body == nil {
			body = r.body
		}
		if len(ids) > 1 {
			return fail(cl, "%d requests at once → tasks %v: two tasks for one key", concurrentRequests, ids)
		}
		if !bytes.Equal(r.body, body) {
			return fail(cl, "%d requests at once → task %d twice, in different bytes", concurrentRequests, id)
		}
		if replayed(r) {
			replays++
		} else {
			made++
		}
	}
	after, err := c.replay(ctx, c.client, key, payload)
	if err != nil {
		return fail(cl, "%d requests at once; then a replay: %v", concurrentRequests, err)
	}
	id, err := taskOf(after, key, payload)
	switch {
	case err != nil:
		return fail(cl, "%d requests at once; then a replay → %v", concurrentRequests, err)
	case len(ids) == 1 && id != ids[0]:
		return fail(cl, "%d requests at once → task %d; then a replay → task %d: two tasks for one key", concurrentRequests, ids[0], id)
	}
	return pass(cl, "%d requests at once → %d created, %d replayed, %d × 409; then a replay → task %d", concurrentRequests, made, replays, conflicts, id)
}

// lookupClause checks ClauseLookup.
func (c *checker) lookupClause(ctx context.Context) Result {
	cl := ClauseLookup
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	ids, err := c.lookup(ctx, t.key)
	switch {
	case err != nil:
		return fail(cl, "POST → 201 task %d; %v", t.id, err)
	case !slices.Equal(ids, []int64{t.id}):
		return fail(cl, "POST → 201 task %d; GET /tasks?key= → tasks %v, want [%d]", t.id, ids, t.id)
	}
	loc, err := url.Parse(t.first.header.Get("Location"))
	if err != nil {
		return fail(cl, "POST → 201 task %d with Location %q: %v", t.id, t.first.header.Get("Location"), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.ResolveReference(loc).String(), nil)
	if err != nil {
		return fail(cl, "GET %s: %v", loc, err)
	}
	r, err := do(c.client, req)
	if err != nil {
		return fail(cl, "GET %s: %v", loc, err)
	}
	if id, err := parseTask(r.body, t.key, t.payload); r.status != http.StatusOK || err != nil || id != t.id {
		return fail(cl, "GET /tasks?key= → [%d]; GET %s → %s, want 200 task %d", t.id, loc, describe(r, t.key), t.id)
	}
	return pass(cl, "POST → 201 task %d; GET /tasks?key= → [%d]; GET %s → 200 task %d", t.id, t.id, loc, t.id)
}
