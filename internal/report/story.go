package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// laneKind is who a lane of the sequence diagram stands for.
type laneKind int

const (
	personLane laneKind = iota
	appLane
	workerLane
	networkLane
	receiverLane
	clockLane
)

// lane is one column of the sequence diagram.
type lane struct {
	kind  laneKind
	name  string // a worker's name, for a worker's lane
	label string
}

// event is one thing a step's band shows: an arrow from one lane to
// another, or a mark on one lane (from == to).
type event struct {
	from, to int
	label    string
	// class is the CSS class that colours it: claim, send, reply, settle,
	// person, fault, crash, clock, info.
	class string
	// lost says the arrow ends in a cross at lane to: a request or a
	// reply the network lost.
	lost bool
	// via is the lane the arrow passes through (the network), -1 for
	// none.
	via int
}

// mark reports whether e is a mark on one lane rather than an arrow.
func (e event) mark() bool { return e.from == e.to }

// step is one step of the run as the report shows it.
type step struct {
	index  int    // its index in the run
	number int    // its number as the failure counts steps; 0 for a design or transport line
	text   string // the directive line
	output string
	want   string // the output the scenario file expects
	events []event
	// note is, for a line that sets the run up (design, transport,
	// backend, config), what it says, drawn across the lanes.
	note string
	// restart says every process died and started again: a break
	// across the lanes.
	restart bool
	now     int64
	// diverged marks the first step whose answer or observation is not
	// the model's; violated the step that broke an invariant; mismatch a
	// step whose output is not the scenario file's.
	diverged, violated, mismatch bool
	outcome                      sim.Outcome
}

// id is the step's anchor: step-N, or setup-I for a line before the
// first step.
func (s step) id() string {
	if s.number == 0 {
		return fmt.Sprintf("setup-%d", s.index+1)
	}
	return fmt.Sprintf("step-%d", s.number)
}

// name is how the page names the step: "step 3", or the setup line's
// directive.
func (s step) name() string {
	if s.number == 0 {
		return "setup: " + s.text
	}
	return fmt.Sprintf("step %d", s.number)
}

// lease is a row's lease as a bar on its holder's lane, from the step
// that took it to the step at which it ended.
type lease struct {
	lane     int
	key      string
	fence    int64
	until    int64
	from, to int // indexes into story.steps; to == len(steps) while still held at the end
	// end says how it ended: "released" (settled, or let go at a
	// restart), "ran out", or "" while still held.
	end string
}

// story is a run laid out for the sequence diagram.
type story struct {
	lanes      []lane
	steps      []step
	leases     []lease
	divergence int // the index into steps of the first divergence, -1 when none
	violation  int // the index into steps of the step that broke an invariant, -1 when none
	transport  sim.Transport
}

// claimed is what a named worker holds between its claim and its settle.
type claimed struct {
	key      string
	attempt  int
	fence    int64
	hasClaim bool
}

// tell lays out run: its lanes, what each step drew, its leases, and where
// the model and the system first disagreed. mismatched are the indexes of
// steps whose output differs from the scenario file's.
func tell(run sim.Run, mismatched []int) story {
	st := story{divergence: -1, violation: -1, transport: sim.InProcess}
	st.lanes = lanesOf(run)
	at := map[string]int{}
	for i, l := range st.lanes {
		switch l.kind {
		case workerLane:
			at["worker:"+l.name] = i
		default:
			at[fmt.Sprint(l.kind)] = i
		}
	}
	t := teller{lanes: at, claims: map[string]claimed{}}
	designLines := run.DesignLines()
	for i, s := range run.Steps {
		out := run.Outcomes[i]
		if s.Directive == "transport" {
			if name, ok := s.Arg("name"); ok {
				st.transport = sim.Transport(name)
			}
		}
		sv := step{index: i, text: s.String(), output: out.Output, now: out.Picture.Now, outcome: out, mismatch: slices.Contains(mismatched, i)}
		if i >= designLines {
			sv.number = i - designLines + 1
		}
		t.tell(&sv, s, out)
		if st.divergence < 0 && (out.Answer != out.Picture.Want || !sameObservation(out.Observed, out.Picture.Predicted)) {
			st.divergence, sv.diverged = i, true
		}
		if out.Violation != nil && st.violation < 0 {
			st.violation, sv.violated = i, true
		}
		st.steps = append(st.steps, sv)
	}
	if st.transport == sim.HTTP {
		st.lanes[at[fmt.Sprint(networkLane)]].label = "TCP fault proxy"
	}
	st.leases = leasesOf(st.steps, at)
	return st
}

