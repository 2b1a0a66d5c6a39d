package running

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/model"
)

// Hand-made histories for the history checks: each case is one outbox
// read between two states of the receiver, and the check that must
// break (or "" for none) with words its detail must hold.

const (
	k1, k2 = "harbor:create-followup:v1:case-1", "harbor:create-followup:v1:case-2"
	p1, p2 = `{"case_id":"case-1","title":"One"}`, `{"case_id":"case-2","title":"Two"}`
)

// approved is a history of case-1 and case-2 approved and committed.
func approved(budget int, counts designs.Counting) *history {
	return &history{budget: budget, counts: counts, approvals: []approval{
		{Case: "case-1", Key: k1, Payload: p1, Committed: true},
		{Case: "case-2", Key: k2, Payload: p2, Committed: true},
	}}
}

// req is a request for case c's key that the receiver answered with a
// at second sec.
func req(n int, c string, a Answer, sec int) Request {
	key, payload := k1, p1
	if c == "case-2" {
		key, payload = k2, p2
	}
	at := time.Duration(sec) * time.Second
	return Request{N: n, At: at, Done: at, Replica: 1, Case: c, Key: key, Payload: payload, Answer: a, Reached: a != Down}
}

func rows(kv ...any) map[string]designs.RunningRow {
	m := map[string]designs.RunningRow{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(designs.RunningRow)
	}
	return m
}

var (
	pending = designs.RunningRow{State: designs.RowPending, Attempts: 1}
	sent1   = designs.RunningRow{State: designs.RowSent, TaskID: 1, Attempts: 1}
)

