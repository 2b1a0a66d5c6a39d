package report

import (
	"cmp"
	"fmt"
	"html"
	"strconv"
	"strings"
)

// The sequence diagram's geometry, in SVG user units (CSS pixels).
const (
	gutter    = 100 // the left column: step number and time
	laneWidth = 116
	headerH   = 40 // the lanes' names
	rowH      = 24 // one event
	bandPad   = 6  // above and below a band's events
	breakH    = 14 // a restart's break
	charW     = 6.4
)

// markup writes SVG and HTML with every text and attribute escaped.
type markup struct{ strings.Builder }

// tag writes <name attrs...> (closed with "/>" when selfClose); attrs
// are name, value pairs, written in order.
func (m *markup) tag(name string, selfClose bool, attrs ...string) {
	m.WriteString("<" + name)
	for i := 0; i+1 < len(attrs); i += 2 {
		m.WriteString(" " + attrs[i] + `="` + html.EscapeString(attrs[i+1]) + `"`)
	}
	if selfClose {
		m.WriteString("/>")
	} else {
		m.WriteString(">")
	}
}

// el writes an empty element.
func (m *markup) el(name string, attrs ...string) { m.tag(name, true, attrs...) }

// open writes a start tag, end its end tag.
func (m *markup) open(name string, attrs ...string) { m.tag(name, false, attrs...) }
func (m *markup) end(name string)                   { m.WriteString("</" + name + ">") }

// textEscaper escapes text between tags: quotes need no escape there.
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// text writes s escaped.
func (m *markup) text(s string) { textEscaper.WriteString(m, s) }

// elText writes <name attrs>s</name>.
func (m *markup) elText(name, s string, attrs ...string) {
	m.open(name, attrs...)
	m.text(s)
	m.end(name)
}

func itoa(n int) string { return strconv.Itoa(n) }

// laneX is the x of lane i's line.
func laneX(i int) int { return gutter + i*laneWidth + laneWidth/2 }

// band is where a step's band lies.
type band struct{ y, h int }

// bands lays the steps out top to bottom, each as high as its events.
func bands(steps []step) []band {
	y := headerH + 8
	out := make([]band, len(steps))
	for i, s := range steps {
		n := len(s.events)
		if s.note != "" || n == 0 {
			n++
		}
		h := n*rowH + 2*bandPad
		if s.restart {
			h += breakH
		}
		out[i] = band{y, h}
		y += h
	}
	return out
}

