// Package contract checks an HTTP endpoint against the spec's receiver
// contract ("The HTTP receiver and sender"), clause by clause: the suite
// behind handoff check-receiver. It judges any receiver that claims to
// keep the contract (crm.Server, a staging CRM, an adapter) by what it
// answers over HTTP alone.
//
// The clauses are a table, suite, of checker methods in clauses_*.go
// files, grouped by what they check; wire.go sends the requests and cuts
// connections, answers.go reads what comes back.
package contract

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxlab/handoff/crm"
)

// Clause is one clause of the spec's receiver contract, as Check checks it
// against a live endpoint. Its String is the name the report prints.
type Clause int

// The clauses, in the order Check checks and reports them.
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
	// ClauseOtherPayload: the key with another payload (another title;
	// the same title in other letter case) answers 422 problem+json, and
	// changes nothing: the original payload still gets its stored
	// response.
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
	// retention Options.Retention expects, if given.
	ClauseRetention
)

// entry is a clause of the suite: its name in a report and the checker
// method that checks it, on keys of its own.
type entry struct {
	name  string
	check func(*checker, context.Context) Result
}

// suite is the contract, indexed by Clause, in the order Check runs the
// clauses (what each checks is its constant's doc). Retention comes last:
// it judges the answers to every request the others sent.
var suite [ClauseRetention + 1]entry

// init fills suite: as a variable's initializer it would depend on itself,
// since the methods name their keys after their clauses through it.
func init() {
	suite = [...]entry{
		ClauseFirstCreate:         {"first-create", (*checker).firstCreate},
		ClauseReplay:              {"replay", (*checker).replaySameConnection},
		ClauseReplayNewConnection: {"replay-new-connection", (*checker).replayNewConnection},
		ClauseOtherPayload:        {"other-payload", (*checker).otherPayload},
		ClauseMissingKey:          {"missing-key", (*checker).missingKey},
		ClauseMalformedKey:        {"malformed-key", (*checker).malformedKey},
		ClauseConcurrent:          {"concurrent", (*checker).concurrent},
		ClauseLookup:              {"lookup", (*checker).lookupClause},
		ClauseReplayAfterCut:      {"replay-after-cut", (*checker).replayAfterCut},
		ClauseRetention:           {"retention", (*checker).retention},
	}
}

// String is the clause's name in a report: "first-create", "replay" ...
func (c Clause) String() string {
	if c < ClauseFirstCreate || c > ClauseRetention {
		return "clause(" + strconv.Itoa(int(c)) + ")"
	}
	return suite[c].name
}

// Clauses returns every clause, in the order Check checks and reports
// them.
func Clauses() []Clause {
	all := make([]Clause, 0, len(suite)-1)
	for c := ClauseFirstCreate; c <= ClauseRetention; c++ {
		all = append(all, c)
	}
	return all
}

// Verdict is what Check concluded about one clause.
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

// Result is the verdict on one clause, with its evidence: what was sent
// and answered, in a line.
type Result struct {
	Clause   Clause
	Verdict  Verdict
	Evidence string
}

// Report is what Check found: one result per clause, in the order of
// Clauses.
type Report struct {
	// URL is the receiver's base URL, as given.
	URL string
	// RunID makes this run's keys unique: every key the run sent starts
	// with KeyPrefix, which contains it.
	RunID, KeyPrefix string
	// Retention is the retention the receiver states at GET /contract;
	// nil when it could not be read.
	Retention *time.Duration
	Results   []Result
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

// DefaultTimeout bounds each request of Check, and each wait for a key in
// flight to settle, unless Options says otherwise.
const DefaultTimeout = 10 * time.Second

// Options configure Check. The zero value checks with the default timeout
// and takes whatever retention the receiver states.
type Options struct {
	// Retention, when not nil, is the retention the receiver must state
	// (0: forever), compared in whole seconds, as the header states it.
	Retention *time.Duration
	// Timeout bounds each request, and each wait for a key in flight to
	// settle; 0 means DefaultTimeout.
	Timeout time.Duration
}

// ErrBadURL is crm.ErrBadURL: Check refuses the URLs a crm.Sender refuses
// (crm.ParseReceiverURL), with the same error.
var ErrBadURL = crm.ErrBadURL

// ErrUnreachable is returned by Check when nothing answers HTTP at the
// receiver's URL: no clause can say anything of it then.
var ErrUnreachable = errors.New("contract: nothing answers at the receiver's URL")

// Check runs the spec's receiver contract against the endpoint at baseURL, a
// receiver that claims to keep it (a staging CRM, an adapter): every
// clause of Clauses, each with its own keys, so that one broken clause
// does not hide another. It creates a few tasks there, under keys that
// start with the report's KeyPrefix: "handoff-check:", then a run id made
// of the time and random bits, so that it can run again and again against
// the same receiver. It talks to the URL directly, whatever the proxy
// environment says: a proxy could replay or cut requests itself.
//
// It returns an error matching ErrBadURL for a URL that is not http or
// https, ErrUnreachable when nothing answers there, and the context's
// error when ctx ends before the check does; a receiver that breaks
// clauses is a report, not an error.
func Check(ctx context.Context, baseURL string, opts Options) (Report, error) {
	base, err := crm.ParseReceiverURL(baseURL)
	if err != nil {
		return Report{}, err
	}
	if opts.Timeout < 0 {
		return Report{}, fmt.Errorf("contract: the check's timeout is %v, want more than 0", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	c := newChecker(base, opts, newRunID(time.Now()))
	defer c.closeIdle()
	if err := c.reachable(ctx); err != nil {
		return Report{}, err
	}
	report := Report{URL: baseURL, RunID: c.runID, KeyPrefix: c.prefix}
	for _, cl := range Clauses() {
		report.Results = append(report.Results, suite[cl].check(c, ctx))
	}
	report.Retention = c.stated
	if err := ctx.Err(); err != nil {
		return report, fmt.Errorf("contract: the check was interrupted: %w", err)
	}
	return report, nil
}
