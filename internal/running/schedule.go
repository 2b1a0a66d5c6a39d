package running

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/line"
)

// A Schedule is one run of a running design, as the harness draws it and
// a person reads it: when the app approves what, when its process
// crashes or loses a database connection or a COMMIT's reply, when the
// receiver is down, and what the receiver does with each request it
// gets, by the request's number. Goroutine scheduling is not in it: a
// replay of a schedule may interleave the workers otherwise.
//
// Its file is written in the scenario language's syntax (package line),
// a line each, times as arguments:
//
//	design name=running-no-lock
//	backend name=sqlite
//	replicas n=2
//	approve at=1.5s case=case-1 title="Call about the approved repair plan" replica=2
//	process-crash at=40s replica=1
//	offline at=1m for=40s
//	key case=case-1 fault=offline
//	request n=1 fault=throttled status=503 retry-after=45s
//
// Every fault it names is a fault of package faults that the running mode
// injects, meaning what it means there.
type Schedule struct {
	Design  string
	Backend string
	// Replicas is how many processes of the design run side by side on
	// the one database, each booted, crashed and booted again on its own;
	// 0 means 1.
	Replicas int
	Events   []Event      // by time
	Answers  []AnswerRule // by request number
	Keys     []KeyRule    // by case: what the receiver does with every request of it
}

// Event is something the harness does at a virtual time since the
// start of the run.
type Event struct {
	At   time.Duration
	Kind EventKind
	// Case and Title, for an approval.
	Case, Title string
	// For, for an outage: how long the receiver is down.
	For time.Duration
	// Replica, for an approval, a crash, a reset or a lost COMMIT reply:
	// the process (from 1) it strikes; 0 means 1.
	Replica int
}

// KeyRule is a fault that lasts: what the receiver does with every
// request for one case's action, whatever its number, for the whole run.
type KeyRule struct {
	Case  string
	Fault KeyFault
}

// KeyFault is what the receiver does with every request for one key: a
// fault of package faults, for every request of the key.
type KeyFault faults.Kind

// The faults that last, per key.
const (
	// RefuseKey400: every request for the key is refused for good, 400,
	// before acting (the receiver's validation rejects it).
	RefuseKey400 = KeyFault(faults.Refused)
	// RefuseKey422: every request for the key is refused for good, 422
	// (the receiver holds the key with another payload).
	RefuseKey422 = KeyFault(faults.KeyConflict)
	// SlowKey: every request for the key creates (or replays) its task
	// and answers after the client gave up.
	SlowKey = KeyFault(faults.LateReply)
	// DownKey: the receiver is down for the key, past the design's
	// settle time: every request for it fails before the receiver acts.
	DownKey = KeyFault(faults.Offline)
)

// keyFaults are the KeyFaults a schedule file may name.
var keyFaults = []KeyFault{RefuseKey400, RefuseKey422, SlowKey, DownKey}

// Says is what the receiver does with every request for a key that f
// strikes, in words; "" for a KeyFault that is none.
func (f KeyFault) Says() string {
	return map[KeyFault]string{RefuseKey400: "refused for good, 400", RefuseKey422: "refused for good, 422",
		SlowKey: "every answer after the client's timeout", DownKey: "the receiver down for it"}[f]
}

// replica is the process an event strikes, from 1.
func (e Event) replica() int { return max(e.Replica, 1) }

// replicas is how many processes the schedule runs.
func (s Schedule) replicas() int { return max(s.Replicas, 1) }

// keyFault returns the lasting fault of caseID's requests, if any; a
// request of no known case has none.
func (s Schedule) keyFault(caseID string) (KeyFault, bool) {
	if caseID == "" {
		return "", false
	}
	for _, k := range s.Keys {
		if k.Case == caseID {
			return k.Fault, true
		}
	}
	return "", false
}

// Size is how many lines of faults and approvals the schedule holds:
// its events, its answer rules and its key rules. A minimal schedule's
// size is what the fragile catalog bounds.
func (s Schedule) Size() int { return len(s.Events) + len(s.Answers) + len(s.Keys) }

// EventKind names an Event: an approval, or the fault of package faults
// that strikes at its time.
type EventKind string