func TestHistoryCheck(t *testing.T) {
	task1 := Task{ID: 1, Key: k1, Payload: p1}
	for _, tc := range []struct {
		name  string
		h     *history
		rows  map[string]designs.RunningRow
		after seen
		check string
		words string
	}{
		{"every check holds", approved(3, ""), rows(k1, sent1, k2, pending),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-1", Answered, 1)}}, "", ""},
		{"two tasks for one key", approved(3, ""), rows(k1, sent1),
			seen{tasks: []Task{task1, {ID: 2, Key: k1, Payload: p1, Keyless: true}}}, "H1", k1 + " has tasks [1 2]"},
		{"a task no approval holds", approved(3, ""), rows(k1, pending),
			seen{tasks: []Task{{ID: 1, Key: k1 + "/1", Payload: p1}}}, "H2", "which no approval has"},
		{"a task with another payload", approved(3, ""), rows(k1, pending),
			seen{tasks: []Task{{ID: 1, Key: k1, Payload: p2}}}, "H2", "holds other content than the approval"},
		{"more requests than attempts", approved(3, ""), rows(k1, pending),
			seen{requests: []Request{req(1, "case-1", LostReply, 1), req(2, "case-1", LostReply, 2)}}, "H4", k1 + " was sent 2 times, but its row counts 1 attempt"},
		{"an outage's request is counted", approved(3, ""), rows(k1, pending),
			seen{requests: []Request{req(1, "case-1", Down, 1), req(2, "case-1", Down, 2)}}, "H4", k1 + " was sent 2 times"},
		{"a crashed process's request never left", approved(3, ""), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-1", Down, 1), {N: 2, Key: k1, Answer: Down, neverLeft: true}}}, "", ""},
		{"over the budget", approved(1, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: -1}),
			seen{requests: []Request{req(1, "case-1", LostReply, 1), req(2, "case-1", LostReply, 2)}}, "H4", "over the budget of 1"},
		{"over the budget in an outage", approved(1, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: -1}),
			seen{requests: []Request{req(1, "case-1", Down, 1), req(2, "case-1", Down, 2)}}, "H4", "2 requests for " + k1 + " left the app (0 reached the receiver), over the budget of 1"},
		{"over the budget, the row gone", approved(1, ""), rows(k2, pending),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-1", LostReply, 1), req(2, "case-1", Answered, 2)}}, "H4", "2 requests for " + k1 + " left the app (2 reached the receiver), over the budget of 1"},
		{"an error counter: failures bounded, the row gone", approved(1, designs.CountsErrors), rows(k2, pending),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-1", FailedAfterActing, 1), req(2, "case-1", FailedAfterActing, 2)}}, "H4", "2 failures for " + k1},
		{"an error counter: failures bounded", approved(1, designs.CountsErrors), rows(k1, designs.RunningRow{State: designs.RowPending}),
			seen{requests: []Request{req(1, "case-1", FailedAfterActing, 1), req(2, "case-1", Down, 2)}}, "H4", "2 failures"},
		{"an error counter: an answered request is free", approved(1, designs.CountsErrors), rows(k1, designs.RunningRow{State: designs.RowSent, TaskID: 1}, k2, pending),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-1", FailedAfterActing, 1), req(2, "case-1", Answered, 2)}}, "", ""},
		{"no count: nothing to judge", approved(1, designs.CountsNothing), rows(k1, designs.RunningRow{State: designs.RowPending}, k2, pending),
			seen{requests: []Request{req(1, "case-1", FailedAfterActing, 1), req(2, "case-1", FailedAfterActing, 2)}}, "", ""},
		{"sent with no task", approved(3, ""), rows(k1, sent1), seen{}, "H5", "but the CRM has no task 1"},
		{"sent with another task", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowSent, TaskID: 2, Attempts: 1}),
			seen{tasks: []Task{task1}}, "H5", "but the CRM has no task 2"},
		{"gone with no task", approved(3, ""), rows(k2, pending), seen{}, "H6", k1 + " was approved"},
		{"gone with no task after a key shown", approved(3, ""), rows(k1, pending), seen{}, "H6", k2 + " was approved"},
		{"gone with its task", approved(3, ""), rows(k2, pending), seen{tasks: []Task{task1}}, "", ""},
		{"a request after a refusal", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: 2}, k2, pending),
			seen{requests: []Request{req(1, "case-1", Refused, 1), req(2, "case-1", Refused, 5)}}, "H8", "request 2 for " + k1 + " at 5s came after the receiver refused it for good at 1s"},
		{"a request after a 422", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: 2}, k2, pending),
			seen{requests: []Request{req(1, "case-1", KeyConflict, 1), req(2, "case-1", Answered, 5)}, tasks: []Task{task1}}, "H8", "request 2"},
		{"a request of a crashed process after a refusal", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: 2}, k2, pending),
			seen{requests: []Request{req(1, "case-1", Refused, 1), {N: 2, At: 5 * time.Second, Key: k1, Case: "case-1", Answer: Down, neverLeft: true}}}, "", ""},
		{"a refusal, then the same case under another key", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: 2}, k2, pending),
			seen{requests: []Request{req(1, "case-1", Refused, 1), {N: 2, At: 5 * time.Second, Key: k1 + "/2", Payload: p1, Case: "case-1", Answer: Answered, Reached: true}}}, "H8", "request 2 for " + k1 + "/2"},
		{"an error counter: a request a crash cut is free", approved(1, designs.CountsErrors), rows(k1, designs.RunningRow{State: designs.RowPending}, k2, pending),
			seen{requests: []Request{req(1, "case-1", FailedAfterActing, 1), {N: 2, Key: k1, Answer: LateReply, Reached: true, unheard: true}, {N: 3, Key: k1, Answer: Down, neverLeft: true}}}, "", ""},
		{"a refusal of another key", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowPending, Attempts: 1}, k2, pending),
			seen{requests: []Request{req(1, "case-2", Refused, 1), req(2, "case-1", FailedAfterActing, 5)}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.h.check(time.Minute, tc.after, tc.rows, tc.after)
			judge(t, v, tc.check, tc.words)
		})
	}
}

