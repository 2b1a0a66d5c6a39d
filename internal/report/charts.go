package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// Coverage is what an exploration reached, for its charts.
type Coverage struct {
	// Design is the design explored, Seed the run's seed, Transport and
	// Backend where it ran.
	Design    string
	Seed      uint64
	Transport string
	Backend   string
	// Stats is what the run counted.
	Stats *sim.Stats
}

// headline says what was explored.
func (c *Coverage) headline() string {
	return fmt.Sprintf("design %s: what %s reached", c.Design, words.HowMany(c.Stats.Sequences.Load(), "sequence"))
}

// transitions are the outbox transitions an exploration counts, in the
// order of the life of a row.
var transitions = []sim.Transition{sim.PendingToPending, sim.PendingToSent, sim.PendingToBlockedConflict, sim.PendingToBlockedBudget,
	sim.PendingToBlockedDeadline, sim.PendingToBlockedRetention, sim.PendingToBlockedRejected, sim.BlockedToPending, sim.BlockedToSent}

// bar is one bar of a chart. impossible, when set, says why the run
// could not reach it (its transport or backend cannot produce it): such
// a bar reads "not possible in this run", not "not reached", which would
// read as a gap in what the run covered.
type bar struct {
	label      string
	n          int
	impossible string
}

// charts draws the coverage as SVG bar charts: the faults that took
// effect, the outbox transitions, the worker's answers and the other
// steps', the input classes, the shapes, the rows' attempts and the
// backoff ceilings drawn after each attempt. Whatever the run did not
// reach has a bar of 0, marked; a fault its transport or backend cannot
// produce is marked as not possible in this run.
func (c *Coverage) charts() string {
	st := c.Stats
	var m markup
	m.open("h2")
	m.text("What the run reached")
	m.end("h2")
	m.elText("p", fmt.Sprintf("Design %s, seed %d, %s on %s: %s (and %s), %s. A bar of 0 is something the run never did; one its transport or backend cannot produce says it was not possible in this run.",
		c.Design, c.Seed, c.Transport, c.Backend, words.HowMany(st.Sequences.Load(), "sequence"), words.HowMany(st.ShrinkRuns.Load(), "shrink run"),
		words.HowMany(st.Steps.Load(), "step")), "class", "hint")
	m.open("div", "class", "charts")
	fs := listed(faults.StepMode.Kinds(), st.Faults)
	for i, b := range fs {
		switch k := faults.Kind(b.label); {
		case !sim.RunsOn(k, backend.Backend(c.Backend)):
			fs[i].impossible = "not on " + c.Backend
		case sim.HTTPOnly(k) && c.Transport != string(sim.HTTP):
			fs[i].impossible = "HTTP only"
		}
	}
	chart(&m, "Faults that took effect", "steps", fs)
	chart(&m, "Outbox transitions", "steps", listed(transitions, st.Transitions))
	chart(&m, "The worker's answers to deliveries", "steps", listed(nil, st.Results))
	chart(&m, "The other steps' answers", "steps", listed(nil, st.Phases))
	chart(&m, "Input classes of the approvals", "approvals", listed(sim.InputClasses, st.InputClasses))
	chart(&m, "Shapes", "steps after which it held", listed(sim.Shapes, st.Shapes))
	chart(&m, "Attempts, by their number", "attempts", attempts(st.Attempts))
	chart(&m, "Backoffs drawn after an attempt, by its ceiling", "backoffs", backoffs(st.Backoffs))
	m.end("div")
	return m.String()
}

// listed is a bar for every key of all, in its order, then for every
// other key of counts, in the order of their names.
func listed[K ~string](all []K, counts map[K]int) []bar {
	var bars []bar
	for _, k := range all {
		bars = append(bars, bar{label: string(k), n: counts[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(all, k) {
			bars = append(bars, bar{label: string(k), n: counts[k]})
		}
	}
	return bars
}

// attempts is a bar for every attempt number up to the highest counted
// (the third at least: the default budget).
func attempts(counts map[int]int) []bar {
	top := 3
	for n := range counts {
		top = max(top, n)
	}
	bars := make([]bar, 0, top)
	for n := 1; n <= top; n++ {
		bars = append(bars, bar{label: fmt.Sprintf("attempt %d", n), n: counts[n]})
	}
	return bars
}

// backoffs is a bar for every attempt and ceiling counted, by attempt
// and ceiling.
func backoffs(counts map[sim.BackoffCeiling]int) []bar {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b sim.BackoffCeiling) int {
		return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.Ceiling, b.Ceiling))
	})
	if len(keys) == 0 {
		return []bar{{label: "none drawn (backoff off in every sequence, or no transient failure)"}}
	}
	bars := make([]bar, 0, len(keys))
	for _, k := range keys {
		bars = append(bars, bar{label: fmt.Sprintf("after attempt %d, within %v", k.Attempt, k.Ceiling.Round(time.Millisecond)), n: counts[k]})
	}
	return bars
}