// diagram draws the story as an SVG sequence diagram: a lane per actor,
// a band per step (a link to the step's state), arrows and marks, the
// leases as bars, restarts as breaks, the first divergence and the broken
// invariant highlighted.
func diagram(st story) string {
	bs := bands(st.steps)
	width := gutter + len(st.lanes)*laneWidth + 8
	for _, s := range st.steps { // room for the widest label, which no lane may hold
		for _, e := range s.events {
			width = max(width, gutter+labelWidth(e.label)+4)
		}
	}
	height := headerH + 16
	if len(bs) > 0 {
		last := bs[len(bs)-1]
		height = last.y + last.h + 12
	}
	var m markup
	laneHeads(&m, st, width)
	m.open("svg", "xmlns", "http://www.w3.org/2000/svg", "class", "diagram", "width", itoa(width), "height", itoa(height),
		"viewBox", fmt.Sprintf("0 0 %d %d", width, height), "role", "img", "aria-labelledby", "diagram-title")
	m.elText("title", "Sequence diagram of the run: one lane per actor, one band per step", "id", "diagram-title")
	m.WriteString(`<defs><marker id="arrowhead" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="head"/></marker></defs>`)
	// The lanes: a name on top, a line down the whole diagram.
	m.open("g", "class", "lanes")
	for i, l := range st.lanes {
		x := laneX(i)
		m.el("line", "class", "lane lane-"+laneClass(l.kind), "x1", itoa(x), "y1", itoa(headerH-6), "x2", itoa(x), "y2", itoa(height-4))
		m.el("rect", "class", "lane-head lane-"+laneClass(l.kind), "x", itoa(x-laneWidth/2+6), "y", "6", "width", itoa(laneWidth-12), "height", itoa(headerH-14), "rx", "4")
		m.elText("text", l.label, "class", "lane-name", "x", itoa(x), "y", itoa(headerH/2+4), "text-anchor", "middle", "data-lane", l.label)
	}
	m.end("g")
	// The bands, behind the leases and the events.
	for i, s := range st.steps {
		b := bs[i]
		class := "band"
		switch {
		case s.violated && s.diverged:
			class += " violated diverged"
		case s.violated:
			class += " violated"
		case s.diverged:
			class += " diverged"
		}
		if s.mismatch {
			class += " mismatch"
		}
		m.el("rect", "class", class, "x", "0", "y", itoa(b.y), "width", itoa(width), "height", itoa(b.h), "data-band", s.id())
	}
	// The leases.
	m.open("g", "class", "leases")
	for _, l := range st.leases {
		x := laneX(l.lane) + 5
		y1 := bs[l.from].y + bs[l.from].h/2
		y2 := height - 8
		if l.to < len(st.steps) {
			y2 = bs[l.to].y + bs[l.to].h/2
		}
		m.open("g", "class", "lease "+strings.ReplaceAll(l.end, " ", "-"))
		m.elText("title", fmt.Sprintf("lease on %s, fence %d, until %s: %s", short(l.key), l.fence, clock(l.until), cmp.Or(l.end, "held at the end")))
		m.el("rect", "class", "lease-bar", "x", itoa(x), "y", itoa(y1), "width", "7", "height", itoa(max(y2-y1, 4)), "rx", "2")
		m.elText("text", fmt.Sprintf("fence %d", l.fence), "class", "lease-label", "x", itoa(x+10), "y", itoa(y1+10))
		if l.end == "ran out" {
			m.el("path", "class", "lease-end", "d", fmt.Sprintf("M%d,%d l11,0", x-2, y2))
			m.elText("text", "lease ran out ("+clock(l.until)+")", "class", "lease-label", "x", itoa(x+10), "y", itoa(y2-3))
		}
		m.end("g")
	}
	m.end("g")
	// The steps.
	for i, s := range st.steps {
		drawStep(&m, st, s, bs[i], width)
	}
	m.end("svg")
	return m.String()
}

// laneHeads draws the lanes' names alone, as the diagram width wide
// draws them at its top: on a small screen, where the diagram's box
// scrolls both ways, the page's style keeps them at the box's top, over
// the diagram's own, so that every lane a band crosses stays named.
func laneHeads(m *markup, st story, width int) {
	m.open("svg", "xmlns", "http://www.w3.org/2000/svg", "class", "lanes-head", "width", itoa(width), "height", itoa(headerH),
		"viewBox", fmt.Sprintf("0 0 %d %d", width, headerH), "aria-hidden", "true")
	for i, l := range st.lanes {
		x := laneX(i)
		m.el("rect", "class", "lane-head lane-"+laneClass(l.kind), "x", itoa(x-laneWidth/2+6), "y", "6", "width", itoa(laneWidth-12), "height", itoa(headerH-14), "rx", "4")
		m.elText("text", l.label, "class", "lane-head-name", "x", itoa(x), "y", itoa(headerH/2+4), "text-anchor", "middle")
	}
	m.end("svg")
}

