package handoff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// invariantNames says in plain words what each invariant of SPEC demands.
var invariantNames = map[int]string{
	1: "at most one CRM task per action key",
	2: "every approval has exactly one outbox row and every row its approval",
	3: "a sent row names the task of its key and payload; other rows name none",
	4: "attempts stay within the budget and cover every send",
	5: "no CRM task without an approval of the same key and payload, but those another system put there",
	6: "the system matches the model",
	7: "with faults off, the worker converges",
}

// Violation is a broken invariant: its number in SPEC and what broke it.
type Violation struct {
	Invariant int
	Detail    string
}

// Name says what the broken invariant demands.
func (v Violation) Name() string { return invariantNames[v.Invariant] }

// String is the line a scenario shows for v.
func (v Violation) String() string {
	return fmt.Sprintf("violation: invariant %d (%s): %s", v.Invariant, v.Name(), v.Detail)
}

// check returns the first invariant obs breaks after a step that produced
// r, in SPEC's order, or nil. agrees says whether obs equals the model's
// observation, which the caller has already compared.
func (e *Env) check(obs model.Observation, r stepResult, agrees bool) *Violation {
	checks := []func(model.Observation) string{
		oneTaskPerKey,
		oneRowPerApproval,
		sentRowsNameTheirTask,
		e.attemptsCoverSends,
		tasksHaveApprovals,
		func(obs model.Observation) string { return e.matchesModel(obs, r, agrees) },
	}
	if r.converged {
		checks = append(checks, converged)
	}
	for i, c := range checks {
		if detail := c(obs); detail != "" {
			return &Violation{Invariant: i + 1, Detail: detail}
		}
	}
	return nil
}

func approvalsByKey(o model.Observation) map[string]string {
	m := map[string]string{}
	for _, a := range o.Approvals {
		m[a.Key] = a.Payload
	}
	return m
}

// oneTaskPerKey is invariant 1.
func oneTaskPerKey(o model.Observation) string {
	ids := map[string][]int64{}
	for _, t := range o.Tasks {
		ids[t.Key] = append(ids[t.Key], t.ID)
		if len(ids[t.Key]) > 1 {
			return fmt.Sprintf("%s has tasks %v", t.Key, ids[t.Key])
		}
	}
	return ""
}

// oneRowPerApproval is invariant 2.
func oneRowPerApproval(o model.Observation) string {
	approved := approvalsByKey(o)
	rows := map[string]int{}
	for _, r := range o.Outbox {
		rows[r.Key]++
		if _, ok := approved[r.Key]; !ok {
			return fmt.Sprintf("outbox row %s has no approval", r.Key)
		}
	}
	for _, a := range o.Approvals {
		if rows[a.Key] != 1 {
			return fmt.Sprintf("approval %s has %d outbox rows", a.Key, rows[a.Key])
		}
	}
	return ""
}

// sentRowsNameTheirTask is invariant 3.
func sentRowsNameTheirTask(o model.Observation) string {
	approved := approvalsByKey(o)
	for _, r := range o.Outbox {
		if r.State != model.Sent {
			if r.RemoteID != 0 {
				return fmt.Sprintf("%s is %s but names task %d", r.Key, r.State, r.RemoteID)
			}
			continue
		}
		i := slices.IndexFunc(o.Tasks, func(t model.Task) bool { return t.ID == r.RemoteID })
		switch {
		case i < 0:
			return fmt.Sprintf("%s is sent as task %d, but the CRM has no task %d", r.Key, r.RemoteID, r.RemoteID)
		case o.Tasks[i].Key != r.Key:
			return fmt.Sprintf("%s is sent as task %d, which belongs to %s", r.Key, r.RemoteID, o.Tasks[i].Key)
		case o.Tasks[i].Payload != approved[r.Key]:
			return fmt.Sprintf("%s is sent as task %d, which holds other content than the approval", r.Key, r.RemoteID)
		}
	}
	return ""
}

// attemptsCoverSends is invariant 4.
func (e *Env) attemptsCoverSends(o model.Observation) string {
	if detail := attemptsWithin(o, e.model.MaxAttempts); detail != "" {
		return detail
	}
	attempts := map[string]int{}
	for _, r := range o.Outbox {
		attempts[r.Key] = r.Attempts
	}
	keys := make([]string, 0, len(e.sends))
	for k := range e.sends {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if e.sends[k] > attempts[k] {
			return fmt.Sprintf("the worker sent %s %d time(s), but its row counts %d attempt(s)", k, e.sends[k], attempts[k])
		}
	}
	return ""
}

// tasksHaveApprovals is invariant 5.
func tasksHaveApprovals(o model.Observation) string {
	approved := approvalsByKey(o)
	for _, t := range o.Tasks {
		if t.Payload == faults.ForeignPayload {
			continue // put there by another system, on purpose
		}
		switch p, ok := approved[t.Key]; {
		case !ok:
			return fmt.Sprintf("task %d has key %s, which no approval has", t.ID, t.Key)
		case p != t.Payload:
			return fmt.Sprintf("task %d for %s holds other content than the approval", t.ID, t.Key)
		}
	}
	return ""
}

// matchesModel is invariant 6: the step's answer and the whole observation
// are what the model predicts.
func (e *Env) matchesModel(o model.Observation, r stepResult, agrees bool) string {
	if r.got != r.want {
		return fmt.Sprintf("the system answered %q, the model predicted %q", r.got.String(), r.want.String())
	}
	if agrees {
		return ""
	}
	got, want := facts(o), facts(e.model.Observation)
	var extra, missing []string
	for _, f := range got {
		if !slices.Contains(want, f) {
			extra = append(extra, f)
		}
	}
	for _, f := range want {
		if !slices.Contains(got, f) {
			missing = append(missing, f)
		}
	}
	return fmt.Sprintf("the system has [%s] where the model predicts [%s]", strings.Join(extra, "; "), strings.Join(missing, "; "))
}

// converged is invariant 7, after the worker went idle without faults.
func converged(o model.Observation) string {
	tasks := map[string]int{}
	for _, t := range o.Tasks {
		tasks[t.Key]++
	}
	for _, r := range o.Outbox {
		switch {
		case r.State == model.Pending:
			return fmt.Sprintf("%s is still pending after the worker went idle", r.Key)
		case r.State == model.Sent && tasks[r.Key] != 1:
			return fmt.Sprintf("%s is sent but the CRM holds %d tasks for it", r.Key, tasks[r.Key])
		}
	}
	return ""
}
