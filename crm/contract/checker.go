package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// keyNamespace starts every key Check sends, so that its tasks are
// recognisable in a staging CRM.
const keyNamespace = "handoff-check:create-followup:v1:"

// concurrentRequests is how many requests ClauseConcurrent sends at once.
const concurrentRequests = 8

// cutSettle is how long ClauseReplayAfterCut waits at most for a request
// it abandoned to leave a task before it replays.
const cutSettle = 300 * time.Millisecond

// retryPause is how long a replay waits after a 409 before trying again.
const retryPause = 20 * time.Millisecond

// checker is one run of Check: the receiver, the run's keys, and what the
// run has seen so far.
type checker struct {
	base   *url.URL
	opts   Options
	runID  string
	prefix string       // the start of every key of the run: namespace and run id
	client *http.Client // keeps its connection alive between requests

	mu         sync.Mutex
	transports []*http.Transport
	answers    []retentionSeen

	// stated is the retention GET /contract states, once ClauseRetention
	// has read it.
	stated *time.Duration
}

// newChecker returns the checker of the run runID against base.
func newChecker(base *url.URL, opts Options, runID string) *checker {
	c := &checker{base: base, opts: opts, runID: runID, prefix: keyNamespace + runID + "-"}
	c.client = c.newClient(true)
	return c
}

// newRunID is the time, to the second, and 32 random bits: unique per run,
// and it says when the run was.
func newRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// key is the run's key for clause cl.
func (c *checker) key(cl Clause) string { return c.prefix + cl.String() }

// payload is a payload of the spec's shape for clause cl.
func (c *checker) payload(cl Clause) string { return c.payloadTitled(cl, c.title(cl)) }

// otherPayload is a payload for a clause's key other than its own, and
// the words for how it differs.
type otherPayload struct {
	words, payload string
}

// otherPayloads are payloads for cl's key other than payload(cl), each
// one a receiver must refuse: another title, and the same title in other
// letter case (a receiver compares the bytes it stored, not what a
// person would read as the same).
func (c *checker) otherPayloads(cl Clause) []otherPayload {
	return []otherPayload{
		{"another title", c.payloadTitled(cl, c.title(cl)+" (another payload)")},
		{"the title in capitals", c.payloadTitled(cl, strings.ToUpper(c.title(cl)))},
	}
}

// title is the title of cl's payload.
func (c *checker) title(cl Clause) string {
	return "handoff check-receiver run " + c.runID + ": " + cl.String()
}

// payloadTitled is cl's payload with title.
func (c *checker) payloadTitled(cl Clause, title string) string {
	b, _ := json.Marshal(struct { // a struct of strings always marshals
		CaseID string `json:"case_id"`
		Title  string `json:"title"`
	}{c.runID + "-" + cl.String(), title})
	return string(b)
}

// quoted is key as a structured-field string: the checker's keys hold no
// '"' or '\', so quoting is enough.
func quoted(key string) string { return `"` + key + `"` }

// created is a task a clause made first, to replay or look up.
type created struct {
	key, payload string
	first        reply
	id           int64
}

// create makes the task a clause starts from: a new key, a 201 with a
// task. It returns a Skip result, saying why, when it could not.
func (c *checker) create(ctx context.Context, cl Clause) (created, *Result) {
	key, payload := c.key(cl), c.payload(cl)
	r, err := c.post(ctx, c.client, quoted(key), payload)
	if err == nil {
		var id int64
		if id, err = taskOf(r, key, payload); err == nil {
			return created{key: key, payload: payload, first: r, id: id}, nil
		}
	}
	return created{}, &Result{cl, Skip, "its task could not be created: POST → " + err.Error()}
}

// pass and fail make a clause's result.
func pass(cl Clause, format string, args ...any) Result {
	return Result{cl, Pass, fmt.Sprintf(format, args...)}
}

func fail(cl Clause, format string, args ...any) Result {
	return Result{cl, Fail, fmt.Sprintf(format, args...)}
}
