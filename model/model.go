// Package model is the reference model of the handoff: a pure function of a
// state and one input that predicts the input's outcome and the next state,
// written from ../shared/SPEC.md without looking at package system. It does
// no I/O, reads no clock and draws no random numbers; the harness compares
// the real system with it after every step.
//
// Ambiguous outcomes are modelled, not guessed: a lost reply is the
// receiver acting and the worker hearing a transient failure.
package model

import "slices"

// Row states and last errors, as SPEC names them.
const (
	Pending = "pending"
	Sent    = "sent"
	Blocked = "blocked"

	Transient       = "transient"
	Conflict        = "conflict"
	BudgetExhausted = "budget-exhausted"
)

// Approval is a recorded approval: its action key and canonical payload.
type Approval struct {
	Key     string
	Payload string
}

// Row is an outbox row. RemoteID is 0 when no task id is recorded and
// LastError is empty when there is none.
type Row struct {
	Key       string
	State     string
	Attempts  int
	RemoteID  int64
	LastError string
}

// Task is a task at the receiver.
type Task struct {
	ID      int64
	Key     string
	Payload string
}

// Observation is everything a person could observe of the handoff: the
// approvals and outbox rows in insertion order and the receiver's tasks in
// id order.
type Observation struct {
	Approvals []Approval
	Outbox    []Row
	Tasks     []Task
}

// State is the model's state: what is observable, plus the attempt budget.
type State struct {
	MaxAttempts int
	Observation
}

// New returns the empty state with the given attempt budget.
func New(maxAttempts int) State {
	return State{MaxAttempts: maxAttempts}
}

// clone returns a copy of s that shares no slice with it, so that every
// transition leaves its input state untouched.
func (s State) clone() State {
	s.Approvals = slices.Clone(s.Approvals)
	s.Outbox = slices.Clone(s.Outbox)
	s.Tasks = slices.Clone(s.Tasks)
	return s
}

func (s State) approval(key string) (Approval, bool) {
	for _, a := range s.Approvals {
		if a.Key == key {
			return a, true
		}
	}
	return Approval{}, false
}

func (s State) task(key string) (Task, bool) {
	for _, t := range s.Tasks {
		if t.Key == key {
			return t, true
		}
	}
	return Task{}, false
}
