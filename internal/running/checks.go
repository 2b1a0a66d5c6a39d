package running

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/model"
)

// violated is the violation of check (H1 to H8, or run) at virtual time
// at, with what the history shows.
func violated(check string, at time.Duration, detail string) *violation.Violation {
	return &violation.Violation{Check: check, Name: CheckName(check), At: at, Detail: detail}
}

// CheckName says in a few words what a history check demands: one that
// restates an invariant says it in the invariant's words, and names it.
func CheckName(check string) string {
	if inv, ok := restated[check]; ok {
		return fmt.Sprintf("invariant %d: %s", inv.Number, inv.Name)
	}
	return map[string]string{
		"H3":  "an approval that committed is in the outbox at once, under a key of its own",
		"H6":  "nothing approved disappears",
		"H7":  "after the faults heal, every approval is delivered once or given up with a reason",
		"H8":  "no request after a refusal for good, and no key held behind a stuck one",
		"run": "the app boots, runs until it is stopped, and stops when told",
	}[check]
}

// restated is the invariant that files show which each of H1, H2, H4 and
// H5 restates for a running outbox. H1, H2 and H5 are their invariant's
// own check on the history in its terms (history.observation); H4 is
// invariant 4's second half, that attempts cover the sends, on an outbox
// that counts before each send, and bounds the requests by the budget
// as the design counts them (history.counted).
var restated = map[string]filecheck.Invariant{
	"H1": filecheck.Numbered(1),
	"H2": filecheck.Numbered(5),
	"H4": filecheck.Numbered(4),
	"H5": filecheck.Numbered(3),
}

// approval is one approval the harness made, and what the app said.
type approval struct {
	At           time.Duration
	Case, Title  string
	Key, Payload string
	Committed    bool   // the app said it committed; else its outcome is unknown
	Err          string // what the app said, when it did not commit
}

// history is what a run recorded: the approvals, the faults that struck
// each process, and what the design declares.
type history struct {
	approvals []approval
	faults    []struck
	budget    int
	counts    designs.Counting
	stuck     map[string]KeyFault // the lasting fault of each case
	// lease is how long a worker keeps a job it took, for a design that
	// holds it by a lease or a visibility timeout; 0 when a lock holds it
	// for as long as its worker runs.
	lease time.Duration
}

// struck is a fault that cut a process's connections at one instant: a
// crash, a reset or a lost COMMIT reply.
type struck struct {
	At      time.Duration
	Replica int
}

// check runs H1, H2, H4, H5, H6 and H8's refusals on the outbox's rows,
// read between the receiver's states before and after.
func (h *history) check(at time.Duration, before seen, rows map[string]designs.RunningRow, after seen) *violation.Violation {
	in := filecheck.Input{Observation: h.observation(rows, after.tasks)}
	for _, c := range []struct{ check, detail string }{
		{"H1", restated["H1"].Check(in)},
		{"H2", restated["H2"].Check(in)},
		{"H4", h.counted(in.Observation, rows, before, after)},
		{"H5", restated["H5"].Check(in)},
		{"H6", h.lost(rows, after)},
		{"H8", h.afterRefusal(after.requests)},
	} {
		if c.detail != "" {
			return violated(c.check, at, c.detail)
		}
	}
	return nil
}

// observation is the history in the terms of the invariants that files
// show: every approval made (committed, or its outcome unknown), the
// rows the outbox shows, by key, and the receiver's tasks.
func (h *history) observation(rows map[string]designs.RunningRow, tasks []Task) model.Observation {
	var o model.Observation
	for _, a := range h.approvals {
		o.Approvals = append(o.Approvals, model.Approval{Key: a.Key, Payload: a.Payload})
	}
	for _, key := range sortedKeys(rows) {
		r := rows[key]
		o.Outbox = append(o.Outbox, model.Row{Key: key, State: string(r.State), Attempts: r.Attempts, RemoteID: r.TaskID})
	}
	for _, t := range tasks {
		o.Tasks = append(o.Tasks, model.Task{ID: t.ID, Key: t.Key, Payload: t.Payload})
	}
	return o
}