// The events of a schedule.
const (
	// Approve: the app approves Case with Title, through the running
	// process.
	Approve EventKind = "approve"
	// ProcessCrash: every goroutine of the process stopped and every connection
	// of it cut at once (open transactions lost), then the app boots
	// again.
	ProcessCrash = EventKind(faults.ProcessCrash)
	// ConnectionReset: every database connection of the process is cut; the
	// process lives on.
	ConnectionReset = EventKind(faults.ConnectionReset)
	// CommitReplyLost: the next COMMIT of the process is carried out and
	// its reply lost.
	CommitReplyLost = EventKind(faults.CommitReplyLost)
	// Outage: the receiver is offline for For: each request fails before
	// it acts.
	Outage = EventKind(faults.Offline)
)

// AnswerRule is what the receiver does with its Nth request (1 is the
// first); a request without a rule is answered.
type AnswerRule struct {
	N      int
	Answer Answer
	// Wait: for Paused, how long the request is held before the receiver
	// takes it; for Throttled503 and Throttled429, the Retry-After hint.
	Wait time.Duration
}

// Answer is what the receiver does with one request: a fault of package
// faults, with the HTTP status it answers where the fault has more than
// one; the zero Answer is none.
type Answer struct {
	Fault  faults.Kind
	Status int
}

// The answers the harness draws: every class the sender maps.
var (
	// Answered: the task is created (or the key replayed) and the reply
	// arrives.
	Answered = Answer{}
	// LostReply: the task is created (or replayed); the reply is lost.
	LostReply = Answer{Fault: faults.LostReply}
	// LateReply: the task is created; the reply comes after the client gave
	// up (its send timeout).
	LateReply = Answer{Fault: faults.LateReply}
	// Paused: the worker that sends is paused for Wait, longer than any
	// lease or visibility timeout, then the request goes out.
	Paused = Answer{Fault: faults.Paused}
	// Throttled503: 503 with a retry hint, before acting.
	Throttled503 = Answer{Fault: faults.Throttled, Status: 503}
	// Throttled429: 429 with a retry hint, before acting.
	Throttled429 = Answer{Fault: faults.Throttled, Status: 429}
	// InFlight: 409, the key in flight elsewhere, before acting.
	InFlight = Answer{Fault: faults.InFlight}
	// FailedAfterActing: 500 after acting: the task exists.
	FailedAfterActing = Answer{Fault: faults.FailedAfterActing}
	// Refused: 400, refused for good, before acting.
	Refused = Answer{Fault: faults.Refused}
	// KeyConflict: 422, the receiver holds the key with another payload (put
	// there by another system), before acting.
	KeyConflict = Answer{Fault: faults.KeyConflict}
)

// String is a's fault and its status, as a schedule's request line
// names them; "answered" for none.
func (a Answer) String() string {
	switch {
	case a == Answered:
		return "answered"
	case a.Status != 0:
		return fmt.Sprintf("%s status=%d", a.Fault, a.Status)
	}
	return string(a.Fault)
}

// MaxReplicas is the most processes a schedule runs side by side.
const MaxReplicas = 3

// answers are the Answers a schedule file may name.
var answers = []Answer{LostReply, LateReply, Paused, Throttled503, Throttled429, InFlight, FailedAfterActing, Refused, KeyConflict}

// Faults are the faults a schedule file may name, each once: the
// running mode's faults of package faults.
func Faults() []faults.Kind {
	var ks []faults.Kind
	add := func(k faults.Kind) {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(eventArgs)) {
		if e != Approve {
			add(faults.Kind(e))
		}
	}
	for _, a := range answers {
		add(a.Fault)
	}
	for _, f := range keyFaults {
		add(faults.Kind(f))
	}
	return ks
}

// ErrSchedule is a schedule file that cannot be read: its message names
// the line.
var ErrSchedule = errors.New("running: bad schedule")

// Last is the time of the last event, and the end of the last outage.
func (s Schedule) Last() time.Duration {
	var last time.Duration
	for _, e := range s.Events {
		last = max(last, e.At+e.For)
	}
	return last
}