// lanesOf lists the lanes of run: the person, the app, every worker (the
// default one first, then the named ones by name), the network, the
// receiver and the clock.
func lanesOf(run sim.Run) []lane {
	workers := map[string]bool{}
	for i, s := range run.Steps {
		switch s.Directive {
		case "deliver", "converge":
			workers[model.DefaultWorker] = true
		}
		if name, ok := s.Arg("worker"); ok && name != "" {
			workers[name] = true
		}
		for _, r := range run.Outcomes[i].Observed.Outbox {
			if r.LeaseOwner != "" {
				workers[r.LeaseOwner] = true
			}
		}
	}
	names := make([]string, 0, len(workers))
	for name := range workers {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmpBool(a == model.DefaultWorker, b == model.DefaultWorker), cmp.Compare(a, b))
	})
	lanes := []lane{{kind: personLane, label: "person"}, {kind: appLane, label: "app + outbox"}}
	for _, name := range names {
		label := "worker " + oneLine(name)
		if name == model.DefaultWorker {
			label = "worker (default)"
		}
		lanes = append(lanes, lane{kind: workerLane, name: name, label: label})
	}
	return append(lanes, lane{kind: networkLane, label: "network"}, lane{kind: receiverLane, label: "receiver (CRM)"}, lane{kind: clockLane, label: "clock"})
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// teller turns steps into events, keeping what the named workers hold.
type teller struct {
	lanes  map[string]int
	claims map[string]claimed
}

func (t *teller) lane(k laneKind) int    { return t.lanes[fmt.Sprint(k)] }
func (t *teller) worker(name string) int { return t.lanes["worker:"+name] }
func (t *teller) arrow(from, to int, label, class string) event {
	return event{from: from, to: to, label: label, class: class, via: -1}
}
func (t *teller) mark(on int, label, class string) event {
	return event{from: on, to: on, label: label, class: class, via: -1}
}

// request is an arrow from worker lane w to the receiver through the
// network: lost at the network when the fault lost it.
func (t *teller) request(w int, label string, lostOnTheWay bool) event {
	e := event{from: w, to: t.lane(receiverLane), label: label, class: "send", via: t.lane(networkLane)}
	if lostOnTheWay {
		e.to, e.via, e.lost = t.lane(networkLane), -1, true
	}
	return e
}

// reply is the receiver's answer to worker lane w, lost at the network
// when the fault lost it.
func (t *teller) reply(w int, label string, lost bool) event {
	e := event{from: t.lane(receiverLane), to: w, label: label, class: "reply", via: t.lane(networkLane)}
	if lost {
		e.to, e.via, e.lost, e.label = t.lane(networkLane), -1, true, "reply lost"
	}
	return e
}