// counted is H4 as the design declares its count: "" when it holds, else
// what broke. Counted before each send, the attempts shown (where they
// are) cover the requests that left before the read (invariant 4, the
// requests as its sends), and no more requests than the budget leave;
// counted after a failed send, no more failures than the budget come
// back.
func (h *history) counted(o model.Observation, rows map[string]designs.RunningRow, before, after seen) string {
	switch h.counts {
	case designs.CountsNothing:
		return ""
	case designs.CountsErrors:
		for _, key := range h.knownKeys(rows) {
			if n := after.failed(key); h.budget > 0 && n > h.budget {
				return fmt.Sprintf("the receiver answered %d failures for %s (an outage's included), over the budget of %d", n, key, h.budget)
			}
		}
		return ""
	}
	sends := map[string]int{}
	for key, row := range rows {
		if row.Attempts >= 0 {
			sends[key] = before.made(key)
		}
	}
	if v := filecheck.AttemptsCoverSends(filecheck.Input{Observation: o, Sends: sends}); v != "" {
		return v
	}
	for _, key := range h.knownKeys(rows) { // a key the outbox no longer shows, too
		if n := after.made(key); h.budget > 0 && n > h.budget {
			return fmt.Sprintf("%d requests for %s left the app (%d reached the receiver), over the budget of %d", n, key, after.reached(key), h.budget)
		}
	}
	return ""
}

// lost is H6: "" when every key approved (committed) that the outbox no
// longer shows has its task at the receiver, else the first that has
// none.
func (h *history) lost(rows map[string]designs.RunningRow, after seen) string {
	for _, key := range h.committedKeys() {
		if _, shown := rows[key]; !shown {
			if _, ok := after.taskOf(key); !ok {
				return fmt.Sprintf("%s was approved (committed), the outbox no longer shows it, and the receiver holds no task for it", key)
			}
		}
	}
	return ""
}

// afterRefusal is H8's first half: "" when no request followed a
// refusal for good of its key, else the first that did. A refusal
// counts once it answered the key's newest request within the lease (no
// other request for the key was sent while it was under way, and it
// came no later than the lease after its request: an answer to a paused
// worker whose job another took, or may have taken, is news its outbox
// may not hear), and once its process lived on for a second after it (a
// crash, a reset or a lost COMMIT reply at that moment may have lost
// what the outbox wrote of it).
func (h *history) afterRefusal(requests []Request) string {
	for _, q := range requests {
		if !q.refusal() || h.cut(q.Replica, q.Done) || h.lease > 0 && q.Done-q.At > h.lease {
			continue
		}
		overlapped := slices.ContainsFunc(requests, func(o Request) bool {
			return o.N != q.N && o.id() == q.id() && o.At > q.At && o.At <= q.Done
		})
		if overlapped {
			continue
		}
		for _, o := range requests {
			if o.id() == q.id() && o.At > q.Done && o.made() {
				return fmt.Sprintf("request %d for %s at %s came after the receiver refused it for good at %s (request %d: %s)",
					o.N, cmp.Or(o.Key, "case "+o.Case), o.At, q.Done, q.N, q.Outcome)
			}
		}
	}
	return ""
}

// cut reports whether a fault struck replica within a second after at.
func (h *history) cut(replica int, at time.Duration) bool {
	return slices.ContainsFunc(h.faults, func(f struck) bool {
		return f.Replica == replica && f.At >= at && f.At <= at+time.Second
	})
}

