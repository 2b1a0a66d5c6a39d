package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
)

// scope says what an invariant needs to be checked: a simulation (the
// model, the sends the worker made, the step's answers), or only files.
type scope int

const (
	// simulationOnly invariants need the model or the step: CheckFiles
	// cannot check them.
	simulationOnly scope = iota
	// needsCRM invariants need the app database and the CRM's tasks.
	needsCRM
	// appOnly invariants need only the app database.
	appOnly
)

// checkInput is everything an invariant looks at after a step.
type checkInput struct {
	// obs is what the system shows after the step.
	obs model.Observation
	// model is the model's state after the step; on files only its
	// MaxAttempts is known.
	model model.State
	// sends is how often the worker sent each key (nil on files).
	sends map[string]int
	// got and want are the system's answer to the step and the model's
	// prediction.
	got, want Answer
	// converging says the step claims convergence: faults off, the worker
	// run until idle.
	converging bool
	// before is what the system showed before the step.
	before model.Observation
	// claimedForSend is the key of a claim that leads to a send (11).
	claimedForSend string
	// backoffAfter is the attempt a settle or delivery drew its backoff
	// for, and ceilings the ceilings the system drew backoffs within
	// during the step (10).
	backoffAfter *attemptOf
	ceilings     []time.Duration
	// settling says the step is a named worker's settle that answered,
	// and settled is the row and fence of one that wrote a final state (8).
	settling bool
	settled  *fenced
	// auditDiff is how the audit log differs from the model's.
	auditDiff string
}

// invariant is one invariant of the spec: its number, what it demands in plain
// words, what it needs, and its check, which says what broke it, or "".
type invariant struct {
	Number int
	Name   string
	Scope  scope
	Check  func(in checkInput) string
}

// invariants are the spec's invariants, in the order they are checked after
// every step: the first broken one is reported, the others the step broke
// with it. Invariant 6, that the system matches the model, is checked last:
// nearly every failure breaks it, and the others say more precisely what
// broke. CheckFiles checks those that files show.
var invariants = []invariant{
	{1, "at most one CRM task per action key", needsCRM, oneTaskPerKey},
	{2, "every approval has exactly one outbox row and every row its approval", appOnly, oneRowPerApproval},
	{3, "a sent row names the task of its key and payload; other rows name none", needsCRM, sentRowsNameTheirTask},
	{4, "attempts stay within the budget and cover every send", appOnly, attemptsCoverSends},
	{5, "no CRM task without an approval of the same key and payload, but those another system put there", needsCRM, tasksHaveApprovals},
	{7, "with faults off, the worker converges", simulationOnly, converged},
	{8, "every recorded outcome comes from the holder of the row's current fence", simulationOnly, settledUnderFence},
	{9, "a row has at most one live lease; sent and blocked rows have none", appOnly, finalRowsUnleased},
	{10, "next_attempt_at after a transient failure is exactly what the model computed from the drawn jitter and the retry hint", simulationOnly, backoffAsComputed},
	{11, "no claim that leads to a send is made at or after first_claimed_at + retention − send timeout", simulationOnly, noLateClaim},
	{6, "the system matches the model", simulationOnly, matchesModel},
}

// settledUnderFence is invariant 8: a settle writes only while its claim
// is the row's latest, which the harness knows from the claims and
// operator actions it saw (the model predicts the settle stale when it is
// not); and on a design that shows fences, a settle that wrote a final
// state (sent, blocked) wrote it under its claim's fence, which the row
// still carries (nothing but a claim, a release or an operator moves a
// fence, and none touches a final row).
func settledUnderFence(in checkInput) string {
	if in.settling && in.want.Kind == Stale && (in.got.Kind == Sent || in.got.Kind == Pending || in.got.Kind == Blocked) {
		return fmt.Sprintf("%s's settle wrote (%s), but its claim was no longer the row's: another worker claimed the row after the lease ran out, a person acted, or the worker started again",
			in.got.Key, in.got.Kind)
	}
	if in.settled == nil {
		return ""
	}
	for _, r := range in.obs.Outbox {
		if r.Key == in.settled.key && r.Fence != in.settled.fence {
			return fmt.Sprintf("%s was settled under fence %d, but the row carries fence %d", r.Key, in.settled.fence, r.Fence)
		}
	}
	return ""
}