// drawStep draws one step's band: its number and time, a link to its
// state, its events, a restart's break.
func drawStep(m *markup, st story, s step, b band, width int) {
	class := "step"
	if s.diverged {
		class += " is-diverged"
	}
	if s.violated {
		class += " is-violated"
	}
	m.open("a", "href", "#"+s.id(), "class", class, "data-step", s.id())
	m.elText("title", s.name()+": "+s.text+"\n"+s.output)
	m.el("rect", "class", "hit", "x", "0", "y", itoa(b.y), "width", itoa(width), "height", itoa(b.h))
	label := "·"
	if s.number > 0 {
		label = itoa(s.number)
	}
	m.elText("text", label, "class", "num", "x", "10", "y", itoa(b.y+bandPad+16))
	m.elText("text", clock(s.now), "class", "time", "x", "30", "y", itoa(b.y+bandPad+16))
	switch {
	case s.violated && s.diverged:
		m.elText("text", "diverged · broke", "class", "flag", "x", "10", "y", itoa(b.y+bandPad+30))
	case s.violated:
		m.elText("text", "broke an invariant", "class", "flag", "x", "10", "y", itoa(b.y+bandPad+30))
	case s.diverged:
		m.elText("text", "first divergence", "class", "flag", "x", "10", "y", itoa(b.y+bandPad+30))
	}
	y := b.y + bandPad + rowH/2 + 4
	if s.note != "" {
		x1, x2 := laneX(0)-laneWidth/2+8, laneX(len(st.lanes)-1)+laneWidth/2-8
		m.el("rect", "class", "note", "x", itoa(x1), "y", itoa(y-rowH/2+1), "width", itoa(x2-x1), "height", itoa(rowH-4), "rx", "3")
		m.elText("text", s.note, "class", "note-text", "x", itoa((x1+x2)/2), "y", itoa(y+3), "text-anchor", "middle")
		y += rowH
	}
	for _, e := range s.events {
		drawEvent(m, e, y, width)
		y += rowH
	}
	if s.restart {
		drawBreak(m, b.y+b.h-breakH/2-2, width)
	}
	m.end("a")
}

// labelWidth is about how wide an event's label is drawn, its mark's
// rounded ends included: a little wider than it is, never narrower.
func labelWidth(label string) int { return int(float64(len([]rune(label)))*charW) + 14 }

// within is the centre x of a label w wide, moved as little as it takes
// to lie inside a diagram width wide and right of its gutter (the steps'
// numbers and times): a mark on the last lane, or a long label on the
// first, would be cut off at the diagram's edge or cover a step's time.
func within(x, w, width int) int { return max(min(x, width-w/2-2), gutter+w/2) }

// drawEvent draws an arrow with its label above it, or a mark on a lane,
// at height y, in a diagram width wide.
func drawEvent(m *markup, e event, y, width int) {
	if e.mark() {
		w := labelWidth(e.label)
		x := within(laneX(e.from), w, width)
		m.open("g", "class", "mark "+e.class)
		m.el("rect", "x", itoa(x-w/2), "y", itoa(y-rowH/2+2), "width", itoa(w), "height", itoa(rowH-6), "rx", "9")
		m.elText("text", e.label, "x", itoa(x), "y", itoa(y+3), "text-anchor", "middle")
		m.end("g")
		return
	}
	x1, x2 := laneX(e.from), laneX(e.to)
	dir := 1
	if x2 < x1 {
		dir = -1
	}
	m.open("g", "class", "arrow "+e.class)
	end := x2 - dir*2
	if e.lost {
		end = x2 - dir*7
	}
	attrs := []string{"x1", itoa(x1 + dir*6), "y1", itoa(y + 4), "x2", itoa(end), "y2", itoa(y + 4)}
	if !e.lost {
		attrs = append(attrs, "marker-end", "url(#arrowhead)")
	}
	m.el("line", attrs...)
	if e.via >= 0 {
		m.el("circle", "class", "via", "cx", itoa(laneX(e.via)), "cy", itoa(y+4), "r", "3")
	}
	if e.lost {
		m.el("path", "class", "lost", "d", fmt.Sprintf("M%d,%d l10,10 m0,-10 l-10,10", x2-5, y-1))
	}
	m.elText("text", e.label, "x", itoa(within((x1+x2)/2, labelWidth(e.label), width)), "y", itoa(y), "text-anchor", "middle")
	m.end("g")
}

// drawBreak draws a restart: a zigzag across the whole diagram.
func drawBreak(m *markup, y, width int) {
	var d strings.Builder
	fmt.Fprintf(&d, "M%d,%d", gutter-8, y)
	for x, up := gutter, true; x < width; x, up = x+10, !up {
		dy := 4
		if up {
			dy = -4
		}
		fmt.Fprintf(&d, " L%d,%d", x, y+dy)
	}
	m.el("path", "class", "break", "d", d.String())
	m.elText("text", "restart", "class", "break-label", "x", "10", "y", itoa(y+4))
}

// laneClass is the CSS class suffix of a lane of kind k.
func laneClass(k laneKind) string {
	return [...]string{"person", "app", "worker", "network", "receiver", "clock"}[k]
}
