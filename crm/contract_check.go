package crm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Clause is one clause of SPEC's receiver contract ("The HTTP receiver and
// sender"), as CheckReceiver checks it against a live endpoint. Its String
// is the name the report prints.
type Clause int

// The clauses, in the order CheckReceiver checks and reports them.
const (
	// ClauseFirstCreate: a new key answers 201, a Location naming
	// /tasks/{id}, and a body that is the task, for the key and payload.
	ClauseFirstCreate Clause = iota + 1
	// ClauseReplay: the same key and payload again, on the same
	// connection, answers the stored response byte for byte, with
	// Idempotent-Replayed: true.
	ClauseReplay
	// ClauseReplayNewConnection: the same, the replay on a new connection.
	ClauseReplayNewConnection
	// ClauseOtherPayload: the key with another payload answers 422
	// problem+json, and changes nothing: the original payload still gets
	// its stored response.
	ClauseOtherPayload
	// ClauseMissingKey: a POST without Idempotency-Key answers 400
	// problem+json and stores nothing: the same payload with a key then
	// creates a new task.
	ClauseMissingKey
	// ClauseMalformedKey: an unquoted, an empty and a 256-character key
	// each answer 400 problem+json and store nothing: the key, quoted,
	// then creates a new task.
	ClauseMalformedKey
	// ClauseConcurrent: several requests at once for one new key, each on
	// its own connection: never a 5xx, only 201 (one task, the same bytes)
	// or 409, and a replay afterwards answers that task.
	ClauseConcurrent
	// ClauseLookup: GET /tasks?key=KEY lists exactly the task created for
	// the key, and GET on its Location answers it.
	ClauseLookup
	// ClauseReplayAfterCut: a request whose connection is closed unread,
	// at once or as its answer begins (a lost reply), then a replay: the
	// replay answers a task, and GET /tasks?key= finds that task alone.
	// Each moment has its own key.
	ClauseReplayAfterCut
	// ClauseRetention: every answer of the run states the same
	// Idempotency-Retention, GET /contract states it too, and it is the
	// retention CheckOptions.Retention expects, if given.
	ClauseRetention
)

// clauseNames are the names of the clauses, by value.
var clauseNames = [...]string{
	ClauseFirstCreate:         "first-create",
	ClauseReplay:              "replay",
	ClauseReplayNewConnection: "replay-new-connection",
	ClauseOtherPayload:        "other-payload",
	ClauseMissingKey:          "missing-key",
	ClauseMalformedKey:        "malformed-key",
	ClauseConcurrent:          "concurrent",
	ClauseLookup:              "lookup",
	ClauseReplayAfterCut:      "replay-after-cut",
	ClauseRetention:           "retention",
}

// String is the clause's name in a report: "first-create", "replay" ...
func (c Clause) String() string {
	if c < ClauseFirstCreate || c > ClauseRetention {
		return "clause(" + strconv.Itoa(int(c)) + ")"
	}
	return clauseNames[c]
}

// Clauses returns every clause, in the order CheckReceiver checks and
// reports them.
func Clauses() []Clause {
	all := make([]Clause, 0, len(clauseNames)-1)
	for c := ClauseFirstCreate; c <= ClauseRetention; c++ {
		all = append(all, c)
	}
	return all
}

// Verdict is what CheckReceiver concluded about one clause.
type Verdict int

const (
	// Pass: the receiver kept the clause.
	Pass Verdict = iota + 1
	// Fail: the receiver broke the clause; the evidence says how.
	Fail
	// Skip: the clause could not be checked, because a request it needs
	// first (a create, a lookup) did not work; another clause fails for it.
	Skip
)

// String is "pass", "fail" or "skip".
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Skip:
		return "skip"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// ClauseResult is the verdict on one clause, with its evidence: what was
// sent and answered, in a line.
type ClauseResult struct {
	Clause   Clause
	Verdict  Verdict
	Evidence string
}

// Report is what CheckReceiver found: one result per clause, in the order
// of Clauses.
type Report struct {
	// URL is the receiver's base URL, as given.
	URL string
	// RunID makes this run's keys unique: every key the run sent starts
	// with KeyPrefix, which contains it.
	RunID, KeyPrefix string
	// Retention is the retention the receiver states at GET /contract;
	// nil when it could not be read.
	Retention *time.Duration
	Results   []ClauseResult
}

