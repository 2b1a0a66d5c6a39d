package handoff

import (
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
// limit) or Error; a restart Restarted; a design line Designed.
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
)

// Answer is what the system answered a step, or what the model predicted
// it would: comparable with ==.
type Answer struct {
	Kind AnswerKind
	// Key is the action key the answer names, if any.
	Key string
	// N is how many deliveries a converge step took (Idle) or made before
	// it gave up (Busy).
	N int
}

// String prints a as invariant 6 quotes it: "sent KEY", "idle after 3".
func (a Answer) String() string {
	s := string(a.Kind)
	if a.Key != "" {
		s += " " + a.Key
	}
	if a.Kind == Idle && a.N > 0 {
		s += fmt.Sprintf(" after %d", a.N)
	}
	return s
}

// workerAnswers are the kinds of the worker's results.
var workerAnswers = map[system.Result]AnswerKind{
	system.Idle:          Idle,
	system.ResultSent:    Sent,
	system.ResultPending: Pending,
	system.ResultBlocked: Blocked,
}

// resultAnswers are the kinds of the model's predictions for a delivery.
var resultAnswers = map[model.Result]AnswerKind{
	model.Idle:          Idle,
	model.ResultSent:    Sent,
	model.ResultPending: Pending,
	model.ResultBlocked: Blocked,
	model.ResultCrashed: Crashed,
}

// verdictAnswers are the kinds of the model's predictions for an approval.
var verdictAnswers = map[model.Verdict]AnswerKind{
	model.Recorded:    Approved,
	model.Repeated:    Approved,
	model.Conflicting: Conflict,
	model.Invalid:     Invalid,
	model.Crashed:     Crashed,
}
