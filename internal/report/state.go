package report

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/model"
)

// scenarioText is the scenario file as the page shows it beside the
// diagram: every line numbered, each step's lines linked to its state and
// its band, the steps that did not run marked so.
func scenarioText(sc sim.Scenario, st story) string {
	var m markup
	m.open("pre", "class", "scenario-text")
	line := func(n int, class, text string) {
		m.open("span", "class", "line "+class)
		m.elText("span", itoa(n), "class", "ln")
		m.text(oneLine(text) + "\n")
		m.end("span")
	}
	for i, c := range sc.Cases {
		n := c.Line - len(c.Comments)
		for _, l := range c.Comments {
			line(n, "comment", l)
			n++
		}
		// A step's lines are one block, its directive line a link to it.
		if i < len(st.steps) {
			id := st.steps[i].id()
			m.open("span", "class", "case", "data-step", id)
			m.open("a", "class", "line directive", "href", "#"+id)
			m.elText("span", itoa(c.Line), "class", "ln")
			m.text(oneLine(c.Text) + "\n")
			m.end("a")
		} else {
			m.open("span", "class", "case not-run")
			line(c.Line, "directive", c.Text)
		}
		line(c.Line+1, "rule", "----")
		wants := strings.Split(c.Want, "\n")
		for j, w := range wants {
			line(c.Line+2+j, "want", w)
		}
		m.end("span")
		if i+1 < len(sc.Cases) || len(sc.Trailer) > 0 {
			line(c.Line+2+len(wants), "blank", "")
		}
	}
	n := 0
	if len(sc.Cases) > 0 {
		last := sc.Cases[len(sc.Cases)-1]
		n = last.Line + 3 + strings.Count(last.Want, "\n")
	}
	for j, l := range sc.Trailer {
		line(n+j, "comment", l)
	}
	if len(sc.Cases) > len(st.steps) {
		m.elText("span", fmt.Sprintf("(the run stopped at the step that broke the invariant: %s did not run)", plural(len(sc.Cases)-len(st.steps), "step"))+"\n", "class", "line stopped")
	}
	m.end("pre")
	return m.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// diverged shows the first step whose answer or observation was not the
// model's: the step, the two answers, and the model's state beside the
// system's, every field that differs marked.
func diverged(st story) string {
	var m markup
	if st.divergence < 0 {
		m.elText("p", "The model and the system agreed after every step.", "class", "agreed")
		return m.String()
	}
	s := st.steps[st.divergence]
	m.open("h2")
	m.text("First divergence: ")
	m.elText("a", s.name(), "href", "#"+s.id(), "data-step", s.id())
	m.text(" · ")
	m.elText("code", s.text)
	m.end("h2")
	m.elText("p", "What the model predicted after the step, beside what the system showed. Every field that differs is marked.", "class", "hint")
	m.open("div", "class", "side-by-side")
	for _, side := range []struct {
		title      string
		answer     sim.Answer
		obs, other model.Observation
	}{
		{"the model predicted", s.outcome.Picture.Want, s.outcome.Picture.Predicted, s.outcome.Observed},
		{"the system showed", s.outcome.Answer, s.outcome.Observed, s.outcome.Picture.Predicted},
	} {
		m.open("div", "class", "side")
		m.elText("h3", side.title)
		m.open("p", "class", "answer")
		m.text("answer: ")
		class := "same"
		if s.outcome.Answer != s.outcome.Picture.Want {
			class = "differs"
		}
		m.elText("b", side.answer.String(), "class", class)
		m.end("p")
		rowsTable(&m, side.obs, side.other, false)
		tasksTable(&m, side.obs, side.other)
		m.end("div")
	}
	m.end("div")
	return m.String()
}

// stepStates is every step's section: its line, what it printed, the
// system's answer beside the model's, and the state of every row and
// task after it, with the model's value beside every field that
// differs.
func stepStates(st story) string {
	var m markup
	for _, s := range st.steps {
		out := s.outcome
		class := "state"
		if s.diverged {
			class += " diverged"
		}
		if s.violated {
			class += " violated"
		}
		m.open("section", "class", class, "id", s.id())
		m.open("h3")
		m.text(s.name() + " · ")
		m.elText("code", s.text)
		m.elText("span", " at "+clock(s.now), "class", "time")
		m.end("h3")
		m.open("p", "class", "answer")
		m.text("system: ")
		m.elText("b", out.Answer.String())
		m.text(" · model: ")
		class = "same"
		if out.Answer != out.Picture.Want {
			class = "differs"
		}
		m.elText("b", out.Picture.Want.String(), "class", class)
		if p := out.Picture; p.Fired != "" {
			m.text(" · fault: ")
			m.elText("b", string(p.Fired), "class", "fault")
		}
		if n := out.Picture.Requests; n > 0 {
			m.text(" · " + plural(n, "request") + " to the receiver")
		}
		m.end("p")
		// The step's line in words; the rest of its output is the state
		// below, and the scenario's text beside the diagram.
		said, _, _ := strings.Cut(s.output, "\n")
		m.elText("p", said, "class", "said")
		if s.mismatch {
			m.elText("p", "The file expects another output (-want +got):", "class", "hint")
			m.elText("pre", textdiff.Lines(s.want, s.output), "class", "diff")
		}
		rowsTable(&m, out.Observed, out.Picture.Predicted, true)
		tasksTable(&m, out.Observed, out.Picture.Predicted)
		m.end("section")
	}
	return m.String()
}

// rowsTable writes o's outbox rows; a field that differs from other's
// (the model's, or the system's) is marked, with other's value when
// showOther.
func rowsTable(m *markup, o, other model.Observation, showOther bool) {
	if len(o.Outbox) == 0 && len(o.Approvals) == 0 {
		m.elText("p", "outbox empty", "class", "empty")
		return
	}
	m.open("table", "class", "rows")
	m.WriteString("<thead><tr><th>key</th><th>state</th><th>attempts</th><th>remote</th><th>last error</th><th>lease</th><th>fence</th><th>next attempt</th></tr></thead><tbody>")
	theirs := map[string]model.Row{}
	for _, r := range other.Outbox {
		theirs[r.Key] = r
	}
	for _, r := range o.Outbox {
		t, ok := theirs[r.Key]
		if !ok {
			m.open("tr", "class", "only")
		} else {
			m.open("tr")
		}
		m.elText("td", short(r.Key), "class", "key")
		mine, theirs := rowFields(r), rowFields(t)
		for i, f := range mine {
			cell(m, f, theirs[i], ok, showOther)
		}
		m.end("tr")
	}
	for _, a := range o.Approvals {
		if rowOf(o, a.Key).Key == "" {
			m.open("tr", "class", "no-row")
			m.elText("td", short(a.Key), "class", "key")
			m.elText("td", "approval without an outbox row", "colspan", "7")
			m.end("tr")
		}
	}
	m.WriteString("</tbody>")
	m.end("table")
}

// field is one cell of a row: its value as shown.
type field struct{ name, value string }

// rowFields are r's cells after its key.
func rowFields(r model.Row) []field {
	lease := ""
	if r.LeaseOwner != "" {
		lease = oneLine(r.LeaseOwner) + " until " + clock(r.LeaseUntil)
	}
	remote := ""
	if r.RemoteID != 0 {
		remote = fmt.Sprint(r.RemoteID)
	}
	next := ""
	if r.NextAttemptAt != 0 {
		next = clock(r.NextAttemptAt)
	}
	return []field{{"state", r.State}, {"attempts", fmt.Sprint(r.Attempts)}, {"remote", remote}, {"last error", oneLine(r.LastError)},
		{"lease", lease}, {"fence", fmt.Sprint(r.Fence)}, {"next attempt", next}}
}

// cell writes a row's field, marked when the other side (which has the
// row when ok) shows another value.
func cell(m *markup, f, theirs field, ok, showOther bool) {
	if !ok || f.value == theirs.value {
		m.elText("td", f.value)
		return
	}
	m.open("td", "class", "differs")
	m.text(f.value)
	if showOther {
		m.elText("span", "model: "+cmp.Or(theirs.value, "none"), "class", "other")
	}
	m.end("td")
}

// tasksTable writes o's receiver tasks, a task other does not have
// marked.
func tasksTable(m *markup, o, other model.Observation) {
	if len(o.Tasks) == 0 {
		m.elText("p", "crm empty", "class", "empty")
		return
	}
	m.open("table", "class", "tasks")
	m.WriteString("<thead><tr><th>task</th><th>key</th><th>payload</th></tr></thead><tbody>")
	for _, t := range o.Tasks {
		found := false
		for _, u := range other.Tasks {
			found = found || u == t
		}
		if found {
			m.open("tr")
		} else {
			m.open("tr", "class", "only")
		}
		m.elText("td", fmt.Sprint(t.ID))
		m.elText("td", short(t.Key), "class", "key")
		m.elText("td", oneLine(t.Payload), "class", "payload")
		m.end("tr")
	}
	m.WriteString("</tbody>")
	m.end("table")
}

// legend says what the diagram's colours and shapes mean.
func legend() string {
	var m markup
	m.open("ul", "class", "legend")
	for _, l := range [][2]string{
		{"claim", "a claim: the app database leases a row to a worker (key, attempt, fence)"},
		{"send", "a request to the receiver, through the network (a dot), with the key and the attempt"},
		{"reply", "the receiver's answer; a cross where the network lost it"},
		{"settle", "what the worker records of it, under its claim's fence"},
		{"person", "a person: an approval, a repair (requeue, reconcile), a list of stale rows"},
		{"fault", "a fault where it took effect: a database busy or full, a lost COMMIT, a task of another system"},
		{"crash", "a crash or a restart; a restart of every process is a break across the lanes"},
		{"lease", "a lease: a bar on its holder's lane from the claim until it is released or runs out"},
		{"diverged", "the first step at which the system's answer or state differs from the model's"},
		{"violated", "the step that broke an invariant"},
	} {
		m.open("li")
		m.elText("span", "", "class", "swatch "+l[0])
		m.text(l[1])
		m.end("li")
	}
	m.end("ul")
	m.elText("p", "Keys are shown without "+model.KeyPrefix+". Each band is a step: hover for its output, click (or follow the link) for the state of every row and task after it.", "class", "hint")
	return m.String()
}