// Smaller is every schedule one step smaller than s: without one of
// its events, answer rules or key rules, with one replica fewer (the
// last replica's events struck on the one before), or with an answer
// moved to the request before its own. Minimizing a failure tries each;
// each step makes the schedule shorter, or its answers earlier.
func (s Schedule) Smaller() []Schedule {
	var out []Schedule
	if s.replicas() > 1 {
		c := s.clone()
		c.Replicas--
		for i := range c.Events {
			c.Events[i].Replica = min(c.Events[i].Replica, c.Replicas)
			if c.Replicas == 1 {
				c.Events[i].Replica = 0
			}
		}
		out = append(out, c)
	}
	for i := range s.Events {
		c := s.clone()
		c.Events = slices.Delete(c.Events, i, i+1)
		out = append(out, c)
	}
	for i := range s.Answers {
		c := s.clone()
		c.Answers = slices.Delete(c.Answers, i, i+1)
		out = append(out, c)
	}
	for i := range s.Keys {
		c := s.clone()
		c.Keys = slices.Delete(c.Keys, i, i+1)
		out = append(out, c)
	}
	// Without an answer, the answers after it one request sooner: as if
	// the request it answered were never made.
	for i, r := range s.Answers {
		if !slices.ContainsFunc(s.Answers, func(o AnswerRule) bool { return o.N > r.N }) {
			continue // the same as deleting it
		}
		c := s.clone()
		c.Answers = slices.Delete(c.Answers, i, i+1)
		for j := range c.Answers {
			if c.Answers[j].N > r.N {
				c.Answers[j].N--
			}
		}
		out = append(out, c)
	}
	// An answer for an earlier request: deleting a line shifts which
	// request an answer meets, and a smaller schedule may need it sooner.
	for i, r := range s.Answers {
		if r.N > 1 && !slices.ContainsFunc(s.Answers, func(o AnswerRule) bool { return o.N == r.N-1 }) {
			c := s.clone()
			c.Answers[i].N--
			out = append(out, c)
		}
	}
	return out
}

// Unused is s without the answer rules of requests that a run of it
// never made: requests is how many it made.
func (s Schedule) Unused(requests int) Schedule {
	c := s.clone()
	c.Answers = slices.DeleteFunc(c.Answers, func(r AnswerRule) bool { return r.N > requests })
	return c
}

func (s Schedule) clone() Schedule {
	s.Events, s.Answers, s.Keys = slices.Clone(s.Events), slices.Clone(s.Answers), slices.Clone(s.Keys)
	return s
}

// rule returns the answer rule of the nth request.
func (s Schedule) rule(n int) AnswerRule {
	for _, r := range s.Answers {
		if r.N == n {
			return r
		}
	}
	return AnswerRule{N: n, Answer: Answered}
}

// lines are the schedule as its file holds it, a line each.
func (s Schedule) lines() []line.Line {
	ls := []line.Line{line.New("design", "name", s.Design), line.New("backend", "name", s.Backend)}
	if s.replicas() > 1 {
		ls = append(ls, line.New("replicas", "n", strconv.Itoa(s.Replicas)))
	}
	for _, e := range s.Events {
		l := line.New(string(e.Kind), "at", e.At.String())
		switch e.Kind {
		case Approve:
			l = l.With("case", e.Case).With("title", e.Title)
		case Outage:
			l = l.With("for", e.For.String())
		}
		if e.Kind != Outage && s.replicas() > 1 {
			l = l.With("replica", strconv.Itoa(e.replica()))
		}
		ls = append(ls, l)
	}
	for _, k := range s.Keys {
		ls = append(ls, line.New("key", "case", k.Case, "fault", string(k.Fault)))
	}
	for _, r := range s.Answers {
		l := line.New("request", "n", strconv.Itoa(r.N), "fault", string(r.Answer.Fault))
		if r.Answer.Status != 0 {
			l = l.With("status", strconv.Itoa(r.Answer.Status))
		}
		if key := waitArg[r.Answer.Fault]; key != "" {
			l = l.With(key, r.Wait.String())
		}
		ls = append(ls, l)
	}
	return ls
}