// TestRestatedChecksAgreeWithTheirInvariants: on each handoff, given as
// the invariants see it and again as a running history, the history
// check that restates an invariant breaks where the invariant does, with
// the invariant's name and words; H4's budget bound, on the requests
// that left rather than the attempts shown, keeps its own words.
func TestRestatedChecksAgreeWithTheirInvariants(t *testing.T) {
	const budget = 3
	sound := func() (model.Observation, map[string]int) {
		return model.Observation{
			Approvals: []model.Approval{{Key: k1, Payload: p1}, {Key: k2, Payload: p2}},
			Outbox:    []model.Row{{Key: k1, State: model.Sent, Attempts: 2, RemoteID: 1}, {Key: k2, State: model.Pending, Attempts: 1}},
			Tasks:     []model.Task{{ID: 1, Key: k1, Payload: p1}},
		}, map[string]int{k1: 2, k2: 1}
	}
	for _, tc := range []struct {
		name      string
		breaks    func(o *model.Observation, sends map[string]int)
		check     string // the history check that breaks, "" for none
		invariant int    // the invariant it restates
		words     string // "": the check says what the invariant says; else words of its own it says
	}{
		{"a sound handoff", func(*model.Observation, map[string]int) {}, "", 0, ""},
		{"a key approved again with another payload", func(o *model.Observation, _ map[string]int) {
			o.Approvals = append(o.Approvals, model.Approval{Key: k1, Payload: p2})
		}, "", 0, ""},
		{"a duplicate task", func(o *model.Observation, _ map[string]int) {
			o.Tasks = append(o.Tasks, model.Task{ID: 2, Key: k1, Payload: p1})
		}, "H1", 1, ""},
		{"a task with no approval", func(o *model.Observation, _ map[string]int) {
			o.Tasks = append(o.Tasks, model.Task{ID: 2, Key: k2 + "/2", Payload: p2})
		}, "H2", 5, ""},
		{"a task with another payload", func(o *model.Observation, _ map[string]int) { o.Tasks[0].Payload = p2 }, "H2", 5, ""},
		{"attempts fewer than sends", func(_ *model.Observation, sends map[string]int) { sends[k2] = 2 }, "H4", 4, ""},
		{"over the budget", func(o *model.Observation, sends map[string]int) { o.Outbox[1].Attempts, sends[k2] = 4, 4 }, "H4", 4, "4 requests for " + k2 + " left the app (4 reached the receiver), over the budget of 3"},
		{"a sent row naming another task", func(o *model.Observation, _ map[string]int) {
			o.Tasks = append(o.Tasks, model.Task{ID: 2, Key: k2, Payload: p2})
			o.Outbox[0].RemoteID = 2
		}, "H5", 3, ""},
		{"a sent row naming no task", func(o *model.Observation, _ map[string]int) { o.Outbox[0].RemoteID = 3 }, "H5", 3, ""},
		{"a pending row naming a task", func(o *model.Observation, _ map[string]int) { o.Outbox[1].RemoteID = 1 }, "H5", 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, sends := sound()
			tc.breaks(&o, sends)
			in := filecheck.Input{Observation: o, Budget: budget, Sends: sends}
			v := asHistory(o, budget).check(time.Minute, asSeen(o, sends), asRows(o), asSeen(o, sends))
			if tc.check == "" {
				for _, n := range []int{1, 3, 4, 5} {
					if detail := filecheck.Numbered(n).Check(in); detail != "" {
						t.Errorf("invariant %d breaks: %s", n, detail)
					}
				}
				judge(t, v, "", "")
				return
			}
			inv := filecheck.Numbered(tc.invariant)
			detail := inv.Check(in)
			switch {
			case detail == "":
				t.Fatalf("invariant %d holds, want it broken", inv.Number)
			case v == nil || v.Check != tc.check:
				t.Fatalf("got %v, want %s", v, tc.check)
			case v.Name != fmt.Sprintf("invariant %d: %s", inv.Number, inv.Name):
				t.Errorf("%s is named %q, want invariant %d's name", v.Check, v.Name, inv.Number)
			case tc.words == "" && v.Detail != detail:
				t.Errorf("%s says %q, invariant %d says %q", v.Check, v.Detail, inv.Number, detail)
			case tc.words != "" && v.Detail != tc.words:
				t.Errorf("%s says %q, want %q", v.Check, v.Detail, tc.words)
			}
		})
	}
}

