package sim

import (
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// AnswerKind is the kind of answer a step gets: a verdict of the system,
// or of the model predicting it. Its string is the word a failure table
// shows for the step.
type AnswerKind string

// The kinds of answer. An approval is Approved, Invalid, Conflict, Crashed
// or Error; a delivery Sent, Pending, Blocked, Idle, Crashed or Error; a
// converge step Idle after some deliveries, Busy (still not idle at its
// limit) or Error; a restart Restarted; a design line Designed; a
// transport line Transported.
const (
	Approved  AnswerKind = "approved"
	Invalid   AnswerKind = "invalid"
	Conflict  AnswerKind = "conflict"
	Crashed   AnswerKind = "crashed"
	Sent      AnswerKind = "sent"
	Pending   AnswerKind = "pending"
	Blocked   AnswerKind = "blocked"
	Idle      AnswerKind = "idle"
	Busy      AnswerKind = "busy"
	Error     AnswerKind = "error"
	Restarted AnswerKind = "restarted"
	Designed  AnswerKind = "design"
	// Transported answers a transport line.
	Transported AnswerKind = "transport"
	// DatabaseBusy and DatabaseFull answer a step whose write a database
	// refused (system.ErrBusy, system.ErrFull), or a send whose receiver's
	// database refused the task.
	DatabaseBusy AnswerKind = "database-busy"
	DatabaseFull AnswerKind = "database-full"
	// CommitUnknown answers a step whose write's connection died during
	// its COMMIT (system.ErrCommitUnknown): the caller cannot tell whether
	// it committed.
	CommitUnknown AnswerKind = "commit-unknown"
	// OnBackend answers a backend line on the backend it names.
	OnBackend AnswerKind = "backend"

	// The phases of a named worker and the clock: a claim is Claimed,
	// Blocked or Idle (At: when a row becomes eligible); a send hears
	// Task (N: the task id), Transient, Conflict or Rejected; a settle is
	// Sent, Pending, Blocked or Stale; a crash Crashed; a step out of turn
	// (a send without a claim) OutOfTurn.
	Claimed    AnswerKind = "claimed"
	Task       AnswerKind = "task"
	Transient  AnswerKind = "transient"
	Rejected   AnswerKind = "rejected"
	Stale      AnswerKind = "stale"
	OutOfTurn  AnswerKind = "out-of-turn"
	Ticked     AnswerKind = "ticked"
	Configured AnswerKind = "configured"

	// An operator action is Done, or refused: the row is in the wrong
	// state, past the receiver's retention, unknown, or the input is
	// invalid.
	Done             AnswerKind = "done"
	Listed           AnswerKind = "listed" // a stale step: N rows need a person
	RefusedState     AnswerKind = "refused-state"
	RefusedRetention AnswerKind = "refused-retention"
	RefusedUnknown   AnswerKind = "refused-unknown"
	RefusedInput     AnswerKind = "refused-input"
)

// Answer is what the system answered a step, or what the model predicted
// it would: comparable with ==.
type Answer struct {
	Kind AnswerKind
	// Key is the action key the answer names, if any.
	Key string
	// N is how many deliveries a converge step took (Idle) or made before
	// it gave up (Busy), or the task id a send heard (Task).
	N int64
	// At is, for a claim that found nothing eligible, when a pending row
	// becomes eligible (milliseconds since the epoch; 0 when none is
	// pending).
	At int64
}

// String prints a as invariant 6 quotes it: "sent KEY", "idle after 3".
func (a Answer) String() string {
	s := string(a.Kind)
	if a.Key != "" {
		s += " " + a.Key
	}
	switch {
	case a.Kind == Idle && a.N > 0:
		s += fmt.Sprintf(" after %d", a.N)
	case a.Kind == Task:
		s += fmt.Sprintf(" %d", a.N)
	case a.At > 0:
		s += fmt.Sprintf(" until %d", a.At)
	}
	return s
}

// workerAnswers are the kinds of the worker's results.
var workerAnswers = map[system.Result]AnswerKind{
	system.Idle:          Idle,
	system.ResultSent:    Sent,
	system.ResultPending: Pending,
	system.ResultBlocked: Blocked,
	system.ResultStale:   Stale,
}

// resultAnswers are the kinds of the model's predictions for a delivery.
var resultAnswers = map[model.Result]AnswerKind{
	model.Idle:            Idle,
	model.ResultSent:      Sent,
	model.ResultPending:   Pending,
	model.ResultBlocked:   Blocked,
	model.ResultCrashed:   Crashed,
	model.ResultClaimed:   Claimed,
	model.ResultOutOfTurn: OutOfTurn,
	model.ResultTask:      Task,
	model.ResultTransient: Transient,
	model.ResultConflict:  Conflict,
	model.ResultRejected:  Rejected,
	model.ResultStale:     Stale,
	model.ResultBusy:      DatabaseBusy,
	model.ResultFull:      DatabaseFull,

	model.ResultCommitUnknown: CommitUnknown,
}

// opAnswers are the kinds of the model's verdicts on operator actions.
var opAnswers = map[model.OpVerdict]AnswerKind{
	model.OpDone:            Done,
	model.OpNotBlocked:      RefusedState,
	model.OpAlreadySent:     RefusedState,
	model.OpLeased:          RefusedState,
	model.OpRetentionPassed: RefusedRetention,
	model.OpUnknownKey:      RefusedUnknown,
	model.OpInvalidRemoteID: RefusedInput,
}

// verdictAnswers are the kinds of the model's predictions for an approval.
var verdictAnswers = map[model.Verdict]AnswerKind{
	model.Recorded:    Approved,
	model.Repeated:    Approved,
	model.Conflicting: Conflict,
	model.Invalid:     Invalid,
	model.Crashed:     Crashed,
	model.Busy:        DatabaseBusy,
	model.Full:        DatabaseFull,

	model.CommitUnknown: CommitUnknown,
}

// errorAnswer is the kind of an error a step got: a database that was
// busy or full, a commit whose outcome is unknown, or another error.
func errorAnswer(err error) AnswerKind {
	switch {
	case errors.Is(err, system.ErrBusy):
		return DatabaseBusy
	case errors.Is(err, system.ErrFull):
		return DatabaseFull
	case errors.Is(err, system.ErrCommitUnknown):
		return CommitUnknown
	}
	return Error
}
