package handoff

import (
	"sync"
	"sync/atomic"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// Transition names a change of one outbox row in one step.
type Transition string

// The transitions an exploration counts: a row leaving pending for sent,
// for blocked by a key conflict, for blocked by its spent budget, or
// staying pending with one more attempt.
const (
	PendingToSent            Transition = "pending->sent"
	PendingToBlockedConflict Transition = "pending->blocked (conflict)"
	PendingToBlockedBudget   Transition = "pending->blocked (budget)"
	PendingToPending         Transition = "pending->pending"
)

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
	Transitions  map[Transition]int
	InputClasses map[InputClass]int // the classes of the approvals' case ids and titles
}

// NewStats returns empty Stats.
func NewStats() *Stats {
	return &Stats{
		Faults:       map[faults.Kind]int{},
		Results:      map[AnswerKind]int{},
		Transitions:  map[Transition]int{},
		InputClasses: map[InputClass]int{},
	}
}

// count records one step. A nil *Stats counts nothing.
func (st *Stats) count(s Step, r stepResult, before, after model.Observation) {
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
	}
	if r.fired != "" {
		st.Faults[r.fired]++
	}
	if s.Directive == "deliver" {
		st.Results[r.got.Kind]++
	}
	rows := map[string]model.Row{}
	for _, row := range before.Outbox {
		rows[row.Key] = row
	}
	for _, row := range after.Outbox {
		was, ok := rows[row.Key]
		if !ok || was.State != model.Pending || was == row {
			continue
		}
		switch {
		case row.State == model.Sent:
			st.Transitions[PendingToSent]++
		case row.State == model.Blocked && row.LastError == model.Conflict:
			st.Transitions[PendingToBlockedConflict]++
		case row.State == model.Blocked:
			st.Transitions[PendingToBlockedBudget]++
		default:
			st.Transitions[PendingToPending]++
		}
	}
}