// chart draws bars as a horizontal bar chart titled title, each bar
// counting unit, twice: for a wide screen (and print), a row per bar,
// its label left of it; and for a phone, whose width the wide one would
// overrun (its counts cut off), each label on a line of its own above
// its bar. The page's style shows the one that fits.
func chart(m *markup, title, unit string, bars []bar) {
	top := 0
	for _, b := range bars {
		top = max(top, b.n)
	}
	m.open("figure", "class", "chart")
	m.elText("figcaption", title+" ("+unit+")")
	wideChart(m, title, bars, top)
	narrowChart(m, title, bars, top)
	m.end("figure")
}

// barText is what a bar says beside it, and its class: its count, or why
// it is 0.
func barText(b bar) (class, count string) {
	switch {
	case b.impossible != "":
		return "bar impossible", "not possible in this run (" + b.impossible + ")"
	case b.n == 0:
		return "bar zero", "0: not reached"
	}
	return "bar", fmt.Sprint(b.n)
}

// barLength is how long bar b is drawn when the longest, top, is drawn
// longest long.
func barLength(b bar, top, longest int) int {
	if top == 0 || b.n == 0 {
		return 0
	}
	return max(2, b.n*longest/top)
}

// textWidth is about how wide s is drawn in a chart: a little wider.
func textWidth(s string) int { return int(float64(len([]rune(s))) * charW) }

// wideChart draws the chart a row per bar: its label, right-aligned, left
// of the bar, its count right of it.
func wideChart(m *markup, title string, bars []bar, top int) {
	const (
		rowH   = 18
		barMax = 260
	)
	labelW, countW := 0, 110
	for _, b := range bars {
		labelW = max(labelW, textWidth(b.label))
		_, count := barText(b)
		countW = max(countW, textWidth(count)+12)
	}
	labelW = min(labelW+12, 380)
	width, height := labelW+max(barMax+110, countW), len(bars)*rowH+8
	m.open("svg", "xmlns", "http://www.w3.org/2000/svg", "class", "wide", "width", itoa(width), "height", itoa(height), "viewBox", fmt.Sprintf("0 0 %d %d", width, height), "role", "img", "aria-label", title)
	for i, b := range bars {
		y := 4 + i*rowH
		class, count := barText(b)
		w := barLength(b, top, barMax)
		m.open("g", "class", class)
		m.elText("title", b.label+": "+count)
		m.elText("text", b.label, "class", "bar-label", "x", itoa(labelW-8), "y", itoa(y+12), "text-anchor", "end")
		m.el("rect", "x", itoa(labelW), "y", itoa(y+2), "width", itoa(w), "height", itoa(rowH-5), "rx", "2")
		m.elText("text", count, "class", "bar-count", "x", itoa(labelW+w+6), "y", itoa(y+12))
		m.end("g")
	}
	m.end("svg")
}

// narrowChart draws the chart for a phone: each label on a line of its
// own, its bar (200 long at most) and count below it; as wide as its
// widest line, and scaled down by the page's style if a screen is
// narrower still.
func narrowChart(m *markup, title string, bars []bar, top int) {
	const (
		rowH   = 34
		barMax = 200
	)
	width := barMax + 60
	for _, b := range bars {
		_, count := barText(b)
		width = max(width, textWidth(b.label)+4, barLength(b, top, barMax)+6+textWidth(count)+4)
	}
	height := len(bars)*rowH + 4
	m.open("svg", "xmlns", "http://www.w3.org/2000/svg", "class", "narrow", "width", itoa(width), "height", itoa(height), "viewBox", fmt.Sprintf("0 0 %d %d", width, height), "role", "img", "aria-label", title)
	for i, b := range bars {
		y := 2 + i*rowH
		class, count := barText(b)
		w := barLength(b, top, barMax)
		m.open("g", "class", class)
		m.elText("title", b.label+": "+count)
		m.elText("text", b.label, "class", "bar-label", "x", "0", "y", itoa(y+12))
		m.el("rect", "x", "0", "y", itoa(y+17), "width", itoa(w), "height", "12", "rx", "2")
		x := w + 6
		if w == 0 {
			x = 0
		}
		m.elText("text", count, "class", "bar-count", "x", itoa(x), "y", itoa(y+27))
		m.end("g")
	}
	m.end("svg")
}
