package filecheck

import (
	"cmp"
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
	// Sends is how often each key was sent (nil on files): by the step
	// mode's worker, or as requests that left a running app.
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
// rows after every step, with the sends it counted, and the running
// mode's history checks that restate invariants 1, 3, 4 and 5 check them
// on a running outbox's rows and its receiver's tasks.
var Invariants = []Invariant{
	{1, "at most one CRM task per action key", true, oneTaskPerKey},
	{2, "every approval has exactly one outbox row and every row its approval", false, oneRowPerApproval},
	{3, "a sent row names the task of its key and payload; other rows name none", true, sentRowsNameTheirTask},
	{4, "attempts stay within the budget and cover every send", false, func(in Input) string {
		return cmp.Or(attemptsWithinBudget(in), AttemptsCoverSends(in))
	}},
	{5, "no CRM task without an approval of the same key and payload, but those another system put there", true, tasksHaveApprovals},
	{9, "a row has at most one live lease; sent and blocked rows have none", false, finalRowsUnleased},
}

// Numbered is invariant n of the table. It panics for a number the table
// lacks: its callers name the invariants they check in their code.
func Numbered(n int) Invariant {
	i := slices.IndexFunc(Invariants, func(inv Invariant) bool { return inv.Number == n })
	if i < 0 {
		panic(fmt.Sprintf("filecheck: Invariants has no invariant %d", n))
	}
	return Invariants[i]
}

// approvedKeys are the keys some approval holds.
func approvedKeys(o model.Observation) map[string]bool {
	m := map[string]bool{}
	for _, a := range o.Approvals {
		m[a.Key] = true
	}
	return m
}

// approves reports whether an approval of key holds payload. Files show
// one approval a key; a running history may show a key approved again.
func approves(o model.Observation, key, payload string) bool {
	return slices.ContainsFunc(o.Approvals, func(a model.Approval) bool { return a.Key == key && a.Payload == payload })
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
	approved := approvedKeys(in.Observation)
	rows := map[string]int{}
	for _, r := range in.Observation.Outbox {
		rows[r.Key]++
		if !approved[r.Key] {
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
		case !approves(o, r.Key, o.Tasks[i].Payload):
			return fmt.Sprintf("%s is sent as task %d, which holds other content than the approval", r.Key, r.RemoteID)
		}
	}
	return ""
}

// attemptsWithinBudget is invariant 4's first half: no row has more
// attempts than the budget.
func attemptsWithinBudget(in Input) string {
	for _, r := range in.Observation.Outbox {
		if r.Attempts > in.Budget {
			return fmt.Sprintf("%s has %d attempts, the budget is %d", r.Key, r.Attempts, in.Budget)
		}
	}
	return ""
}

// AttemptsCoverSends is invariant 4's second half: no row has fewer
// attempts than the sends of its key (files show no sends). The running
// mode's H4 checks it on an outbox that counts before each send, and
// bounds the requests by the budget itself, as the design counts them.
func AttemptsCoverSends(in Input) string {
	attempts := map[string]int{}
	for _, r := range in.Observation.Outbox {
		attempts[r.Key] = r.Attempts
	}
	for _, k := range slices.Sorted(maps.Keys(in.Sends)) {
		if in.Sends[k] > attempts[k] {
			return fmt.Sprintf("%s was sent %s, but its row counts %s", k, words.HowMany(in.Sends[k], "time"), words.HowMany(attempts[k], "attempt"))
		}
	}
	return ""
}

// tasksHaveApprovals is invariant 5.
func tasksHaveApprovals(in Input) string {
	o := in.Observation
	approved := approvedKeys(o)
	for _, t := range o.Tasks {
		if t.Payload == faults.ForeignPayload {
			continue // put there by another system, on purpose
		}
		switch {
		case !approved[t.Key]:
			return fmt.Sprintf("task %d has key %s, which no approval has", t.ID, t.Key)
		case !approves(o, t.Key, t.Payload):
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