// faultShown says, for every fault, how the diagram shows where it took
// effect: a mark with its label on a lane (marked), or a shape the
// directive's events draw (how). A new fault needs a row (TestFaultsShown).
var faultShown = map[faults.Kind]struct {
	marked bool
	lane   laneKind
	label  string
	how    string
}{
	faults.CrashBetweenInserts:  {how: "a crash mark on the app's lane, and a restart's break"},
	faults.CrashBeforeSend:      {how: "a crash mark on the worker's lane before any request"},
	faults.CrashAfterReply:      {how: "a crash mark on the worker's lane after the reply"},
	faults.CrashAfterRecord:     {how: "a crash mark on the pipelined worker's lane, after it recorded the answer before"},
	faults.CrashAfterClaimAhead: {how: "a crash mark on the pipelined worker's lane, after it claimed the row after"},
	faults.Answered:             {how: "the request stopped at the network, which answers a status of its own"},
	faults.Mangled:              {how: "the reply spoiled at the network, after the receiver acted"},
	faults.Offline:              {how: "the request crossed out at the network"},
	faults.LostReply:            {how: "the reply crossed out at the network"},
	faults.DuplicateRequest:     {how: "a second request"},
	faults.Throttled:            {how: "the request stopped at the network, which answers with the retry hint"},
	faults.Refused:              {how: "the receiver's reply: refused"},
	faults.Restart:              {how: "a break across the lanes"},
	faults.ForeignTask:          {marked: true, lane: receiverLane, label: "another system's task under the key"},
	faults.AppBusy:              {marked: true, lane: appLane, label: "app database busy"},
	faults.AppFull:              {marked: true, lane: appLane, label: "app database full"},
	faults.CommitLost:           {marked: true, lane: appLane, label: "COMMIT lost"},
	faults.CommitReplyLost:      {marked: true, lane: appLane, label: "COMMIT's reply lost"},
	faults.CRMBusy:              {marked: true, lane: receiverLane, label: "CRM database busy"},
	faults.CRMFull:              {marked: true, lane: receiverLane, label: "CRM database full"},
}

// databaseFault is the mark fault k leaves where it took effect, for a
// fault drawn as a mark (of a database, or of another system at the
// receiver).
func (t *teller) databaseFault(k faults.Kind) (event, bool) {
	f, ok := faultShown[k]
	if !ok || !f.marked {
		return event{}, false
	}
	return t.mark(t.lane(f.lane), f.label, "fault"), true
}

