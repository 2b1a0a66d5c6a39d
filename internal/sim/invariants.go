package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/model"
)

// checkInput is everything an invariant looks at after a step.
type checkInput struct {
	// obs is what the system shows after the step.
	obs model.Observation
	// model is the model's state after the step.
	model model.State
	// sends is how often the worker sent each key.
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
// words, and its check, which says what broke it, or "".
type invariant struct {
	Number int
	Name   string
	Check  func(in checkInput) string
}

// invariants are the spec's invariants, in the order they are checked after
// every step: the first broken one is reported, the others the step broke
// with it. Invariant 6, that the system matches the model, is checked last:
// nearly every failure breaks it, and the others say more precisely what
// broke. Those that files show (1 to 5 and 9) are package filecheck's,
// which filecheck.CheckFiles checks on real files too.
var invariants = []invariant{
	onFiles(1),
	onFiles(2),
	onFiles(3),
	onFiles(4),
	onFiles(5),
	{7, "with faults off, the worker converges", converged},
	{8, "every recorded outcome comes from the holder of the row's current fence", settledUnderFence},
	onFiles(9),
	{10, "next_attempt_at after a transient failure is exactly what the model computed from the drawn jitter and the retry hint", backoffAsComputed},
	{11, "no claim that leads to a send is made at or after first_claimed_at + retention − send timeout", noLateClaim},
	{6, "the system matches the model", matchesModel},
}

// onFiles is invariant n of filecheck.Invariants, checked on what a step
// shows: the observation, the model's budget and the sends the worker
// made. It panics, when the package loads, for a number the table lacks.
func onFiles(n int) invariant {
	inv := filecheck.Numbered(n)
	return invariant{inv.Number, inv.Name, func(in checkInput) string {
		return inv.Check(filecheck.Input{Observation: in.obs, Budget: in.model.MaxAttempts, Sends: in.sends})
	}}
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
func checkInvariants(in checkInput) *violation.Violation {
	var v *violation.Violation
	for _, inv := range invariants {
		switch detail := inv.Check(in); {
		case detail == "":
		case v == nil:
			v = &violation.Violation{Invariant: inv.Number, Name: inv.Name, Detail: printable(detail)}
		default:
			v.Also = append(v.Also, inv.Number)
		}
	}
	return v
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