// Failed returns the clauses that failed, in report order.
func (r Report) Failed() []Clause {
	var failed []Clause
	for _, res := range r.Results {
		if res.Verdict == Fail {
			failed = append(failed, res.Clause)
		}
	}
	return failed
}

// OK says whether every clause passed.
func (r Report) OK() bool {
	for _, res := range r.Results {
		if res.Verdict != Pass {
			return false
		}
	}
	return len(r.Results) > 0
}

// DefaultCheckTimeout bounds each request of CheckReceiver, and each wait
// for a key in flight to settle, unless CheckOptions says otherwise.
const DefaultCheckTimeout = 10 * time.Second

// CheckOptions configure CheckReceiver. The zero value checks with the
// default timeout and takes whatever retention the receiver states.
type CheckOptions struct {
	// Retention, when not nil, is the retention the receiver must state
	// (0: forever), compared in whole seconds, as the header states it.
	Retention *time.Duration
	// Timeout bounds each request, and each wait for a key in flight to
	// settle; 0 means DefaultCheckTimeout.
	Timeout time.Duration
}

// checkKeyNamespace starts every key CheckReceiver sends, so that its
// tasks are recognisable in a staging CRM.
const checkKeyNamespace = "handoff-check:create-followup:v1:"

// checkAgent is the User-Agent of CheckReceiver's requests.
const checkAgent = "handoff-check-receiver"

// concurrentRequests is how many requests ClauseConcurrent sends at once.
const concurrentRequests = 8

// cutSettle is how long ClauseReplayAfterCut waits at most for a request
// it abandoned to leave a task before it replays.
const cutSettle = 300 * time.Millisecond

// retryPause is how long a replay waits after a 409 before trying again.
const retryPause = 20 * time.Millisecond

// CheckReceiver runs SPEC's receiver contract against the endpoint at
// baseURL, a receiver that claims to keep it (a staging CRM, an adapter):
// every clause of Clauses, each with its own keys, so that one broken
// clause does not hide another. It creates a few tasks there, under keys
// that start with the report's KeyPrefix: "handoff-check:", then a run id
// made of the time and random bits, so that it can run again and again
// against the same receiver. It talks to the URL directly, whatever the
// proxy environment says: a proxy could replay or cut requests itself.
//
// It returns an error wrapping ErrBadURL for a URL that is not http or
// https, and the context's error when ctx ends before the check does; a
// receiver that breaks clauses is a report, not an error.
func CheckReceiver(ctx context.Context, baseURL string, opts CheckOptions) (Report, error) {
	base, err := receiverURL(baseURL)
	if err != nil {
		return Report{}, err
	}
	if opts.Timeout < 0 {
		return Report{}, fmt.Errorf("crm: the check's timeout is %v, want more than 0", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultCheckTimeout
	}
	runID := newRunID(time.Now())
	c := &checker{base: base, opts: opts, runID: runID, prefix: checkKeyNamespace + runID + "-"}
	c.client = c.newClient(true)
	defer c.closeIdle()
	if err := c.reachable(ctx); err != nil {
		return Report{}, err
	}
	report := Report{URL: baseURL, RunID: runID, KeyPrefix: c.prefix}
	for _, check := range []func(context.Context) ClauseResult{
		c.firstCreate, c.replaySameConnection, c.replayNewConnection, c.otherPayload,
		c.missingKey, c.malformedKey, c.concurrent, c.lookupClause, c.replayAfterCut,
		func(ctx context.Context) ClauseResult { return c.retention(ctx, &report) },
	} {
		report.Results = append(report.Results, check(ctx))
	}
	if err := ctx.Err(); err != nil {
		return report, fmt.Errorf("crm: the check was interrupted: %w", err)
	}
	return report, nil
}

// ErrUnreachable is returned by CheckReceiver when nothing answers HTTP
// at the receiver's URL: no clause can say anything of it then.
var ErrUnreachable = errors.New("crm: nothing answers at the receiver's URL")

// reachable asks GET /contract and accepts any HTTP answer: a receiver
// need not serve it, but something must answer before a clause can fail.
func (c *checker) reachable(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath("contract").String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("crm: the check was interrupted: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, c.base, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}

// newRunID is the time, to the second, and 32 random bits: unique per run,
// and it says when the run was.
func newRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// checker is one run of CheckReceiver.
type checker struct {
	base   *url.URL
	opts   CheckOptions
	runID  string
	prefix string       // the start of every key of the run: namespace and run id
	client *http.Client // keeps its connection alive between requests

	mu         sync.Mutex
	transports []*http.Transport
	answers    []retentionSeen
}

// retentionSeen is what one answer said of the retention.
type retentionSeen struct {
	request string   // "POST /tasks → 201"
	values  []string // its Idempotency-Retention headers
}

// reply is an answer read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
	reused bool // it came over a connection used before
}

// taskBodyJSON is the body of a 201: the task created for a key.
type taskBodyJSON struct {
	ID      *int64          `json:"id"`
	Key     *string         `json:"key"`
	Payload json.RawMessage `json:"payload"`
}

// created is a task a clause made first, to replay or look up.
type created struct {
	key, payload string
	first        reply
	id           int64
}

// newClient returns a client that talks to the receiver directly (no
// proxy), follows no redirect, records the retention every answer states,
// and keeps its connections alive or not.
func (c *checker) newClient(keepAlive bool) *http.Client {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: c.opts.Timeout}).DialContext,
		TLSHandshakeTimeout: c.opts.Timeout,
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 1,
	}
	c.mu.Lock()
	c.transports = append(c.transports, t)
	c.mu.Unlock()
	return &http.Client{
		Transport:     recorder{t, c},
		Timeout:       c.opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// closeIdle closes the connections the run left open.
func (c *checker) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
}