// tell fills sv's events from step s and what it did.
func (t *teller) tell(sv *step, s sim.Step, out sim.Outcome) {
	p := out.Picture
	got := out.Answer
	add := func(e ...event) { sv.events = append(sv.events, e...) }
	fault := func() {
		if e, ok := t.databaseFault(p.Fired); ok {
			add(e)
		}
	}
	switch s.Directive {
	case "design", "transport", "backend", "config":
		sv.note, _, _ = strings.Cut(out.Output, "\n")
	case "approve":
		c, _ := s.Arg("case")
		add(t.arrow(t.lane(personLane), t.lane(appLane), fmt.Sprintf("approve %s: %s", oneLine(c), got.Kind), "person"))
		if p.Fired == faults.CrashBetweenInserts || got.Kind == sim.Crashed {
			add(t.mark(t.lane(appLane), "crash between the inserts", "crash"))
			sv.restart = true
		}
		fault()
	case "deliver":
		t.deliver(sv, out)
	case "claim":
		name, _ := s.Arg("worker")
		w := t.worker(name)
		fault()
		switch got.Kind {
		case sim.Claimed:
			r := rowOf(out.Observed, got.Key)
			t.claims[name] = claimed{key: got.Key, attempt: r.Attempts, fence: r.Fence, hasClaim: true}
			add(t.arrow(t.lane(appLane), w, fmt.Sprintf("claim %s · attempt %d · fence %d", short(got.Key), r.Attempts, r.Fence), "claim"))
		case sim.Idle:
			add(t.mark(w, "idle: nothing eligible", "info"))
		case sim.Blocked:
			add(t.arrow(t.lane(appLane), w, fmt.Sprintf("blocked %s: %s", short(got.Key), rowOf(out.Observed, got.Key).LastError), "claim"))
		case sim.OutOfTurn:
			add(t.mark(w, "holds a claim already", "info"))
		default:
			add(t.mark(w, "claim: "+string(got.Kind), "fault"))
		}
	case "send":
		name, _ := s.Arg("worker")
		w, c := t.worker(name), t.claims[name]
		if got.Kind == sim.OutOfTurn {
			add(t.mark(w, "nothing claimed to send", "info"))
			break
		}
		fault()
		label := fmt.Sprintf("send %s · attempt %d", short(c.key), c.attempt)
		switch p.Fired {
		case faults.Offline:
			add(t.request(w, label, true))
		case faults.Throttled:
			hint, _ := s.Arg("retry-after")
			add(t.request(w, label, true), t.arrow(t.lane(networkLane), w, "throttled: retry after "+hint+" ms", "reply"))
		case faults.Answered:
			status, _ := s.Arg("status")
			add(t.request(w, label, true), t.arrow(t.lane(networkLane), w, "answered "+status+": "+heard(got), "reply"))
		case faults.Mangled:
			spoil, _ := s.Arg("spoil")
			add(t.request(w, label, false), t.arrow(t.lane(receiverLane), w, "reply spoiled ("+spoil+"): "+heard(got), "reply"))
		default:
			add(t.request(w, label, false))
			if p.Fired == faults.DuplicateRequest {
				add(t.request(w, "the same request again", false))
			}
			add(t.reply(w, heard(got), p.Fired == faults.LostReply))
		}
	case "settle":
		name, _ := s.Arg("worker")
		w, c := t.worker(name), t.claims[name]
		delete(t.claims, name)
		if got.Kind == sim.OutOfTurn {
			add(t.mark(w, "nothing sent to settle", "info"))
			break
		}
		add(t.arrow(w, t.lane(appLane), fmt.Sprintf("settle %s · fence %d: %s", short(c.key), c.fence, got.Kind), "settle"))
		fault()
	case "pipe", "flush":
		name, _ := s.Arg("worker")
		w := t.worker(name)
		if got.Kind == sim.Crashed {
			add(t.mark(w, "crashed in its background ("+string(p.Fired)+"): its leases stay", "crash"))
			break
		}
		for range p.Requests {
			add(t.request(w, "send", p.Fired == faults.Offline))
		}
		add(t.arrow(w, t.lane(appLane), fmt.Sprintf("%s: %s", s.Directive, got), "settle"))
	case "crash":
		name, _ := s.Arg("worker")
		delete(t.claims, name)
		add(t.mark(t.worker(name), "crashed: its lease stays", "crash"))
	case "restart":
		clear(t.claims)
		sv.restart = true
		add(t.mark(t.lane(appLane), "every process restarts", "crash"))
	case "tick":
		ms, _ := s.Arg("ms")
		add(t.mark(t.lane(clockLane), "+"+ms+" ms", "clock"))
	case "converge":
		w := t.worker(model.DefaultWorker)
		add(t.mark(w, fmt.Sprintf("converge, faults off: %s", got), "info"))
		if p.Requests > 0 {
			add(t.request(w, fmt.Sprintf("%d requests", p.Requests), false))
		}
		add(t.mark(t.lane(clockLane), "time passes every lease and backoff", "clock"))
	case "requeue", "reconcile", "stale":
		label := s.Directive
		if c, ok := s.Arg("case"); ok {
			label += " " + oneLine(c)
		}
		add(t.arrow(t.lane(personLane), t.lane(appLane), label+": "+got.String(), "person"))
	default:
		add(t.mark(t.lane(appLane), s.Directive+": "+got.String(), "info"))
	}
}

