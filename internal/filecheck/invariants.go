package filecheck

import (
	"fmt"
	"maps"
	"slices"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
)

// Input is what an invariant of the table looks at: files give the
// observation and the budget; the harness, after a step, the sends too.
type Input struct {
	// Observation is what the app database and the CRM show.
	Observation model.Observation
	// Budget is the most attempts a row may count.
	Budget int
	// Sends is how often the worker sent each key (nil on files).
	Sends map[string]int
}

// Invariant is one invariant of the spec that files show: its number,
// what it demands in plain words, whether it needs the CRM's tasks, and
// its check, which says what broke it, or "".
type Invariant struct {
	Number     int
	Name       string
	NeedsTasks bool
	Check      func(in Input) string
}

// Invariants are the spec's invariants that files show, in the order
// CheckFiles checks them. The harness's invariant table checks the same
// rows after every step, with the sends it counted.
var Invariants = []Invariant{
	{1, "at most one CRM task per action key", true, oneTaskPerKey},
	{2, "every approval has exactly one outbox row and every row its approval", false, oneRowPerApproval},
	{3, "a sent row names the task of its key and payload; other rows name none", true, sentRowsNameTheirTask},
	{4, "attempts stay within the budget and cover every send", false, attemptsCoverSends},
	{5, "no CRM task without an approval of the same key and payload, but those another system put there", true, tasksHaveApprovals},
	{9, "a row has at most one live lease; sent and blocked rows have none", false, finalRowsUnleased},
}

func approvalsByKey(o model.Observation) map[string]string {
	m := map[string]string{}
	for _, a := range o.Approvals {
		m[a.Key] = a.Payload
	}
	return m
}

// oneTaskPerKey is invariant 1.
func oneTaskPerKey(in Input) string {
	ids := map[string][]int64{}
	for _, t := range in.Observation.Tasks {
		ids[t.Key] = append(ids[t.Key], t.ID)
		if len(ids[t.Key]) > 1 {
			return fmt.Sprintf("%s has tasks %v", t.Key, ids[t.Key])
		}
	}
	return ""
}

// oneRowPerApproval is invariant 2.
func oneRowPerApproval(in Input) string {
	approved := approvalsByKey(in.Observation)
	rows := map[string]int{}
	for _, r := range in.Observation.Outbox {
		rows[r.Key]++
		if _, ok := approved[r.Key]; !ok {
			return fmt.Sprintf("outbox row %s has no approval", r.Key)
		}
	}
	for _, a := range in.Observation.Approvals {
		if rows[a.Key] != 1 {
			return fmt.Sprintf("approval %s has %d outbox rows", a.Key, rows[a.Key])
		}
	}
	return ""
}

// sentRowsNameTheirTask is invariant 3.
func sentRowsNameTheirTask(in Input) string {
	o := in.Observation
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

// attemptsCoverSends is invariant 4: no row has more attempts than the
// budget, and none fewer than the sends of its key (on files, which show
// no sends, only the first part).
func attemptsCoverSends(in Input) string {
	attempts := map[string]int{}
	for _, r := range in.Observation.Outbox {
		if r.Attempts > in.Budget {
			return fmt.Sprintf("%s has %d attempts, the budget is %d", r.Key, r.Attempts, in.Budget)
		}
		attempts[r.Key] = r.Attempts
	}
	for _, k := range slices.Sorted(maps.Keys(in.Sends)) {
		if in.Sends[k] > attempts[k] {
			return fmt.Sprintf("the worker sent %s %s, but its row counts %s", k, words.HowMany(in.Sends[k], "time"), words.HowMany(attempts[k], "attempt"))
		}
	}
	return ""
}

// tasksHaveApprovals is invariant 5.
func tasksHaveApprovals(in Input) string {
	approved := approvalsByKey(in.Observation)
	for _, t := range in.Observation.Tasks {
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

// finalRowsUnleased is invariant 9: the schema allows one lease per row;
// a sent or blocked row has none.
func finalRowsUnleased(in Input) string {
	for _, r := range in.Observation.Outbox {
		if r.State != model.Pending && (r.LeaseOwner != "" || r.LeaseUntil != 0) {
			return fmt.Sprintf("%s is %s and still leased to %q until %d", r.Key, r.State, r.LeaseOwner, r.LeaseUntil)
		}
	}
	return ""
}
