package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// operator is who acts in a scenario's operator steps, and why.
var operator = model.Operator{Actor: "operator", Reason: "scenario"}

// audited returns, for invariant 6, how the system's audit log differs
// from the model's after an operator step; "" when they agree.
func (e *Env) audited(ctx context.Context) (string, error) {
	log, err := e.operator().Audit(ctx)
	if err != nil {
		return "", fmt.Errorf("handoff: reading the audit log: %w", err)
	}
	got := make([]model.AuditEntry, 0, len(log))
	for _, a := range log {
		got = append(got, model.AuditEntry{At: filecheck.Millis(a.At), Actor: a.Actor, Action: string(a.Action), Key: a.Key, Reason: a.Reason})
	}
	want := append([]model.AuditEntry{}, e.model.Audit...)
	if !sameList(want, got) {
		return "the audit log differs from the model's (-model +system):\n" + textdiff.Values(want, got, diffContext), nil
	}
	return "", nil
}

// actedOn starts invariant 4's count of key's sends afresh after a
// person's action on it: the sends it counts are those of claims made
// since, whose fence is above the one the action left.
func (e *Env) actedOn(key string, got Answer) {
	if got.Kind != Done {
		return
	}
	delete(e.sends, key)
	for _, r := range e.model.Outbox {
		if r.Key == key {
			e.actedFence[key] = r.Fence
		}
	}
}

// caseKey reads the action key of a step's case= argument.
func caseKey(s Step) (string, error) {
	c, ok := s.Arg("case")
	if !ok || c == "" {
		return "", fmt.Errorf("%w: %s needs case=ID", ErrScenario, s.Directive)
	}
	return system.KeyPrefix + c, nil
}

// operated says what an operator action did, and the system's answer.
func (e *Env) operated(what, key string, err error) stepResult {
	r := stepResult{key: key}
	switch {
	case err == nil:
		r.line, r.got = what+": done", Answer{Kind: Done, Key: key}
	case errors.Is(err, system.ErrWrongState):
		r.line, r.got = what+": refused, "+system.OneLine(err.Error()), Answer{Kind: RefusedState, Key: key}
	case errors.Is(err, system.ErrRetention):
		r.line, r.got = what+": refused, "+system.OneLine(err.Error()), Answer{Kind: RefusedRetention, Key: key}
	case errors.Is(err, system.ErrNotFound):
		r.line, r.got = what+": refused, "+system.OneLine(err.Error()), Answer{Kind: RefusedUnknown, Key: key}
	case errors.Is(err, system.ErrInvalidInput):
		r.line, r.got = what+": refused, "+system.OneLine(err.Error()), Answer{Kind: RefusedInput, Key: key}
	default:
		r.line, r.got = what+": error: "+err.Error(), Answer{Kind: Error, Key: key}
	}
	return r
}

// operator is the default worker's handle as a person uses it: operator
// steps run only on a design with Operator (see supported, CheckApp).
func (e *Env) operator() designs.Operator { return e.app.(designs.Operator) }