// asHistory is a running history of o's approvals, each committed, with
// budget.
func asHistory(o model.Observation, budget int) *history {
	h := &history{budget: budget}
	for _, a := range o.Approvals {
		h.approvals = append(h.approvals, approval{Key: a.Key, Payload: a.Payload, Committed: true})
	}
	return h
}

// asRows is o's outbox as a running design shows it.
func asRows(o model.Observation) map[string]designs.RunningRow {
	m := map[string]designs.RunningRow{}
	for _, r := range o.Outbox {
		m[r.Key] = designs.RunningRow{State: designs.RowState(r.State), TaskID: r.RemoteID, Attempts: r.Attempts}
	}
	return m
}

// asSeen is what the receiver saw: o's tasks, and sends[key] requests
// for each key, their replies lost.
func asSeen(o model.Observation, sends map[string]int) seen {
	var s seen
	for _, t := range o.Tasks {
		s.tasks = append(s.tasks, Task{ID: t.ID, Key: t.Key, Payload: t.Payload})
	}
	for _, key := range sortedKeys(sends) {
		for range sends[key] {
			s.requests = append(s.requests, Request{N: len(s.requests) + 1, Key: key, Answer: LostReply, Reached: true})
		}
	}
	return s
}

// TestRefusalThatMayNotHaveBeenHeard: a refusal answered to a paused
// worker whose job another worker took meanwhile or may have taken (past
// its lease), or to a process cut within a second after it, is not held
// against the outbox.
func TestRefusalThatMayNotHaveBeenHeard(t *testing.T) {
	held := req(1, "case-1", Refused, 1)
	held.At = 0 // sent at 0, held, refused at 1s
	other := req(2, "case-1", LostReply, 0)
	other.At = 500 * time.Millisecond // sent while the first was held
	later := req(3, "case-1", Answered, 9)
	h := approved(3, "")
	if got := h.afterRefusal([]Request{held, other, later}); got != "" {
		t.Errorf("a refusal answered while a newer request was under way: %s, want none", got)
	}
	refused, after := req(1, "case-1", Refused, 1), req(2, "case-1", Answered, 9)
	h.faults = []struck{{At: 1500 * time.Millisecond, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); got != "" {
		t.Errorf("a refusal whose process crashed half a second later: %s, want none", got)
	}
	h.faults = []struck{{At: 2 * time.Second, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); got != "" {
		t.Errorf("a refusal whose process crashed a second later, to the nanosecond: %s, want none", got)
	}
	h.faults = []struck{{At: 3 * time.Second, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal whose process lived on for two seconds: %q, want request 2 named", got)
	}
	h.faults = []struck{{At: 1500 * time.Millisecond, Replica: 2}}
	if got := h.afterRefusal([]Request{refused, after}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal whose process lived on while another replica crashed: %q, want request 2 named", got)
	}
	h.faults = []struck{{At: 500 * time.Millisecond, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal after its process crashed and booted again: %q, want request 2 named", got)
	}
	h.faults = nil
	h.lease = 30 * time.Second
	late := req(1, "case-1", Refused, 0)
	late.Done = 31 * time.Second // a worker paused past its lease, its job free for another
	if got := h.afterRefusal([]Request{late, req(2, "case-1", Answered, 40)}); got != "" {
		t.Errorf("a refusal answered after the lease: %s, want none", got)
	}
	late.Done = 30 * time.Second
	if got := h.afterRefusal([]Request{late, req(2, "case-1", Answered, 40)}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal answered as the lease ends: %q, want request 2 named", got)
	}
	h.lease = 0 // held by a lock: no other worker takes the job while its worker is paused
	late.Done = time.Hour
	if got := h.afterRefusal([]Request{late, req(2, "case-1", Answered, 3700)}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal to a worker that holds a lock, an hour late: %q, want request 2 named", got)
	}
	busy, refusal, again := req(1, "case-1", Throttled503, 1), req(2, "case-1", Refused, 3), req(3, "case-1", Answered, 9)
	if got := h.afterRefusal([]Request{busy, refusal, again}); !strings.Contains(got, "request 3") {
		t.Errorf("a 503, a refusal, then a request: %q, want request 3 named", got)
	}
	held2 := req(1, "case-1", Refused, 1)
	held2.At = 0
	otherCase := req(2, "case-2", LostReply, 0)
	otherCase.At = 500 * time.Millisecond
	if got := h.afterRefusal([]Request{held2, otherCase, req(3, "case-1", Answered, 9)}); !strings.Contains(got, "request 3") {
		t.Errorf("a refusal while another case's request was under way: %q, want request 3 named", got)
	}
}

// TestRefusalExcusedAtItsVeryInstant: H8's excuses hold at their
// boundary instants too. A request for the key that starts at the very
// instant the refusal answers was under way with it (the refusal is no
// longer the answer to the key's newest request), and a fault that
// strikes the refusal's process at that very instant may have lost what
// the outbox wrote of it: either way a later request is no violation.
// Without the excuse the same history breaks H8.
func TestRefusalExcusedAtItsVeryInstant(t *testing.T) {
	h := approved(3, "")
	held := req(1, "case-1", Refused, 1)
	held.At = 0 // sent at 0, refused at 1s
	atTheAnswer := req(2, "case-1", LostReply, 1)
	if got := h.afterRefusal([]Request{held, atTheAnswer, req(3, "case-1", Answered, 9)}); got != "" {
		t.Errorf("a refusal answered as a newer request started: %s, want none", got)
	}
	if got := h.afterRefusal([]Request{held, req(3, "case-1", Answered, 9)}); !strings.Contains(got, "request 3") {
		t.Errorf("the same refusal with no newer request under way: %q, want request 3 named", got)
	}
	refused, after := req(1, "case-1", Refused, 1), req(2, "case-1", Answered, 9)
	h.faults = []struck{{At: time.Second, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); got != "" {
		t.Errorf("a refusal whose process crashed at that very instant: %s, want none", got)
	}
	h.faults = []struck{{At: time.Second - time.Nanosecond, Replica: 1}}
	if got := h.afterRefusal([]Request{refused, after}); !strings.Contains(got, "request 2") {
		t.Errorf("a refusal whose process crashed a nanosecond before it and booted again: %q, want request 2 named", got)
	}
}

// later has case c approved a minute after the others.
func later(h *history, c string) *history {
	for i := range h.approvals {
		if h.approvals[i].Case == c {
			h.approvals[i].At = time.Minute
		}
	}
	return h
}

func TestHistorySettled(t *testing.T) {
	task1 := Task{ID: 1, Key: k1, Payload: p1}
	blocked := func(attempts int, reason string) designs.RunningRow {
		return designs.RunningRow{State: designs.RowBlocked, Attempts: attempts, Reason: reason}
	}
	stuck := func(h *history, c string, f KeyFault) *history {
		h.stuck = map[string]KeyFault{c: f}
		return h
	}
	for _, tc := range []struct {
		name  string
		h     *history
		rows  map[string]designs.RunningRow
		s     seen
		check string
		words string
	}{
		{"delivered", approved(3, ""), rows(k1, sent1, k2, designs.RunningRow{State: designs.RowDone}),
			seen{tasks: []Task{task1, {ID: 2, Key: k2, Payload: p2}}}, "", ""},
		{"still pending", approved(3, ""), rows(k1, sent1, k2, pending), seen{tasks: []Task{task1}}, "H7", "still pending when the horizon passed, every fault healed: " + k2},
		{"still pending beside a row gone", approved(3, ""), rows(k2, pending), seen{tasks: []Task{task1}}, "H7", "still pending when the horizon passed, every fault healed: " + k2},
		{"done with no task", approved(3, ""), rows(k1, designs.RunningRow{State: designs.RowDone}, k2, sent1), seen{}, "H7", k1 + " is shown done"},
		{"blocked with no reason", approved(3, ""), rows(k1, sent1, k2, blocked(3, "")), seen{tasks: []Task{task1}}, "H7", "no reason a person could act on"},
		{"blocked for nothing", approved(3, ""), rows(k1, sent1, k2, blocked(1, "budget-exhausted")), seen{tasks: []Task{task1}}, "H7", "1 of its 3 attempts"},
		{"blocked: the budget spent", approved(3, ""), rows(k1, sent1, k2, blocked(3, "budget-exhausted")), seen{tasks: []Task{task1}}, "", ""},
		{"blocked: refused", approved(3, ""), rows(k1, sent1, k2, blocked(1, "rejected")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", Refused, 1)}}, "", ""},
		{"blocked: the budget spent in an outage, no count shown", approved(2, ""), rows(k1, sent1, k2, blocked(-1, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", Down, 1), req(2, "case-2", Down, 2)}}, "", ""},
		{"blocked: one outage request of two", approved(2, ""), rows(k1, sent1, k2, blocked(-1, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", Down, 1)}}, "H7", "1 requests (an outage's included) of its budget of 2"},
		{"an error counter: blocked after its failures", approved(2, designs.CountsErrors), rows(k1, sent1, k2, blocked(0, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", FailedAfterActing, 1), req(2, "case-2", Throttled503, 2)}}, "", ""},
		{"an error counter: blocked early, a request a crash cut counted", approved(2, designs.CountsErrors), rows(k1, sent1, k2, blocked(0, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", FailedAfterActing, 1), {N: 2, Key: k2, Case: "case-2", Answer: LateReply, Reached: true, unheard: true}}}, "H7", k2 + " is blocked (budget-exhausted)"},
		{"a state the spec does not know", approved(3, ""), rows(k1, sent1, k2, designs.RunningRow{State: "parked"}), seen{tasks: []Task{task1}}, "H7", `"parked"`},
		{"held behind a stuck key", stuck(approved(3, ""), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-1", Down, 30), req(2, "case-1", Down, 40)}}, "H8", k2 + " is still pending when the horizon passed, every fault healed, sent nothing since the schedule's last event, while " + k1 + ", stuck (the receiver down for it), was sent all along"},
		{"sent before the last event, then held behind", stuck(approved(3, ""), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-2", LostReply, 10), req(2, "case-1", Down, 30)}}, "H8", k2 + " is still pending"},
		{"sent after the last event: pending on its own", stuck(approved(3, ""), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-2", LostReply, 25), req(2, "case-1", Down, 30)}}, "H7", "still pending"},
		{"sent at the last event itself: pending on its own", stuck(approved(3, ""), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-2", LostReply, 20), req(2, "case-1", Down, 30)}}, "H7", "still pending"},
		{"sent after the last event without its key: pending on its own", stuck(approved(3, ""), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{{N: 1, At: 25 * time.Second, Done: 25 * time.Second, Replica: 1, Case: "case-2", Payload: p2, Answer: LostReply, Reached: true, Keyless: true},
				req(2, "case-1", Down, 30)}}, "H7", "still pending"},
		{"no count: the requests that left spend the budget", approved(2, designs.CountsNothing), rows(k1, sent1, k2, blocked(5, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", Down, 1)}}, "H7", "1 requests (an outage's included) of its budget of 2"},
		{"no count: two requests spend a budget of two", approved(2, designs.CountsNothing), rows(k1, sent1, k2, blocked(0, "budget-exhausted")),
			seen{tasks: []Task{task1}, requests: []Request{req(1, "case-2", Down, 1), req(2, "case-2", FailedAfterActing, 2)}}, "", ""},
		{"refused under a key of the design's own, for the same payload", approved(3, ""), rows(k1, sent1, k2, blocked(1, "rejected")),
			seen{tasks: []Task{task1}, requests: []Request{{N: 1, Key: k2 + "/1", Payload: p2, Case: "case-2", Answer: Refused, Reached: true}}}, "", ""},
		{"pending on its own, beside a stuck key approved after it", stuck(later(approved(3, ""), "case-1"), "case-1", DownKey), rows(k1, pending, k2, pending),
			seen{requests: []Request{req(1, "case-1", Down, 30), req(2, "case-1", Down, 40)}}, "H7", "still pending"},
		{"pending on its own, beside a stuck key", stuck(approved(3, ""), "case-1", RefuseKey400), rows(k1, blocked(1, "rejected"), k2, pending),
			seen{requests: []Request{req(1, "case-1", Refused, 1)}}, "H7", "still pending"},
		{"the stuck key itself pending", stuck(approved(3, ""), "case-1", SlowKey), rows(k1, pending, k2, sent1),
			seen{tasks: []Task{{ID: 1, Key: k2, Payload: p2}}, requests: []Request{req(1, "case-1", LateReply, 30)}}, "H7", "still pending when the horizon passed, every fault healed: " + k1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judge(t, tc.h.settled(time.Hour, 20*time.Second, tc.rows, tc.s), tc.check, tc.words)
		})
	}
}

// judge fails t unless v broke check with words in its detail, or, for
// check "", v is nil.
func judge(t *testing.T, v *violation.Violation, check, words string) {
	t.Helper()
	switch {
	case check == "" && v != nil:
		t.Errorf("got %v, want every check to hold", v)
	case check == "":
	case v == nil:
		t.Errorf("every check held, want %s", check)
	case v.Check != check || !strings.Contains(v.Detail, words):
		t.Errorf("got %v, want %s with %q", v, check, words)
	}
}

// TestDrawHoldsPastTheLease: a drawn pause outlasts the design's lease
// (for a job held by a lock, any pause), and every event strikes a
// replica the schedule runs.
func TestDrawHoldsPastTheLease(t *testing.T) {
	lease := designs.Running{Name: "d", Lease: 40 * time.Second}
	lock := designs.Running{Name: "d", Lease: 40 * time.Second, Holds: designs.HeldByLock}
	rapidCheck(t, func(s Schedule, d designs.Running) {
		for _, r := range s.Answers {
			if r.Answer == Paused && d.Holds != designs.HeldByLock && r.Wait <= d.Lease {
				t.Fatalf("a hold of %s, within the lease of %s", r.Wait, d.Lease)
			}
			if r.Answer == Paused && r.Wait <= 0 {
				t.Fatalf("a hold of %s", r.Wait)
			}
		}
		for _, e := range s.Events {
			if e.replica() > s.replicas() {
				t.Fatalf("%s strikes replica %d of %d", e.Kind, e.replica(), s.replicas())
			}
		}
	}, lease, lock)
}

// rapidCheck runs check on schedules drawn for each design.
func rapidCheck(t *testing.T, check func(Schedule, designs.Running), ds ...designs.Running) {
	for _, d := range ds {
		rapid.Check(t, func(rt *rapid.T) { check(Draw(rt, d, "postgres", 0), d) })
	}
}

// TestDrawKeepsToTheReplicas: a drawn schedule runs the processes asked
// for, or 1 to 3 when none is, never more than the design runs (its
// Replicas), and its events strike only those.
func TestDrawKeepsToTheReplicas(t *testing.T) {
	for _, d := range []designs.Running{{Name: "any"}, {Name: "one", Replicas: 1}, {Name: "two", Replicas: 2}} {
		most := MaxReplicas
		if d.Replicas > 0 {
			most = d.Replicas
		}
		for asked := 0; asked <= MaxReplicas; asked++ {
			t.Run(fmt.Sprintf("%s/asked %d", d.Name, asked), func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					s := Draw(rt, d, "postgres", asked)
					switch n := s.replicas(); {
					case n > most:
						rt.Fatalf("%d replicas of design %s, which runs at most %d", n, d.Name, most)
					case asked > 0 && n != min(asked, most):
						rt.Fatalf("%d replicas, asked for %d of a design that runs at most %d", n, asked, most)
					}
					for _, e := range s.Events {
						if e.replica() > s.replicas() {
							rt.Fatalf("%s strikes replica %d of %d", e.Kind, e.replica(), s.replicas())
						}
					}
				})
			})
		}
	}
}