// deliver fills the events of a delivery of the default worker: its
// claim, request, reply and record, and the fault where it took effect.
func (t *teller) deliver(sv *step, out sim.Outcome) {
	p, got := out.Picture, out.Answer
	w, app := t.worker(model.DefaultWorker), t.lane(appLane)
	add := func(e ...event) { sv.events = append(sv.events, e...) }
	if e, ok := t.databaseFault(p.Fired); ok && p.Fired != faults.ForeignTask && p.Fired != faults.CRMBusy && p.Fired != faults.CRMFull {
		add(e)
	}
	if got.Kind == sim.Idle {
		add(t.mark(w, "idle: nothing pending", "info"))
		return
	}
	r := rowOf(out.Observed, got.Key)
	if got.Key == "" {
		add(t.mark(w, "deliver: "+string(got.Kind), "fault"))
		return
	}
	if got.Kind == sim.Blocked && p.Requests == 0 {
		add(t.arrow(app, w, fmt.Sprintf("claim %s: blocked (%s)", short(got.Key), r.LastError), "claim"))
		return
	}
	add(t.arrow(app, w, fmt.Sprintf("claim %s · attempt %d", short(got.Key), r.Attempts), "claim"))
	if p.Fired == faults.CrashBeforeSend {
		add(t.mark(w, "crash before the send; restarted", "crash"))
		sv.restart = true
		return
	}
	if e, ok := t.databaseFault(p.Fired); ok && (p.Fired == faults.ForeignTask || p.Fired == faults.CRMBusy || p.Fired == faults.CRMFull) {
		add(e)
	}
	label := fmt.Sprintf("send %s · attempt %d", short(got.Key), r.Attempts)
	switch {
	case p.Fired == faults.Offline:
		add(t.request(w, label, true))
	case p.Requests > 0:
		add(t.request(w, label, false))
		if p.Fired == faults.DuplicateRequest {
			add(t.request(w, "the same request again", false))
		}
		reply := "task"
		switch {
		case r.RemoteID != 0:
			reply = fmt.Sprintf("task %d", r.RemoteID)
		case r.LastError != "" && got.Kind != sim.Crashed:
			reply = r.LastError
		default:
			for _, task := range out.Observed.Tasks {
				if task.Key == got.Key {
					reply = fmt.Sprintf("task %d", task.ID)
				}
			}
		}
		add(t.reply(w, reply, p.Fired == faults.LostReply))
	}
	switch got.Kind {
	case sim.Crashed:
		add(t.mark(w, "crash after the reply; restarted", "crash"))
		sv.restart = true
	case sim.Sent, sim.Pending, sim.Blocked:
		what := string(got.Kind)
		if r.LastError != "" {
			what += " (" + r.LastError + ")"
		}
		add(t.arrow(w, app, "record: "+what, "settle"))
	default:
		add(t.mark(w, string(got.Kind), "fault"))
	}
}

// heard is the label of the reply a named worker's send heard.
func heard(a sim.Answer) string {
	switch a.Kind {
	case sim.Task:
		return fmt.Sprintf("task %d", a.N)
	case sim.Rejected:
		return "refused"
	}
	return string(a.Kind)
}

// leasesOf finds the leases the steps' observations show, each from the
// step after which it was first held to the one after which it was not.
func leasesOf(steps []step, lanes map[string]int) []lease {
	type held struct {
		owner, key string
		fence      int64
	}
	var done []lease
	open := map[held]int{} // into done
	for i, s := range steps {
		live := map[held]model.Row{}
		for _, r := range s.outcome.Observed.Outbox {
			if r.LeaseOwner != "" && r.LeaseUntil > s.now {
				live[held{r.LeaseOwner, r.Key, r.Fence}] = r
			}
		}
		for h, j := range open {
			if _, ok := live[h]; ok {
				continue
			}
			done[j].to = i
			done[j].end = "released"
			if s.now >= done[j].until {
				done[j].end = "ran out"
			}
			delete(open, h)
		}
		for _, h := range sortedHeld(live) {
			if _, ok := open[h]; ok {
				continue
			}
			r := live[h]
			open[h] = len(done)
			done = append(done, lease{lane: lanes["worker:"+h.owner], key: h.key, fence: h.fence, until: r.LeaseUntil, from: i, to: len(steps)})
		}
	}
	return done
}

// sortedHeld is the keys of live in a fixed order.
func sortedHeld[H interface{ comparable }, V any](live map[H]V) []H {
	keys := make([]H, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b H) int { return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}

// rowOf is key's row in o, the zero Row when there is none.
func rowOf(o model.Observation, key string) model.Row {
	for _, r := range o.Outbox {
		if r.Key == key {
			return r
		}
	}
	return model.Row{}
}

// sameObservation reports whether a and b hold the same facts.
func sameObservation(a, b model.Observation) bool {
	return slices.Equal(a.Approvals, b.Approvals) && slices.Equal(a.Outbox, b.Outbox) && slices.Equal(a.Tasks, b.Tasks)
}

// short is a key without the action's prefix, which every key of the
// handoff has: the case it is for.
func short(key string) string {
	return oneLine(strings.TrimPrefix(key, model.KeyPrefix))
}

// oneLine is text as one line: what is not printable escaped.
func oneLine(s string) string { return system.OneLine(s) }

// clock is the virtual time ms as a scenario's tick prints it.
func clock(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }
