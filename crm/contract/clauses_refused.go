package contract

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/outboxlab/handoff/crm"
)

// refusedThenCreates checks that each bad request is a 400 problem+json,
// and that the key, quoted, then creates a new task: nothing was stored.
func (c *checker) refusedThenCreates(ctx context.Context, cl Clause, bad map[string]string, what string) Result {
	key, payload := c.key(cl), c.payload(cl)
	labels := make([]string, 0, len(bad))
	for label := range bad {
		labels = append(labels, label)
	}
	slices.Sort(labels)
	for _, label := range labels {
		r, err := c.post(ctx, c.client, bad[label], payload)
		switch {
		case err != nil:
			return fail(cl, "POST with %s: %v", label, err)
		case r.status != http.StatusBadRequest || !isProblem(r):
			return fail(cl, "POST with %s → %s, want 400 problem+json", label, describe(r, key))
		}
	}
	r, err := c.post(ctx, c.client, quoted(key), payload)
	if err != nil {
		return fail(cl, "%s → 400; then with the key: %v", what, err)
	}
	id, err := taskOf(r, key, payload)
	switch {
	case err != nil:
		return fail(cl, "%s → 400; then with the key → %v", what, err)
	case replayed(r):
		return fail(cl, "%s → 400; then with the key → 201 task %d marked replayed: a refused request was kept", what, id)
	}
	return pass(cl, "%s → 400 problem+json; then with the key → 201 task %d, new", what, id)
}

// missingKey checks ClauseMissingKey.
func (c *checker) missingKey(ctx context.Context) Result {
	return c.refusedThenCreates(ctx, ClauseMissingKey, map[string]string{"no Idempotency-Key": ""}, "no Idempotency-Key")
}

// malformedKey checks ClauseMalformedKey with three malformed keys.
func (c *checker) malformedKey(ctx context.Context) Result {
	key := c.key(ClauseMalformedKey)
	long := key + strings.Repeat("x", crm.MaxKeyLength+1-len(key))
	return c.refusedThenCreates(ctx, ClauseMalformedKey, map[string]string{
		"the key unquoted": key,
		`an empty key ""`:  `""`,
		fmt.Sprintf("a %d-character key", len(long)): quoted(long),
	}, "unquoted, empty and too long keys")
}
