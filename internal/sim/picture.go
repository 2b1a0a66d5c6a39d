package sim

import (
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
)

// Picture is what a report of a run draws of one step beyond its output:
// the model's side of the step, the fault that took effect, the virtual
// clock, the requests the worker sent and the backoffs it drew. Apply
// fills it in every Outcome; no invariant reads it.
type Picture struct {
	// Want is the model's prediction of the step's answer, and Predicted
	// its observation after the step, as the design shows it (Answer and
	// Observed are the system's).
	Want      Answer
	Predicted model.Observation
	// Fired is the fault that took effect in the step; "" for none.
	Fired faults.Kind
	// Now is the virtual clock after the step, in milliseconds since the
	// Unix epoch.
	Now int64
	// Requests is how many requests the worker sent to the receiver
	// during the step, duplicates included.
	Requests int
	// BackoffAfter is the attempt whose transient failure the step's
	// backoffs were drawn for (0 for none), and Ceilings the ceilings the
	// system drew them within, in milliseconds.
	BackoffAfter int
	Ceilings     []int64
}

// picture is the Picture of a step whose handler reported r, after which
// the model predicts predicted; sentBefore is how many requests the
// worker had sent before the step.
func (e *Env) picture(r stepResult, predicted model.Observation, sentBefore int) Picture {
	p := Picture{Want: r.want, Predicted: predicted, Fired: r.fired, Now: e.now, Requests: e.sendCount() - sentBefore}
	if r.backoffAfter != nil && len(e.ceilings) > 0 {
		p.BackoffAfter = r.backoffAfter.attempt
		for _, c := range e.ceilings {
			p.Ceilings = append(p.Ceilings, c.Milliseconds())
		}
	}
	return p
}

// BackoffCeiling is an attempt of a row and a ceiling a backoff after its
// transient failure was drawn within: what Stats.Backoffs counts.
type BackoffCeiling struct {
	Attempt int
	Ceiling time.Duration
}

// countAttempts counts, into st, every attempt a row made between before
// and after, by its number, and every backoff drawn after attempt (0 for
// none) within ceilings. The caller holds st.mu.
func (st *Stats) countAttempts(before, after model.Observation, attempt int, ceilings []time.Duration) {
	was := map[string]int{}
	for _, row := range before.Outbox {
		was[row.Key] = row.Attempts
	}
	for _, row := range after.Outbox {
		for n := was[row.Key] + 1; n <= row.Attempts; n++ {
			st.Attempts[n]++
		}
	}
	if attempt > 0 {
		for _, c := range ceilings {
			st.Backoffs[BackoffCeiling{attempt, c}]++
		}
	}
}
