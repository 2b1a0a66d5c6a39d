// Package model is the reference model of the handoff: a pure function of a
// state and one input that predicts the input's outcome and the next state,
// written from docs/spec.md without looking at package system. It does
// no I/O, reads no clock and draws no random numbers; the harness compares
// the real system with it after every step.
//
// Ambiguous outcomes are modelled, not guessed: a lost reply is the
// receiver acting and the worker hearing a transient failure.
package model

import (
	"maps"
	"slices"
)

// Row states and last errors, as the spec names them.
const (
	Pending = "pending"
	Sent    = "sent"
	Blocked = "blocked"

	Transient        = "transient"
	Conflict         = "conflict"
	BudgetExhausted  = "budget-exhausted"
	Deadline         = "deadline"
	RetentionExpired = "retention-expired"
	Rejected         = "rejected"
)

// DefaultWorker is the name of the worker that Deliver and Converge move.
const DefaultWorker = "default"

// Approval is a recorded approval: its action key and canonical payload.
type Approval struct {
	Key     string
	Payload string
}

// Row is an outbox row. RemoteID is 0 when no task id is recorded and
// LastError is empty when there is none. Times are milliseconds since the
// Unix epoch; FirstClaimedAt and LeaseUntil are 0 and LeaseOwner is empty
// when unset. Fence starts at 0 and grows by one with every claim, every
// operator action and every lease a restart releases.
type Row struct {
	Key       string
	State     string
	Attempts  int
	RemoteID  int64
	LastError string

	CreatedAt      int64
	NextAttemptAt  int64
	FirstClaimedAt int64
	LeaseOwner     string
	LeaseUntil     int64
	Fence          int64
}

// leased reports whether r carries a lease that has not run out at now.
func (r Row) leased(now int64) bool {
	return r.LeaseOwner != "" && r.LeaseUntil > now
}

// release clears r's lease.
func (r *Row) release() {
	r.LeaseOwner, r.LeaseUntil = "", 0
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

// Claim is a worker's claim in flight: the row's key, the fence and the
// attempt number the claim gave it, and, once the request went out, what
// the worker heard (Heard is empty before the send). RemoteID is the task
// id heard with ResultTask; RetryAfter is the receiver's not-before hint
// in milliseconds heard with ResultTransient (0 when none).
type Claim struct {
	At         int64 // when the claim was made
	Key        string
	Fence      int64
	Attempt    int
	Heard      Result
	RemoteID   int64
	RetryAfter int64
}

// Memory is the receiver's memory of a key: the task the key names and
// when the receiver stored the key.
type Memory struct {
	TaskID   int64
	StoredAt int64
}

// AuditEntry is one line of the operators' audit log.
type AuditEntry struct {
	At     int64
	Actor  string
	Action string
	Key    string
	Reason string
}

// State is the model's state: what is observable, the options, the
// virtual clock Now, each worker's claim in flight, what each pipelined
// worker keeps between its calls, the receiver's memory of keys and the
// operators' audit log.
type State struct {
	Config
	Observation
	Now    int64
	Claims map[string]Claim
	Pipes  map[string]Pipe
	Memory map[string]Memory
	Audit  []AuditEntry
}

// New returns the empty state with the given attempt budget and the
// scenario options otherwise (see Scenario); it does not validate.
func New(maxAttempts int) State {
	c := Scenario()
	c.MaxAttempts = maxAttempts
	return State{Config: c, Now: c.Start}
}

// Open returns the empty state under c, or c's error from Validate.
func Open(c Config) (State, error) {
	if err := c.Validate(); err != nil {
		return State{}, err
	}
	return State{Config: c, Now: c.Start}, nil
}

// clone returns a copy of s that shares no slice or map with it, so that
// every transition leaves its input state untouched.
func (s State) clone() State {
	s.Approvals = slices.Clone(s.Approvals)
	s.Outbox = slices.Clone(s.Outbox)
	s.Tasks = slices.Clone(s.Tasks)
	s.Claims = maps.Clone(s.Claims)
	s.Pipes = maps.Clone(s.Pipes)
	s.Memory = maps.Clone(s.Memory)
	s.Audit = slices.Clone(s.Audit)
	return s
}

// row returns the index of key's outbox row, or -1.
func (s State) row(key string) int {
	return slices.IndexFunc(s.Outbox, func(r Row) bool { return r.Key == key })
}

func (s State) approval(key string) (Approval, bool) {
	for _, a := range s.Approvals {
		if a.Key == key {
			return a, true
		}
	}
	return Approval{}, false
}
