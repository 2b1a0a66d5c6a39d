package sim

import (
	"bytes"
	"encoding/gob"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// Transition names a change of one outbox row in one step.
type Transition string

// The transitions an exploration counts: a row leaving pending for sent,
// for blocked by a key conflict, by its spent budget, by its time budget,
// by the receiver's retention or by a rejection, or staying pending with
// one more attempt; and a person's repair of a blocked row.
const (
	PendingToSent             Transition = "pending->sent"
	PendingToBlockedConflict  Transition = "pending->blocked (conflict)"
	PendingToBlockedBudget    Transition = "pending->blocked (budget)"
	PendingToBlockedDeadline  Transition = "pending->blocked (deadline)"
	PendingToBlockedRetention Transition = "pending->blocked (retention-expired)"
	PendingToBlockedRejected  Transition = "pending->blocked (rejected)"
	PendingToPending          Transition = "pending->pending"
	BlockedToPending          Transition = "blocked->pending"
	BlockedToSent             Transition = "blocked->sent"
)

// blockedBy names the transition to blocked for each last error.
var blockedBy = map[string]Transition{
	model.Conflict:         PendingToBlockedConflict,
	model.BudgetExhausted:  PendingToBlockedBudget,
	model.Transient:        PendingToBlockedBudget,
	model.Deadline:         PendingToBlockedDeadline,
	model.RetentionExpired: PendingToBlockedRetention,
	model.Rejected:         PendingToBlockedRejected,
}

// Shape names a state of a sequence that swarm testing (see mix) is for:
// its mixes reach it more often than the default one.
type Shape string

// The shapes an exploration counts, in steps after which they hold.
const (
	// AttemptSpread: pending rows at three different attempt counts at
	// once, where claim order and budgets meet.
	AttemptSpread Shape = "pending rows at three attempt counts"
	// FaultBurst: one fault taking effect in a third step in a row, or
	// more: a step that fires none, or another, ends the run.
	FaultBurst Shape = "one fault three times running"
	// OtherLetterCase: a case approved again with a payload that differs
	// from its first only in letter case: another action under the same
	// key, which a comparison without regard to case takes for a repeat.
	OtherLetterCase Shape = "a case approved again in other letter case"
)

// Shapes are every shape a default exploration must reach (TestReach
// checks it does).
var Shapes = []Shape{AttemptSpread, FaultBurst, OtherLetterCase}

// Stats counts what an exploration did. Sequences the property ran (not
// counting the runs of rapid's shrinking, ShrinkRuns), and steps of both.
// Several sequences may count into one Stats at once. The counters may be
// read while they run (for a progress line); the maps only after they end.
type Stats struct {
	Sequences  atomic.Int64
	ShrinkRuns atomic.Int64
	Steps      atomic.Int64

	mu           sync.Mutex // guards the maps while sequences count
	Faults       map[faults.Kind]int
	Results      map[AnswerKind]int // the worker's answers to deliver steps: idle, sent, pending, blocked, crashed, error
	Phases       map[string]int     // the answers to the other steps, as "directive answer": "settle stale", "claim blocked"
	Transitions  map[Transition]int
	InputClasses map[InputClass]int // the classes of the approvals' case ids and titles
	Shapes       map[Shape]int      // the steps after which each shape held
	// Attempts counts the rows' attempts by their number (the first of a
	// row, its second, ...), and Backoffs the backoffs drawn after an
	// attempt's transient failure, by the attempt and the ceiling.
	Attempts map[int]int
	Backoffs map[BackoffCeiling]int
}

// NewStats returns empty Stats.
func NewStats() *Stats {
	return &Stats{
		Faults:       map[faults.Kind]int{},
		Results:      map[AnswerKind]int{},
		Phases:       map[string]int{},
		Transitions:  map[Transition]int{},
		InputClasses: map[InputClass]int{},
		Shapes:       map[Shape]int{},
		Attempts:     map[int]int{},
		Backoffs:     map[BackoffCeiling]int{},
	}
}

// otherLetterCase reports whether approve step s approves a case of
// approvals again with a payload that differs only in letter case.
func otherLetterCase(s Step, approvals []model.Approval) bool {
	caseID, _ := s.Arg("case")
	title, _ := s.Arg("title")
	a, ok := model.Action(caseID, title)
	if !ok {
		return false
	}
	for _, held := range approvals {
		if held.Key == a.Key && held.Payload != a.Payload && strings.EqualFold(held.Payload, a.Payload) {
			return true
		}
	}
	return false
}

// count records one step; burst is how many steps in a row, this one
// included, the fault it fired took effect (0 when it fired none), and
// ceilings the backoff ceilings the system drew within. A nil *Stats
// counts nothing.
func (st *Stats) count(s Step, r stepResult, before, after model.Observation, burst int, ceilings []time.Duration) {
	if st == nil {
		return
	}
	st.Steps.Add(1)
	st.mu.Lock()
	defer st.mu.Unlock()
	if s.Directive == "approve" {
		for _, c := range classifyApproval(s) {
			st.InputClasses[c]++
		}
		if otherLetterCase(s, before.Approvals) {
			st.Shapes[OtherLetterCase]++
		}
	}
	if r.fired != "" {
		st.Faults[r.fired]++
	}
	if burst >= 3 {
		st.Shapes[FaultBurst]++
	}
	if attemptSpread(after.Outbox) {
		st.Shapes[AttemptSpread]++
	}
	backoffAfter := 0
	if r.backoffAfter != nil {
		backoffAfter = r.backoffAfter.attempt
	}
	st.countAttempts(before, after, backoffAfter, ceilings)
	switch s.Directive {
	case "deliver":
		st.Results[r.got.Kind]++
	case "approve", "converge", "design", "transport", "backend":
	default:
		st.Phases[s.Directive+" "+string(r.got.Kind)]++
	}
	rows := map[string]model.Row{}
	for _, row := range before.Outbox {
		rows[row.Key] = row
	}
	for _, row := range after.Outbox {
		was, ok := rows[row.Key]
		switch {
		case !ok || was.State == row.State && was.Attempts == row.Attempts && was.LastError == row.LastError:
		case was.State == model.Blocked && row.State == model.Pending:
			st.Transitions[BlockedToPending]++
		case was.State == model.Blocked && row.State == model.Sent:
			st.Transitions[BlockedToSent]++
		case was.State != model.Pending:
		case row.State == model.Sent:
			st.Transitions[PendingToSent]++
		case row.State == model.Blocked:
			st.Transitions[blockedBy[row.LastError]]++
		case row.Attempts > was.Attempts:
			st.Transitions[PendingToPending]++
		}
	}
}

// attemptSpread reports whether pending rows of outbox hold three
// different attempt counts (AttemptSpread): counted after every step, so
// it stops at the third.
func attemptSpread(outbox []model.Row) bool {
	seen := make([]int, 0, 3)
	for _, r := range outbox {
		if r.State != model.Pending || slices.Contains(seen, r.Attempts) {
			continue
		}
		if seen = append(seen, r.Attempts); len(seen) == 3 {
			return true
		}
	}
	return false
}

// Add adds what o counted to st: the Stats of a run's lanes in other
// processes, or of the shards of a run, make the run's. Neither may be
// counting while it adds.
func (st *Stats) Add(o *Stats) {
	st.Sequences.Add(o.Sequences.Load())
	st.ShrinkRuns.Add(o.ShrinkRuns.Load())
	st.Steps.Add(o.Steps.Load())
	addCounts(st.Faults, o.Faults)
	addCounts(st.Results, o.Results)
	addCounts(st.Phases, o.Phases)
	addCounts(st.Transitions, o.Transitions)
	addCounts(st.InputClasses, o.InputClasses)
	addCounts(st.Shapes, o.Shapes)
	addCounts(st.Attempts, o.Attempts)
	addCounts(st.Backoffs, o.Backoffs)
}

func addCounts[K comparable](to, from map[K]int) {
	for k, n := range from {
		to[k] += n
	}
}

// statsWire is Stats as gob sends it: its counters' values and its maps.
type statsWire struct {
	Sequences, ShrinkRuns, Steps int64
	Faults                       map[faults.Kind]int
	Results                      map[AnswerKind]int
	Phases                       map[string]int
	Transitions                  map[Transition]int
	InputClasses                 map[InputClass]int
	Shapes                       map[Shape]int
	Attempts                     map[int]int
	Backoffs                     map[BackoffCeiling]int
}

// GobEncode encodes st, so that a lane in another process can send what
// it counted (see Add). st may not be counting.
func (st *Stats) GobEncode() ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(statsWire{st.Sequences.Load(), st.ShrinkRuns.Load(), st.Steps.Load(),
		st.Faults, st.Results, st.Phases, st.Transitions, st.InputClasses, st.Shapes, st.Attempts, st.Backoffs})
	return b.Bytes(), err
}

// GobDecode sets st to the Stats GobEncode encoded.
func (st *Stats) GobDecode(b []byte) error {
	var w statsWire
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return err
	}
	*st = Stats{}
	st.Sequences.Store(w.Sequences)
	st.ShrinkRuns.Store(w.ShrinkRuns)
	st.Steps.Store(w.Steps)
	fresh := NewStats()
	st.Faults, st.Results, st.Phases, st.Transitions, st.InputClasses, st.Shapes = fresh.Faults, fresh.Results, fresh.Phases, fresh.Transitions, fresh.InputClasses, fresh.Shapes
	st.Attempts, st.Backoffs = fresh.Attempts, fresh.Backoffs
	addCounts(st.Faults, w.Faults)
	addCounts(st.Results, w.Results)
	addCounts(st.Phases, w.Phases)
	addCounts(st.Transitions, w.Transitions)
	addCounts(st.InputClasses, w.InputClasses)
	addCounts(st.Shapes, w.Shapes)
	addCounts(st.Attempts, w.Attempts)
	addCounts(st.Backoffs, w.Backoffs)
	return nil
}