// settled checks H7 and H8's liveness on the rows read after the
// schedule's last event (at healed: its last fault over, its last
// approval made) and the horizon passed: every approval the outbox
// shows, or that committed, is delivered (one task) or given up with a
// reason that the history bears out; a key still pending, sent nothing
// since healed, while the outbox went on sending a key stuck for good
// that was approved before it, is held behind it.
func (h *history) settled(at, healed time.Duration, rows map[string]designs.RunningRow, s seen) *violation.Violation {
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
				return violated("H7", at, fmt.Sprintf("%s is shown %s, and the receiver holds no task for it", key, row.State))
			}
		case designs.RowBlocked, designs.RowDiscarded:
			switch {
			case row.Reason == "":
				return violated("H7", at, fmt.Sprintf("%s is %s with no reason a person could act on", key, row.State))
			case !s.refused(key, h.payload(key)) && !h.spent(key, row, s):
				return violated("H7", at, fmt.Sprintf("%s is %s (%s) with %s, and the receiver refused none of its requests", key, row.State, row.Reason, h.spending(key, row, s)))
			}
		default:
			return violated("H7", at, fmt.Sprintf("%s is in a state the spec does not know: %q", key, row.State))
		}
	}
	sentSince := func(key string) bool {
		id := h.idOf(key)
		return slices.ContainsFunc(s.requests, func(q Request) bool { return q.id() == id && q.At >= healed })
	}
	for _, key := range open {
		if sentSince(key) {
			continue
		}
		for _, other := range h.stuckKeys() {
			if other != key && sentSince(other) && h.approvedAt(other) <= h.approvedAt(key) {
				return violated("H8", at, fmt.Sprintf("%s is still pending when the horizon passed, every fault healed, sent nothing since the schedule's last event, while %s, stuck (%s), was sent all along: held behind it", key, other, h.stuckWhy(other)))
			}
		}
	}
	if len(open) > 0 {
		return violated("H7", at, fmt.Sprintf("still pending when the horizon passed, every fault healed: %s", strings.Join(open, ", ")))
	}
	return nil
}

// spent reports whether key spent its budget, as the design counts.
func (h *history) spent(key string, row designs.RunningRow, s seen) bool {
	if h.budget == 0 {
		return false
	}
	if row.Attempts >= h.budget && h.counts != designs.CountsNothing {
		return true
	}
	if h.counts == designs.CountsErrors {
		return s.failed(key) >= h.budget
	}
	// Where the outbox does not show its count, the requests that left
	// (an outage's included) are the least it made.
	return (row.Attempts < 0 || h.counts == designs.CountsNothing) && s.made(key) >= h.budget
}

// spending says how much of its budget a key spent, as a check reads it.
func (h *history) spending(key string, row designs.RunningRow, s seen) string {
	switch {
	case h.budget == 0:
		return "no budget to spend"
	case h.counts == designs.CountsErrors:
		return fmt.Sprintf("%d failed requests of its budget of %d", s.failed(key), h.budget)
	case row.Attempts < 0 || h.counts == designs.CountsNothing:
		return fmt.Sprintf("%d requests (an outage's included) of its budget of %d", s.made(key), h.budget)
	}
	return fmt.Sprintf("%d of its %d attempts", row.Attempts, h.budget)
}

// stuckKeys are the keys of the approved cases the receiver refuses,
// answers late or is down for, for good.
func (h *history) stuckKeys() []string {
	var keys []string
	for _, a := range h.approvals {
		if _, ok := h.stuck[a.Case]; ok && a.Key != "" && !slices.Contains(keys, a.Key) {
			keys = append(keys, a.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// approvedAt is when key was first approved.
func (h *history) approvedAt(key string) time.Duration {
	for _, a := range h.approvals {
		if a.Key == key {
			return a.At
		}
	}
	return 0
}

// stuckWhy says what the receiver does with every request for key.
func (h *history) stuckWhy(key string) string {
	for _, a := range h.approvals {
		if a.Key == key {
			return h.stuck[a.Case].Says()
		}
	}
	return ""
}

// idOf is what a request for key is known by (Request.id): the case
// approved under key, or key itself when none was.
func (h *history) idOf(key string) string {
	for _, a := range h.approvals {
		if a.Key == key && a.Case != "" {
			return a.Case
		}
	}
	return key
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