// recorder is a RoundTripper that records each answer's retention.
type recorder struct {
	next http.RoundTripper
	c    *checker
}

// RoundTrip implements http.RoundTripper.
func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.c.mu.Lock()
		r.c.answers = append(r.c.answers, retentionSeen{
			request: fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode),
			values:  resp.Header.Values("Idempotency-Retention"),
		})
		r.c.mu.Unlock()
	}
	return resp, err
}

// key is the run's key for clause cl.
func (c *checker) key(cl Clause) string { return c.prefix + cl.String() }

// payload is a payload of SPEC's shape for clause cl; other makes it
// another payload for the same key.
func (c *checker) payload(cl Clause, other bool) string {
	title := "handoff check-receiver run " + c.runID + ": " + cl.String()
	if other {
		title += " (another payload)"
	}
	b, _ := json.Marshal(struct { // a struct of strings always marshals
		CaseID string `json:"case_id"`
		Title  string `json:"title"`
	}{c.runID + "-" + cl.String(), title})
	return string(b)
}

// quoted is key as a structured-field string: the checker's keys hold no
// '"' or '\', so quoting is enough.
func quoted(key string) string { return `"` + key + `"` }

// request is POST /tasks with keyHeader as the raw Idempotency-Key (none
// when empty) and payload as the body.
func (c *checker) request(ctx context.Context, keyHeader, payload string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath("tasks").String(), strings.NewReader(payload))
	if err != nil {
		return nil, err
	}
	if keyHeader != "" {
		req.Header.Set("Idempotency-Key", keyHeader)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", checkAgent)
	return req, nil
}

// post sends POST /tasks with client and reads the answer.
func (c *checker) post(ctx context.Context, client *http.Client, keyHeader, payload string) (reply, error) {
	req, err := c.request(ctx, keyHeader, payload)
	if err != nil {
		return reply{}, err
	}
	return do(client, req)
}

// do sends req with client and reads the answer in full.
func do(client *http.Client, req *http.Request) (reply, error) {
	var r reply
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { r.reused = info.Reused }}
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	if r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes)); err != nil {
		return reply{}, fmt.Errorf("reading the answer (%d): %w", r.status, err)
	}
	return r, nil
}

