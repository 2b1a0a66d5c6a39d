package running

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/designs"
)

// Violation is a history check that broke: which, when, and what the
// history shows.
type Violation struct {
	Check  string // H1 to H7
	At     time.Duration
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("%s (%s) broke at %s: %s", v.Check, CheckName(v.Check), v.At, v.Detail)
}

// CheckName says in a few words what a history check demands.
func CheckName(check string) string {
	return map[string]string{
		"H1":  "at most one task per key",
		"H2":  "every task is an approved action, with its payload",
		"H3":  "an approval that committed is in the outbox at once",
		"H4":  "attempts cover every request, and the budget bounds them",
		"H5":  "a sent row names its key's task",
		"H6":  "nothing approved disappears",
		"H7":  "after the faults heal, every approval is delivered once or given up with a reason",
		"run": "the app boots, runs until it is stopped, and stops when told",
	}[check]
}

// approval is one approval the harness made, and what the app said.
type approval struct {
	At           time.Duration
	Case, Title  string
	Key, Payload string
	Committed    bool   // the app said it committed; else its outcome is unknown
	Err          string // what the app said, when it did not commit
}

// history is what a run recorded: the approvals, and the receiver's.
type history struct {
	approvals []approval
	budget    int
}

// check runs H1, H2, H4, H5 and H6 on the outbox's rows, read between
// the receiver's states before and after.
func (h *history) check(at time.Duration, before seen, rows map[string]designs.RunningRow, after seen) *Violation {
	broke := func(check, format string, args ...any) *Violation {
		return &Violation{Check: check, At: at, Detail: fmt.Sprintf(format, args...)}
	}
	perKey := map[string][]int64{}
	for _, t := range after.tasks {
		perKey[t.Key] = append(perKey[t.Key], t.ID)
	}
	for _, key := range sortedKeys(perKey) {
		if ids := perKey[key]; len(ids) > 1 {
			return broke("H1", "the receiver holds %d tasks for %s: %v", len(ids), key, ids)
		}
	}
	for _, t := range after.tasks {
		if !slices.ContainsFunc(h.approvals, func(a approval) bool { return a.Key == t.Key && a.Payload == t.Payload }) {
			what := "no approval holds its key"
			if slices.ContainsFunc(h.approvals, func(a approval) bool { return a.Key == t.Key }) {
				what = "its payload is not the one approved for its key"
			}
			return broke("H2", "task %d (key %s, payload %s): %s", t.ID, t.Key, t.Payload, what)
		}
	}
	for _, key := range sortedKeys(rows) {
		row := rows[key]
		switch n := before.requests[key]; {
		case row.Attempts >= 0 && n > row.Attempts:
			return broke("H4", "the receiver saw %d requests for %s, the outbox counts %d attempts", n, key, row.Attempts)
		case h.budget > 0 && after.requests[key] > h.budget:
			return broke("H4", "the receiver saw %d requests for %s, over the budget of %d", after.requests[key], key, h.budget)
		}
		if row.State == designs.RowSent {
			t, ok := after.taskOf(key)
			switch {
			case !ok:
				return broke("H5", "%s is shown sent with task %d, and the receiver holds no task for it", key, row.TaskID)
			case t.ID != row.TaskID:
				return broke("H5", "%s is shown sent with task %d, and the receiver's task for it is %d", key, row.TaskID, t.ID)
			}
		}
	}
	for _, key := range h.committedKeys() {
		if _, shown := rows[key]; !shown {
			if _, ok := after.taskOf(key); !ok {
				return broke("H6", "%s was approved (committed), the outbox no longer shows it, and the receiver holds no task for it", key)
			}
		}
	}
	return nil
}

// settled checks H7 on the rows read after the faults healed and the
// horizon passed: every approval the outbox shows, or that committed, is
// delivered (one task) or given up with a reason that the history
// bears out.
func (h *history) settled(at time.Duration, rows map[string]designs.RunningRow, s seen) *Violation {
	var open []string
	for _, key := range h.knownKeys(rows) {
		row, shown := rows[key]
		if !shown {
			continue // gone: H6 says whether its task exists
		}
		_, hasTask := s.taskOf(key)
		switch row.State {
		case designs.RowPending:
			open = append(open, key)
		case designs.RowSent, designs.RowDone:
			if !hasTask {
				return &Violation{Check: "H7", At: at, Detail: fmt.Sprintf("%s is shown %s, and the receiver holds no task for it", key, row.State)}
			}
		case designs.RowBlocked, designs.RowDiscarded:
			// Where the outbox does not count attempts, the requests
			// that reached the receiver are the least it made.
			budgetSpent := h.budget > 0 && (row.Attempts >= h.budget || row.Attempts < 0 && s.requests[key] >= h.budget)
			switch {
			case row.Reason == "":
				return &Violation{Check: "H7", At: at, Detail: fmt.Sprintf("%s is %s with no reason a person could act on", key, row.State)}
			case !s.refused[key] && !s.refused[h.payload(key)] && !budgetSpent:
				return &Violation{Check: "H7", At: at, Detail: fmt.Sprintf("%s is %s (%s) with %s, and the receiver refused none of its requests", key, row.State, row.Reason, spent(row.Attempts, s.requests[key], h.budget))}
			}
		default:
			return &Violation{Check: "H7", At: at, Detail: fmt.Sprintf("%s is in a state the spec does not know: %q", key, row.State)}
		}
	}
	if len(open) > 0 {
		return &Violation{Check: "H7", At: at, Detail: fmt.Sprintf("still pending when the horizon passed, every fault healed: %s", strings.Join(open, ", "))}
	}
	return nil
}

// payload is the payload approved for key, "" when none is known.
func (h *history) payload(key string) string {
	for _, a := range h.approvals {
		if a.Key == key {
			return a.Payload
		}
	}
	return ""
}

// spent says how much of its budget a key spent, as a check reads it.
func spent(attempts, requests, budget int) string {
	switch {
	case budget == 0:
		return "no budget to spend"
	case attempts < 0:
		return fmt.Sprintf("%d requests of its budget of %d", requests, budget)
	}
	return fmt.Sprintf("%d of its %d attempts", attempts, budget)
}

// committedKeys are the keys of the approvals that committed, sorted.
func (h *history) committedKeys() []string {
	var keys []string
	for _, a := range h.approvals {
		if a.Committed && !slices.Contains(keys, a.Key) {
			keys = append(keys, a.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// knownKeys are the keys that committed or that the outbox shows.
func (h *history) knownKeys(rows map[string]designs.RunningRow) []string {
	keys := h.committedKeys()
	for k := range rows {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// final reports whether every key that committed, or that the outbox
// shows, is final.
func (h *history) final(rows map[string]designs.RunningRow) bool {
	for _, key := range h.knownKeys(rows) {
		if row, ok := rows[key]; ok && !row.Final() {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