// finalRowsUnleased is invariant 9: the schema allows one lease per row;
// a sent or blocked row has none.
func finalRowsUnleased(in checkInput) string {
	for _, r := range in.obs.Outbox {
		if r.State != model.Pending && (r.LeaseOwner != "" || r.LeaseUntil != 0) {
			return fmt.Sprintf("%s is %s and still leased to %q until %d", r.Key, r.State, r.LeaseOwner, r.LeaseUntil)
		}
	}
	return ""
}

// backoffAsComputed is invariant 10, after a settle or a delivery whose
// send failed: the row's next_attempt_at is the model's, and every
// backoff the system drew in the step was drawn within the model's
// ceiling for the attempt, min(cap, base·2^(attempt−1)). The harness's
// jitter source returns the drawn jitter whatever ceiling it is given, so
// that next_attempt_at alone would not show a ceiling too high. (A wrong
// next_attempt_at breaks invariant 6 too, which is checked after it.)
func backoffAsComputed(in checkInput) string {
	a := in.backoffAfter
	if a == nil {
		return ""
	}
	want := time.Duration(in.model.JitterCeiling(a.attempt)) * time.Millisecond
	for _, c := range in.ceilings {
		if c != want {
			return fmt.Sprintf("%s's backoff after attempt %d was drawn within %v, but the ceiling is %v", a.key, a.attempt, c, want)
		}
	}
	for _, got := range in.obs.Outbox {
		for _, w := range in.model.Outbox {
			if got.Key == a.key && w.Key == a.key && got.State == model.Pending && w.State == model.Pending && got.NextAttemptAt != w.NextAttemptAt {
				return fmt.Sprintf("%s's next attempt is at %d, but the model computed %d from the drawn jitter and the retry hint", a.key, got.NextAttemptAt, w.NextAttemptAt)
			}
		}
	}
	return ""
}

// noLateClaim is invariant 11: a claim that leads to a send comes before
// first_claimed_at + retention − send timeout, as the row stood before
// the step.
func noLateClaim(in checkInput) string {
	if in.claimedForSend == "" {
		return ""
	}
	for _, row := range in.before.Outbox {
		if row.Key != in.claimedForSend {
			continue
		}
		if at, ok := in.model.RetentionDeadline(row); ok && in.model.Now >= at {
			return fmt.Sprintf("%s was claimed for a send at %d, at or after its retention deadline %d", row.Key, in.model.Now, at)
		}
	}
	return ""
}

// Violation is a broken invariant: its number in the spec and what broke it,
// and the other invariants the same step broke.
type Violation struct {
	Invariant int
	Detail    string
	// Also are the numbers of the other invariants the step broke, in the
	// order they are checked. One step can break several (a second task
	// for a key breaks invariant 1, and invariant 6 with it), and which is
	// reported is the order's choice, not the design's.
	Also []int
}

// Breaks reports whether the step broke invariant n, first or also.
func (v Violation) Breaks(n int) bool { return v.Invariant == n || slices.Contains(v.Also, n) }

// AsDocumented reports whether v is how design d's catalog entry says it
// is caught: d.Invariant broken first, or d.OrInvariant broken first with
// d.Invariant at the same step.
func (v Violation) AsDocumented(d designs.Design) bool {
	return v.Invariant == d.Invariant || d.OrInvariant != 0 && v.Invariant == d.OrInvariant && v.Breaks(d.Invariant)
}

// Name says what the broken invariant demands.
func (v Violation) Name() string {
	for _, inv := range invariants {
		if inv.Number == v.Invariant {
			return inv.Name
		}
	}
	return ""
}

// String is the line a scenario shows for v.
func (v Violation) String() string {
	return fmt.Sprintf("violation: invariant %d (%s): %s", v.Invariant, v.Name(), v.Detail)
}

// InvariantNames says, for each invariant of the table by its number,
// what it demands.
func InvariantNames() map[int]string {
	names := map[int]string{}
	for _, inv := range invariants {
		names[inv.Number] = inv.Name
	}
	return names
}

// checkInvariants returns the first of invariants that in breaks, with
// the others it breaks, or nil.
func checkInvariants(in checkInput) *Violation {
	var v *Violation
	for _, inv := range invariants {
		switch detail := inv.Check(in); {
		case detail == "":
		case v == nil:
			v = &Violation{Invariant: inv.Number, Detail: printable(detail)}
		default:
			v.Also = append(v.Also, inv.Number)
		}
	}
	return v
}