// String is the schedule as its file holds it.
func (s Schedule) String() string {
	var b strings.Builder
	for _, l := range s.lines() {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// waitArg is the argument that says an answer's Wait: how long a paused
// worker waits, and a throttled answer's Retry-After hint.
var waitArg = map[faults.Kind]string{faults.Paused: "for", faults.Throttled: "retry-after"}

// ParseSchedule reads a schedule file; name is how errors call it.
// Lines starting with # are comments.
func ParseSchedule(name string, r io.Reader) (Schedule, error) {
	var s Schedule
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		l, err := line.Parse(text)
		if err == nil {
			err = s.parseLine(l)
		}
		if err != nil {
			return Schedule{}, fmt.Errorf("%w: %s:%d: %v", ErrSchedule, name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Schedule{}, fmt.Errorf("%w: %s: %v", ErrSchedule, name, err)
	}
	switch {
	case s.Design == "":
		return Schedule{}, fmt.Errorf("%w: %s: no design line (design name=NAME)", ErrSchedule, name)
	case s.Backend == "":
		return Schedule{}, fmt.Errorf("%w: %s: no backend line (backend name=sqlite or backend name=postgres)", ErrSchedule, name)
	}
	for _, e := range s.Events {
		if e.replica() > s.replicas() {
			return Schedule{}, fmt.Errorf("%w: %s: %s at=%s strikes replica %d, and the schedule runs %d (a replicas n=N line)", ErrSchedule, name, e.Kind, e.At, e.replica(), s.replicas())
		}
		if (e.Kind == ConnectionReset || e.Kind == CommitReplyLost) && s.Backend != "postgres" {
			return Schedule{}, fmt.Errorf("%w: %s: %s at=%s on backend %s: a SQLite file has no connection to lose but in a process-crash", ErrSchedule, name, e.Kind, e.At, s.Backend)
		}
	}
	return s, nil
}

// args returns the values of l's arguments keys, each of which it needs,
// after checking that l takes nothing besides them and optional.
func args(l line.Line, keys []string, optional ...string) ([]string, error) {
	if err := l.Only(append(slices.Clone(keys), optional...)...); err != nil {
		return nil, err
	}
	values := make([]string, len(keys))
	for i, k := range keys {
		v, ok := l.Arg(k)
		if !ok {
			return nil, fmt.Errorf("%s needs %s=", l.Directive, k)
		}
		values[i] = v
	}
	return values, nil
}

func (s *Schedule) parseLine(l line.Line) error {
	switch l.Directive {
	case "design":
		v, err := args(l, []string{"name"})
		if err != nil {
			return err
		}
		s.Design = v[0]
	case "backend":
		v, err := args(l, []string{"name"})
		if err != nil {
			return err
		}
		if s.Backend = v[0]; s.Backend != "sqlite" && s.Backend != "postgres" {
			return fmt.Errorf("backend name=%s: want sqlite or postgres", s.Backend)
		}
	case "replicas":
		v, err := args(l, []string{"n"})
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > MaxReplicas {
			return fmt.Errorf("replicas n=%s: want how many processes run side by side, 1 to %d", v[0], MaxReplicas)
		}
		s.Replicas = n
	case "key":
		k, err := parseKeyRule(l)
		if err != nil {
			return err
		}
		if _, ok := s.keyFault(k.Case); ok {
			return fmt.Errorf("key case=%s has a rule already", k.Case)
		}
		s.Keys = append(s.Keys, k)
	case "request":
		r, err := parseRule(l)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(s.Answers, func(o AnswerRule) bool { return o.N == r.N }) {
			return fmt.Errorf("request n=%d has a rule already", r.N)
		}
		s.Answers = append(s.Answers, r)
	default:
		e, err := parseEvent(l)
		if err != nil {
			return err
		}
		if n := len(s.Events); n > 0 && e.At < s.Events[n-1].At {
			return fmt.Errorf("%s at=%s comes before the event above (at=%s): events are in time order", e.Kind, e.At, s.Events[n-1].At)
		}
		s.Events = append(s.Events, e)
	}
	return nil
}

// eventArgs are the arguments each event needs besides at=.
var eventArgs = map[EventKind][]string{Approve: {"case", "title"}, ProcessCrash: nil, ConnectionReset: nil, CommitReplyLost: nil, Outage: {"for"}}

func parseEvent(l line.Line) (Event, error) {
	e := Event{Kind: EventKind(l.Directive)}
	keys, ok := eventArgs[e.Kind]
	if !ok {
		var events []string
		for _, k := range slices.Sorted(maps.Keys(eventArgs)) {
			events = append(events, string(k))
		}
		return Event{}, fmt.Errorf("%s: %swant design, backend, replicas, key, request, or an event: %s", l.Directive, stepOnly(faults.Kind(l.Directive)), strings.Join(events, ", "))
	}
	var optional []string
	if e.Kind != Outage {
		optional = []string{"replica"}
	}
	v, err := args(l, append([]string{"at"}, keys...), optional...)
	if err != nil {
		return Event{}, err
	}
	if e.At, err = duration(l, "at", v[0], 0); err != nil {
		return Event{}, err
	}
	switch e.Kind {
	case Approve:
		if e.Case, e.Title = v[1], v[2]; e.Case == "" {
			return Event{}, errors.New("approve case=: want the case approved, such as case=case-1")
		}
	case Outage:
		if e.For, err = duration(l, "for", v[1], time.Nanosecond); err != nil {
			return Event{}, err
		}
	}
	if r, ok := l.Arg("replica"); ok {
		if e.Replica, err = strconv.Atoi(r); err != nil || e.Replica < 1 {
			return Event{}, fmt.Errorf("%s replica=%s: want the process's number, from 1", e.Kind, r)
		}
	}
	return e, nil
}

// duration reads value, the argument key of l: a duration of at least
// least, such as 1m30s.
func duration(l line.Line, key, value string, least time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil || d < least {
		return 0, fmt.Errorf("%s %s=%s: want a duration of at least %s, such as 1m30s", l.Directive, key, value, least)
	}
	return d, nil
}

// stepOnly says of a fault the step mode alone injects that it is so,
// and is "" for any other word.
func stepOnly(k faults.Kind) string {
	if slices.Contains(faults.All, k) && !faults.RunningMode.Injects(k) {
		return "a fault the step mode alone injects; "
	}
	return ""
}

// faultArg reads the fault= argument of l, one of allowed.
func faultArg(l line.Line, value string, allowed []faults.Kind) (faults.Kind, error) {
	if k, err := faults.ParseKind(value, allowed...); err == nil {
		return k, nil
	}
	names := make([]string, len(allowed))
	for i, k := range allowed {
		names[i] = string(k)
	}
	return "", fmt.Errorf("%s fault=%s: %swant one of %s", l.Directive, value, stepOnly(faults.Kind(value)), strings.Join(names, ", "))
}

func parseRule(l line.Line) (AnswerRule, error) {
	v, err := args(l, []string{"n", "fault"}, "status", "retry-after", "for")
	if err != nil {
		return AnswerRule{}, err
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 {
		return AnswerRule{}, fmt.Errorf("request n=%s: n is the request's number, from 1", v[0])
	}
	var kinds []faults.Kind
	for _, a := range answers {
		if !slices.Contains(kinds, a.Fault) {
			kinds = append(kinds, a.Fault)
		}
	}
	k, err := faultArg(l, v[1], kinds)
	if err != nil {
		return AnswerRule{}, err
	}
	r := AnswerRule{N: n, Answer: Answer{Fault: k}}
	var statuses []string
	for _, a := range answers {
		if a.Fault == k && a.Status != 0 {
			statuses = append(statuses, strconv.Itoa(a.Status))
		}
	}
	status, hasStatus := l.Arg("status")
	switch {
	case len(statuses) == 0 && hasStatus:
		return AnswerRule{}, fmt.Errorf("request n=%d fault=%s takes no status=", n, k)
	case len(statuses) > 0 && !slices.Contains(statuses, status):
		return AnswerRule{}, fmt.Errorf("request n=%d fault=%s needs status=, one of %s", n, k, strings.Join(statuses, ", "))
	case hasStatus:
		r.Answer.Status, _ = strconv.Atoi(status)
	}
	for _, key := range []string{"retry-after", "for"} {
		value, has := l.Arg(key)
		switch wanted := waitArg[k] == key; {
		case wanted && !has:
			return AnswerRule{}, fmt.Errorf("request n=%d fault=%s needs %s=, how long, such as %s=45s", n, k, key, key)
		case has && !wanted:
			return AnswerRule{}, fmt.Errorf("request n=%d fault=%s takes no %s=", n, k, key)
		case has:
			if r.Wait, err = duration(l, key, value, time.Nanosecond); err != nil {
				return AnswerRule{}, err
			}
		}
	}
	return r, nil
}

func parseKeyRule(l line.Line) (KeyRule, error) {
	v, err := args(l, []string{"case", "fault"})
	if err != nil {
		return KeyRule{}, err
	}
	if v[0] == "" {
		return KeyRule{}, errors.New("key case=: want the case whose every request the fault strikes, such as case=case-1")
	}
	kinds := make([]faults.Kind, len(keyFaults))
	for i, f := range keyFaults {
		kinds[i] = faults.Kind(f)
	}
	k, err := faultArg(l, v[1], kinds)
	if err != nil {
		return KeyRule{}, err
	}
	return KeyRule{Case: v[0], Fault: KeyFault(k)}, nil
}
