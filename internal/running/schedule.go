package running

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/handoff/faults"
)

// A Schedule is one run of a running design, as the harness draws it and
// a person reads it: when the app approves what, when its process
// crashes or loses a database connection or a COMMIT's reply, when the
// receiver is down, and what the receiver does with each request it
// gets, by the request's number. Goroutine scheduling is not in it: a
// replay of a schedule may interleave the workers otherwise.
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

// KeyFault is what the receiver does with every request for one key.
type KeyFault string

// The faults that last, per key.
const (
	// RefuseKey400: every request for the key is refused for good, 400,
	// before acting (the receiver's validation rejects it).
	RefuseKey400 KeyFault = "400"
	// RefuseKey422: every request for the key is refused for good, 422
	// (the receiver holds the key with another payload).
	RefuseKey422 KeyFault = "422"
	// SlowKey: every request for the key creates (or replays) its task
	// and answers after the client gave up.
	SlowKey KeyFault = "slow"
	// DownKey: the receiver is down for the key, past the design's
	// settle time: every request for it fails before the receiver acts.
	DownKey KeyFault = "down"
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

// EventKind names an Event.
type EventKind string

// The events of a schedule.
const (
	// Approve: the app approves Case with Title, through the running
	// process.
	Approve EventKind = "approve"
	// Crash: every goroutine of the process stopped and every connection
	// of it cut at once (open transactions lost), then the app boots
	// again.
	Crash EventKind = "crash"
	// Reset: every database connection of the process is cut; the
	// process lives on.
	Reset EventKind = "reset"
	// CommitReplyLost: the next COMMIT of the process is carried out and
	// its reply lost: the step mode's fault of the same name.
	CommitReplyLost = EventKind(faults.CommitReplyLost)
	// Outage: the receiver takes no request for For: each fails before
	// it acts.
	Outage EventKind = "outage"
)

// AnswerRule is what the receiver does with its Nth request (1 is the
// first); a request without a rule is answered.
type AnswerRule struct {
	N      int
	Answer Answer
	// Wait: for Hold, how long the request is held before the receiver
	// takes it; for Busy and Throttled, the Retry-After hint.
	Wait time.Duration
}

// Answer is what the receiver does with one request.
type Answer string

// The answers the harness draws: every class the sender maps.
const (
	// Answered: the task is created (or the key replayed) and the reply
	// arrives.
	Answered Answer = "answer"
	// LostReply: the task is created (or replayed); the reply is lost:
	// the step mode's fault of the same name.
	LostReply = Answer(faults.LostReply)
	// Slow: the task is created; the reply comes after the client gave
	// up (its send timeout).
	Slow Answer = "slow"
	// Hold: the worker that sends is paused for Wait, longer than any
	// lease or visibility timeout, then the request goes out.
	Hold Answer = "hold"
	// Busy: 503 with a retry hint, before acting.
	Busy Answer = "503"
	// Throttled: 429 with a retry hint, before acting.
	Throttled Answer = "429"
	// InFlight: 409, the key in flight elsewhere, before acting.
	InFlight Answer = "409"
	// Failed: 500 after acting: the task exists.
	Failed Answer = "500"
	// Refused: 400, refused for good, before acting.
	Refused Answer = "400"
	// Conflict: 422, the receiver holds the key with another payload (put
	// there by another system), before acting.
	Conflict Answer = "422"
)

// MaxReplicas is the most processes a schedule runs side by side.
const MaxReplicas = 3

// answers are the Answers a schedule file may name.
var answers = []Answer{Answered, LostReply, Slow, Hold, Busy, Throttled, InFlight, Failed, Refused, Conflict}

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

// String is the schedule as its file holds it.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "design %s\nbackend %s\n", s.Design, s.Backend)
	if s.replicas() > 1 {
		fmt.Fprintf(&b, "replicas %d\n", s.Replicas)
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, "at %s %s", e.At, e.Kind)
		switch e.Kind {
		case Approve:
			fmt.Fprintf(&b, " %s %s", e.Case, strconv.Quote(e.Title))
		case Outage:
			fmt.Fprintf(&b, " %s", e.For)
		}
		if e.Kind != Outage && s.replicas() > 1 {
			fmt.Fprintf(&b, " replica=%d", e.replica())
		}
		b.WriteByte('\n')
	}
	for _, k := range s.Keys {
		fmt.Fprintf(&b, "key %s %s\n", k.Case, k.Fault)
	}
	for _, r := range s.Answers {
		fmt.Fprintf(&b, "request %d %s", r.N, r.Answer)
		if r.Wait > 0 {
			fmt.Fprintf(&b, " %s", r.Wait)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseSchedule reads a schedule file; name is how errors call it.
// Lines starting with # are comments.
func ParseSchedule(name string, r io.Reader) (Schedule, error) {
	var s Schedule
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if err := s.parseLine(text); err != nil {
			return Schedule{}, fmt.Errorf("%w: %s:%d: %v", ErrSchedule, name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Schedule{}, fmt.Errorf("%w: %s: %v", ErrSchedule, name, err)
	}
	switch {
	case s.Design == "":
		return Schedule{}, fmt.Errorf("%w: %s: no design line (design NAME)", ErrSchedule, name)
	case s.Backend == "":
		return Schedule{}, fmt.Errorf("%w: %s: no backend line (backend sqlite or backend postgres)", ErrSchedule, name)
	}
	for _, e := range s.Events {
		if e.replica() > s.replicas() {
			return Schedule{}, fmt.Errorf("%w: %s: at %s %s strikes replica %d, and the schedule runs %d (a replicas N line)", ErrSchedule, name, e.At, e.Kind, e.replica(), s.replicas())
		}
	}
	return s, nil
}

func (s *Schedule) parseLine(text string) error {
	word, rest, _ := strings.Cut(text, " ")
	switch word {
	case "design":
		s.Design = strings.TrimSpace(rest)
	case "backend":
		s.Backend = strings.TrimSpace(rest)
		if s.Backend != "sqlite" && s.Backend != "postgres" {
			return fmt.Errorf("backend %q: want sqlite or postgres", s.Backend)
		}
	case "replicas":
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 1 || n > MaxReplicas {
			return fmt.Errorf("replicas %q: want how many processes run side by side, 1 to %d", rest, MaxReplicas)
		}
		s.Replicas = n
	case "key":
		k, err := parseKeyRule(rest)
		if err != nil {
			return err
		}
		if _, ok := s.keyFault(k.Case); ok {
			return fmt.Errorf("key %s has a rule already", k.Case)
		}
		s.Keys = append(s.Keys, k)
	case "at":
		e, err := parseEvent(rest)
		if err != nil {
			return err
		}
		if n := len(s.Events); n > 0 && e.At < s.Events[n-1].At {
			return fmt.Errorf("at %s comes before the line above (%s): events are in time order", e.At, s.Events[n-1].At)
		}
		s.Events = append(s.Events, e)
	case "request":
		r, err := parseRule(rest)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(s.Answers, func(o AnswerRule) bool { return o.N == r.N }) {
			return fmt.Errorf("request %d has a rule already", r.N)
		}
		s.Answers = append(s.Answers, r)
	default:
		return fmt.Errorf("%q: want design, backend, replicas, at, request or key", word)
	}
	return nil
}

func parseEvent(text string) (Event, error) {
	at, rest, _ := strings.Cut(text, " ")
	d, err := time.ParseDuration(at)
	if err != nil || d < 0 {
		return Event{}, fmt.Errorf("at %q: want a time since the start, such as 1m30s", at)
	}
	kind, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
	e := Event{At: d, Kind: EventKind(kind)}
	if e.Kind != Outage {
		// replica=R ends the line; an approval's comes after its quoted
		// title, which may hold the same words.
		from := 0
		if e.Kind == Approve {
			from = strings.LastIndex(args, `"`) + 1
		}
		if i := strings.LastIndex(" "+args[from:], " replica="); i >= 0 {
			i += from
			r := args[i+len("replica="):]
			if e.Replica, err = strconv.Atoi(strings.TrimSpace(r)); err != nil || e.Replica < 1 {
				return Event{}, fmt.Errorf("%s replica=%s: want the process's number, from 1", kind, r)
			}
			args = strings.TrimSpace(args[:i])
		}
	}

	switch e.Kind {
	case Approve:
		c, title, _ := strings.Cut(strings.TrimSpace(args), " ")
		if e.Title, err = strconv.Unquote(strings.TrimSpace(title)); err != nil || c == "" {
			return Event{}, fmt.Errorf("approve %q: want approve CASE \"TITLE\"", args)
		}
		e.Case = c
	case Outage:
		if e.For, err = time.ParseDuration(strings.TrimSpace(args)); err != nil || e.For <= 0 {
			return Event{}, fmt.Errorf("outage %q: want outage DURATION, such as outage 40s", args)
		}
	case Crash, Reset, CommitReplyLost:
		if strings.TrimSpace(args) != "" {
			return Event{}, fmt.Errorf("%s takes nothing after it, got %q", kind, args)
		}
	case EventKind(faults.CommitLost):
		return Event{}, fmt.Errorf("event %q: a COMMIT that never reaches the server is the step mode's; a COMMIT carried out whose reply is lost is commit-reply-lost", kind)
	default:
		return Event{}, fmt.Errorf("event %q: want approve, crash, reset, commit-reply-lost or outage", kind)
	}
	return e, nil
}

func parseRule(text string) (AnswerRule, error) {
	fields := strings.Fields(text)
	if len(fields) < 2 || len(fields) > 3 {
		return AnswerRule{}, fmt.Errorf("request %q: want request N ANSWER [WAIT]", text)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1 {
		return AnswerRule{}, fmt.Errorf("request %q: N is the request's number, from 1", fields[0])
	}
	r := AnswerRule{N: n, Answer: Answer(fields[1])}
	if !slices.Contains(answers, r.Answer) {
		return AnswerRule{}, fmt.Errorf("answer %q: want one of %s", fields[1], answerList())
	}
	waits := r.Answer == Hold || r.Answer == Busy || r.Answer == Throttled
	switch {
	case waits && len(fields) != 3:
		return AnswerRule{}, fmt.Errorf("request %d %s needs how long, such as %s 45s", n, r.Answer, r.Answer)
	case !waits && len(fields) == 3:
		return AnswerRule{}, fmt.Errorf("request %d %s takes no time after it", n, r.Answer)
	case waits:
		if r.Wait, err = time.ParseDuration(fields[2]); err != nil || r.Wait <= 0 {
			return AnswerRule{}, fmt.Errorf("request %d %s %q: want a duration, such as 45s", n, r.Answer, fields[2])
		}
	}
	return r, nil
}

func parseKeyRule(text string) (KeyRule, error) {
	fields := strings.Fields(text)
	if len(fields) != 2 {
		return KeyRule{}, fmt.Errorf("key %q: want key CASE FAULT, such as key case-2 400", text)
	}
	k := KeyRule{Case: fields[0], Fault: KeyFault(fields[1])}
	if !slices.Contains(keyFaults, k.Fault) {
		names := make([]string, len(keyFaults))
		for i, f := range keyFaults {
			names[i] = string(f)
		}
		return KeyRule{}, fmt.Errorf("key fault %q: want one of %s", fields[1], strings.Join(names, ", "))
	}
	return k, nil
}

func answerList() string {
	names := make([]string, len(answers))
	for i, a := range answers {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