// replay posts key and payload with client until the answer is not one
// that says "later": a 409 (in flight) it tries again after retryPause, a
// 429 or 503 after its Retry-After (at most a second), all within the
// timeout.
func (c *checker) replay(ctx context.Context, client *http.Client, key, payload string) (reply, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	for {
		r, err := c.post(ctx, client, quoted(key), payload)
		if err != nil || time.Now().After(deadline) {
			return r, err
		}
		pause := retryPause
		switch r.status {
		case http.StatusConflict:
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			if after, ok := retryAfter(r.header.Get("Retry-After"), time.Now()); ok {
				pause = min(max(after, retryPause), time.Second)
			}
		default:
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// create makes the task a clause starts from: a new key, a 201 with a
// task. It returns a Skip result, saying why, when it could not.
func (c *checker) create(ctx context.Context, cl Clause) (created, *ClauseResult) {
	key, payload := c.key(cl), c.payload(cl, false)
	r, err := c.post(ctx, c.client, quoted(key), payload)
	if err == nil {
		var id int64
		if id, err = taskOf(r, key, payload); err == nil {
			return created{key: key, payload: payload, first: r, id: id}, nil
		}
	}
	return created{}, &ClauseResult{cl, Skip, "its task could not be created: POST → " + err.Error()}
}

// taskOf returns the id of the task a 201 answer r holds, for key and
// payload.
func taskOf(r reply, key, payload string) (int64, error) {
	if r.status != http.StatusCreated {
		return 0, fmt.Errorf("%s, want 201", describe(r, key))
	}
	t, err := parseTask(r.body, key, payload)
	if err != nil {
		return 0, fmt.Errorf("201, but %v", err)
	}
	return t, nil
}

// parseTask returns the id of the task body holds; it must be for key,
// and for payload unless payload is empty.
func parseTask(body []byte, key, payload string) (int64, error) {
	var t taskBodyJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&t); err != nil || dec.More() || t.ID == nil || *t.ID <= 0 || t.Key == nil || t.Payload == nil {
		return 0, fmt.Errorf("the body is not a task {\"id\":N,\"key\":…,\"payload\":…}: %s", detail(body))
	}
	if *t.Key != key {
		return 0, fmt.Errorf("task %d names key %q, not %q", *t.ID, *t.Key, key)
	}
	if payload != "" && !sameJSON(t.Payload, []byte(payload)) {
		return 0, fmt.Errorf("task %d holds payload %s, not the one sent", *t.ID, detail(t.Payload))
	}
	return *t.ID, nil
}

// sameJSON says whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// describe is an answer in a few words: "201 task 4 (replayed)", "422
// problem+json", "500".
func describe(r reply, key string) string {
	s := strconv.Itoa(r.status)
	if r.status == http.StatusOK || r.status == http.StatusCreated {
		if id, err := parseTask(r.body, key, ""); err == nil {
			s += " task " + strconv.FormatInt(id, 10)
		}
	}
	if isProblem(r) {
		s += " problem+json"
	}
	if replayed(r) {
		s += " (replayed)"
	}
	return s
}

// replayed says whether r is marked Idempotent-Replayed: true.
func replayed(r reply) bool { return r.header.Get("Idempotent-Replayed") == "true" }

// isProblem says whether r carries an RFC 9457 problem+json body.
func isProblem(r reply) bool {
	var p map[string]any
	return strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") && json.Unmarshal(r.body, &p) == nil
}

// pass and fail make a clause's result.
func pass(cl Clause, format string, args ...any) ClauseResult {
	return ClauseResult{cl, Pass, fmt.Sprintf(format, args...)}
}

func fail(cl Clause, format string, args ...any) ClauseResult {
	return ClauseResult{cl, Fail, fmt.Sprintf(format, args...)}
}

// firstCreate checks ClauseFirstCreate.
func (c *checker) firstCreate(ctx context.Context) ClauseResult {
	cl := ClauseFirstCreate
	key, payload := c.key(cl), c.payload(cl, false)
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

// sameAnswer is the verdict on a replay r of t: the stored response byte
// for byte, marked Idempotent-Replayed.
func sameAnswer(cl Clause, t created, r reply, err error, how string) ClauseResult {
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
func (c *checker) replaySameConnection(ctx context.Context) ClauseResult {
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
func (c *checker) replayNewConnection(ctx context.Context) ClauseResult {
	cl := ClauseReplayNewConnection
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	r, err := c.replay(ctx, c.newClient(false), t.key, t.payload)
	return sameAnswer(cl, t, r, err, "new connection")
}

// otherPayload checks ClauseOtherPayload.
func (c *checker) otherPayload(ctx context.Context) ClauseResult {
	cl := ClauseOtherPayload
	t, skip := c.create(ctx, cl)
	if skip != nil {
		return *skip
	}
	r, err := c.post(ctx, c.client, quoted(t.key), c.payload(cl, true))
	switch {
	case err != nil:
		return fail(cl, "POST → 201 task %d; another payload: %v", t.id, err)
	case r.status != http.StatusUnprocessableEntity || !isProblem(r):
		return fail(cl, "POST → 201 task %d; another payload → %s, want 422 problem+json", t.id, describe(r, t.key))
	}
	again, err := c.replay(ctx, c.client, t.key, t.payload)
	switch {
	case err != nil:
		return fail(cl, "another payload → 422; then the original: %v", err)
	case again.status != t.first.status || !bytes.Equal(again.body, t.first.body):
		return fail(cl, "another payload → 422; then the original → %s, not its stored answer (task %d)", describe(again, t.key), t.id)
	}
	return pass(cl, "POST → 201 task %d; another payload → 422 problem+json; the original → task %d again", t.id, t.id)
}

// refusedThenCreates checks that each bad request is a 400 problem+json,
// and that the key, quoted, then creates a new task: nothing was stored.
func (c *checker) refusedThenCreates(ctx context.Context, cl Clause, bad map[string]string, what string) ClauseResult {
	key, payload := c.key(cl), c.payload(cl, false)
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
func (c *checker) missingKey(ctx context.Context) ClauseResult {
	return c.refusedThenCreates(ctx, ClauseMissingKey, map[string]string{"no Idempotency-Key": ""}, "no Idempotency-Key")
}

// malformedKey checks ClauseMalformedKey with three malformed keys.
func (c *checker) malformedKey(ctx context.Context) ClauseResult {
	key := c.key(ClauseMalformedKey)
	long := key + strings.Repeat("x", MaxKeyLength+1-len(key))
	return c.refusedThenCreates(ctx, ClauseMalformedKey, map[string]string{
		"the key unquoted": key,
		`an empty key ""`:  `""`,
		fmt.Sprintf("a %d-character key", len(long)): quoted(long),
	}, "unquoted, empty and too long keys")
}

// concurrent checks ClauseConcurrent.
func (c *checker) concurrent(ctx context.Context) ClauseResult {
	cl := ClauseConcurrent
	key, payload := c.key(cl), c.payload(cl, false)
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

// lookup is GET /tasks?key=KEY: the ids of the tasks it lists, each of
// which must be for key.
func (c *checker) lookup(ctx context.Context, key string) ([]int64, error) {
	u := c.base.JoinPath("tasks")
	u.RawQuery = url.Values{"key": {key}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", checkAgent)
	r, err := do(c.client, req)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET /tasks?key= → %d, want 200", r.status)
	}
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || list.Tasks == nil {
		return nil, fmt.Errorf("GET /tasks?key= → 200, but not {\"tasks\":[…]}: %s", detail(r.body))
	}
	ids := []int64{}
	for _, raw := range list.Tasks {
		id, err := parseTask(raw, key, "")
		if err != nil {
			return nil, fmt.Errorf("GET /tasks?key= lists a task that is not for the key: %v", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// lookupClause checks ClauseLookup.
func (c *checker) lookupClause(ctx context.Context) ClauseResult {
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

// sendAndCut sends POST /tasks for key and payload over a connection of
// its own and closes it without reading the answer: at once, or, with
// answered, once the answer begins to arrive (the receiver has acted and
// answered, and the answer is lost).
func (c *checker) sendAndCut(ctx context.Context, key, payload string, answered bool) error {
	req, err := c.request(ctx, quoted(key), payload)
	if err != nil {
		return err
	}
	d := &net.Dialer{Timeout: c.opts.Timeout}
	addr := c.base.Host
	if c.base.Port() == "" {
		addr = net.JoinHostPort(c.base.Hostname(), map[string]string{"http": "80", "https": "443"}[c.base.Scheme])
	}
	var conn net.Conn
	if c.base.Scheme == "https" {
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: c.base.Hostname()}}
		conn, err = td.DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(c.opts.Timeout)); err != nil {
		return err
	}
	if err := req.Write(conn); err != nil || !answered {
		return err
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("no answer began: %w", err)
	}
	return nil
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
func (c *checker) replayAfterCut(ctx context.Context) ClauseResult {
	cl := ClauseReplayAfterCut
	payload := c.payload(cl, false)
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
			return ClauseResult{cl, Skip, fmt.Sprintf("POST, %s; the replay → %s; the tasks cannot be counted: %v", cut.words, describe(r, key), err)}
		case !slices.Equal(ids, []int64{id}):
			return fail(cl, "POST, %s; the replay → %s; GET /tasks?key= → tasks %v: want task %d alone", cut.words, describe(r, key), ids, id)
		}
		seen = append(seen, fmt.Sprintf("%s, replay → %s, lookup [%d]", cut.words, describe(r, key), id))
	}
	return pass(cl, "%s", strings.Join(seen, "; "))
}

// retention checks what every answer of the run, and GET /contract, state
// of the retention; it sets report.Retention to what GET /contract states.
func (c *checker) retention(ctx context.Context, report *Report) ClauseResult {
	cl := ClauseRetention
	contract, contractErr := c.contract(ctx)
	if contractErr == nil {
		report.Retention = &contract
	}
	c.mu.Lock()
	answers := slices.Clone(c.answers)
	c.mu.Unlock()
	var stated []string
	for _, a := range answers {
		if len(a.values) != 1 {
			return fail(cl, "%s states Idempotency-Retention %d times, want once (%d answers)", a.request, len(a.values), len(answers))
		}
		if n, err := strconv.ParseInt(a.values[0], 10, 64); err != nil || n < 0 {
			return fail(cl, "%s states Idempotency-Retention %q, want whole seconds", a.request, a.values[0])
		}
		if !slices.Contains(stated, a.values[0]) {
			stated = append(stated, a.values[0])
		}
	}
	switch {
	case len(answers) == 0:
		return fail(cl, "no answer stated a retention: the receiver answered nothing")
	case len(stated) != 1:
		return fail(cl, "the answers state Idempotency-Retention %v, want one value", stated)
	case contractErr != nil:
		return fail(cl, "Idempotency-Retention %s; %v", stated[0], contractErr)
	}
	seconds := strconv.FormatInt(int64(contract/time.Second), 10)
	if stated[0] != seconds {
		return fail(cl, "Idempotency-Retention %s, but GET /contract says %s", stated[0], seconds)
	}
	if want := c.opts.Retention; want != nil && int64(*want/time.Second) != int64(contract/time.Second) {
		return fail(cl, "the receiver states %s, want %s", retentionText(contract), retentionText(*want))
	}
	return pass(cl, "all %d answers and GET /contract state %s", len(answers), retentionText(contract))
}

// retentionText is a retention in words: "3600 s (1h0m0s)", "0 s (forever)".
func retentionText(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10) + " s"
	if d < time.Second {
		return s + " (forever)"
	}
	return s + " (" + (d / time.Second * time.Second).String() + ")"
}

// contract reads the retention GET /contract states.
func (c *checker) contract(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath("contract").String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", checkAgent)
	r, err := do(c.client, req)
	if err != nil {
		return 0, fmt.Errorf("GET /contract: %w", err)
	}
	var body struct {
		RetentionSeconds *int64 `json:"idempotency_retention_seconds"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil || body.RetentionSeconds == nil || *body.RetentionSeconds < 0 || *body.RetentionSeconds > int64(time.Duration(1<<62)/time.Second) {
		return 0, fmt.Errorf("GET /contract → %d, want 200 with idempotency_retention_seconds: %s", r.status, detail(r.body))
	}
	return time.Duration(*body.RetentionSeconds) * time.Second, nil
}