func approvalsByKey(o model.Observation) map[string]string {
	m := map[string]string{}
	for _, a := range o.Approvals {
		m[a.Key] = a.Payload
	}
	return m
}

// oneTaskPerKey is invariant 1.
func oneTaskPerKey(in checkInput) string {
	ids := map[string][]int64{}
	for _, t := range in.obs.Tasks {
		ids[t.Key] = append(ids[t.Key], t.ID)
		if len(ids[t.Key]) > 1 {
			return fmt.Sprintf("%s has tasks %v", t.Key, ids[t.Key])
		}
	}
	return ""
}

// oneRowPerApproval is invariant 2.
func oneRowPerApproval(in checkInput) string {
	approved := approvalsByKey(in.obs)
	rows := map[string]int{}
	for _, r := range in.obs.Outbox {
		rows[r.Key]++
		if _, ok := approved[r.Key]; !ok {
			return fmt.Sprintf("outbox row %s has no approval", r.Key)
		}
	}
	for _, a := range in.obs.Approvals {
		if rows[a.Key] != 1 {
			return fmt.Sprintf("approval %s has %d outbox rows", a.Key, rows[a.Key])
		}
	}
	return ""
}

// sentRowsNameTheirTask is invariant 3.
func sentRowsNameTheirTask(in checkInput) string {
	o := in.obs
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
func attemptsCoverSends(in checkInput) string {
	attempts := map[string]int{}
	for _, r := range in.obs.Outbox {
		if r.Attempts > in.model.MaxAttempts {
			return fmt.Sprintf("%s has %d attempts, the budget is %d", r.Key, r.Attempts, in.model.MaxAttempts)
		}
		attempts[r.Key] = r.Attempts
	}
	for _, k := range slices.Sorted(maps.Keys(in.sends)) {
		if in.sends[k] > attempts[k] {
			return fmt.Sprintf("the worker sent %s %s, but its row counts %s", k, words.HowMany(in.sends[k], "time"), words.HowMany(attempts[k], "attempt"))
		}
	}
	return ""
}

// tasksHaveApprovals is invariant 5.
func tasksHaveApprovals(in checkInput) string {
	approved := approvalsByKey(in.obs)
	for _, t := range in.obs.Tasks {
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
// are what the model predicts. A worker still busy at the end of a
// converge step is invariant 7's to report.
func matchesModel(in checkInput) string {
	if in.got.Kind == Busy {
		return ""
	}
	if in.got != in.want {
		return fmt.Sprintf("the system answered %q, the model predicted %q", in.got.String(), in.want.String()) + wantSentinel(in.got, in.want)
	}
	if in.auditDiff != "" {
		return in.auditDiff
	}
	if sameObservation(in.model.Observation, in.obs) {
		return ""
	}
	got, want := facts(in.obs), facts(in.model.Observation)
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
	if len(extra)+len(missing) == 0 {
		return "the system's leases, fences or times differ from the model's (the diff below says where)"
	}
	return fmt.Sprintf("the system has [%s] where the model predicts [%s]", strings.Join(extra, "; "), strings.Join(missing, "; "))
}

// converged is invariant 7, after a step that claims convergence: the
// worker went idle, and left no row pending and every sent key with
// exactly one task.
func converged(in checkInput) string {
	if !in.converging {
		return ""
	}
	if in.got.Kind == Busy {
		return fmt.Sprintf("the worker was still not idle after %d deliveries without faults", in.got.N)
	}
	tasks := map[string]int{}
	for _, t := range in.obs.Tasks {
		tasks[t.Key]++
	}
	for _, r := range in.obs.Outbox {
		switch {
		case r.State == model.Pending:
			return fmt.Sprintf("%s is still pending after the worker went idle", r.Key)
		case r.State == model.Sent && tasks[r.Key] != 1:
			return fmt.Sprintf("%s is sent but the CRM holds %d tasks for it", r.Key, tasks[r.Key])
		}
	}
	return ""
}

// sameObservation reports whether a and b hold the same facts, as
// cmp.Equal would (a nil list differs from an empty one), without its
// reflection: it runs after every step, and go-cmp is left to say how two
// observations differ when they do.
func sameObservation(a, b model.Observation) bool {
	return sameList(a.Approvals, b.Approvals) && sameList(a.Outbox, b.Outbox) && sameList(a.Tasks, b.Tasks)
}

// sameList reports whether a and b are both nil, or both not nil with
// equal elements.
func sameList[E comparable](a, b []E) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}
