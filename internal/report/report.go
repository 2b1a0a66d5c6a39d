// Package report writes a run of the harness as one self-contained HTML
// page that a person reads: a sequence diagram of the steps (a lane per
// actor, arrows with the key and the attempt, faults where they took
// effect, leases as bars, restarts as breaks), the first divergence with
// the model's prediction and the system's observation side by side, the
// broken invariant in words, the state of every row and task after every
// step, the scenario text with each line linked to its step, the command
// that reproduces it, and, for an exploration, what the run reached as
// bar charts.
//
// The page needs no network: its style and script are embedded in it.
// The diagram is SVG and every step's state is in the page, so that it
// reads without JavaScript and prints; the script only adds a panel that
// shows a step's state when the step is clicked. The same input gives
// the same bytes.
package report

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/violation"
	"github.com/outboxlab/handoff/internal/words"
)

//go:embed assets
var assets embed.FS

// page is the page's template.
var page = template.Must(template.New("page.html").ParseFS(assets, "assets/page.html"))

// Input is what a report shows.
type Input struct {
	// Run is the steps and what each did; Violation the invariant its
	// step broke, nil when none did.
	Run       sim.Run
	Violation *violation.Violation
	// Scenario is the scenario file the run replays (or that replays
	// it): its cases are the run's steps, in order; it may hold more,
	// which did not run. Its Name names it on the page.
	Scenario sim.Scenario
	// Mismatched are the indexes of the steps whose output differs from
	// the scenario file's.
	Mismatched []int
	// Reproduce is the command that reproduces the run; "" for none.
	Reproduce string
	// Coverage, if not nil, is what an exploration reached, shown as
	// charts.
	Coverage *Coverage
}

// FromFailure is the Input of a failure the harness found, with the
// scenario file that replays it and the command that reproduces it.
func FromFailure(f *sim.Failure, reproduce string) (Input, error) {
	sc, err := sim.ParseScenario("the minimal scenario", f.Scenario(f.Header()...))
	if err != nil {
		return Input{}, fmt.Errorf("handoff: the failure's scenario: %w", err)
	}
	if f.Unshrunk {
		sc.Name = "the scenario as found"
	}
	v := f.Violation
	return Input{Run: f.Run, Violation: &v, Scenario: sc, Reproduce: reproduce}, nil
}

// Write writes in's page to w.
func Write(w io.Writer, in Input) error {
	var b bytes.Buffer
	if err := page.Execute(&b, newView(in)); err != nil {
		return fmt.Errorf("handoff: writing the report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteFile writes in's page to the file at path, making its folder,
// and returns the path.
func WriteFile(path string, in Input) (string, error) {
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("handoff: %w", err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("handoff: %w", err)
	}
	return path, nil
}

// Beside is the path of the report beside a scenario file: its name with
// .html for .txt.
func Beside(scenarioPath string) string {
	return strings.TrimSuffix(scenarioPath, filepath.Ext(scenarioPath)) + ".html"
}

// view is what the page's template reads.
type view struct {
	Title     string
	Headline  string
	Invariant string
	Detail    string
	Reproduce string
	Design    string
	Summary   string
	Diagram   template.HTML
	Legend    template.HTML
	Scenario  template.HTML
	File      string
	Diverged  template.HTML
	Steps     template.HTML
	Coverage  template.HTML
	Style     template.CSS
	Script    template.JS
}

// newView lays out in for the page.
func newView(in Input) view {
	css, _ := assets.ReadFile("assets/report.css")
	js, _ := assets.ReadFile("assets/report.js")
	v := view{Style: template.CSS(css), Script: template.JS(js), Reproduce: in.Reproduce, Design: in.Run.Design, File: in.Scenario.Name}
	st := tell(in.Run, in.Mismatched)
	for i := range min(len(st.steps), len(in.Scenario.Cases)) {
		st.steps[i].want = in.Scenario.Cases[i].Want
	}
	switch {
	case in.Violation != nil:
		at := ""
		if st.violation >= 0 {
			at = " at " + st.steps[st.violation].name()
		}
		v.Headline = fmt.Sprintf("design %s broke invariant %d%s", in.Run.Design, in.Violation.Invariant, at)
		v.Invariant = fmt.Sprintf("Invariant %d: %s.", in.Violation.Invariant, in.Violation.Name)
		v.Detail = in.Violation.Detail
	case len(in.Mismatched) > 0:
		v.Headline = fmt.Sprintf("%s: %s from the file's", cmp.Or(in.Scenario.Name, "the scenario"), words.Agree(len(in.Mismatched), "output", "differs", "differ"))
	case len(in.Run.Steps) > 0:
		v.Headline = fmt.Sprintf("design %s kept every invariant in %s", in.Run.Design, words.HowMany(in.Run.Length(), "step"))
	case in.Coverage != nil:
		v.Headline = in.Coverage.headline()
		v.Design = in.Coverage.Design
	}
	v.Title = "handoff: " + v.Headline
	if len(in.Run.Steps) > 0 {
		v.Summary = summary(st)
		v.Diagram = template.HTML(diagram(st))
		v.Legend = template.HTML(legend())
		v.Scenario = template.HTML(scenarioText(in.Scenario, st))
		v.Diverged = template.HTML(diverged(st))
		v.Steps = template.HTML(stepStates(st))
	}
	if in.Coverage != nil {
		v.Coverage = template.HTML(in.Coverage.charts())
	}
	return v
}

// summary says in a line what the diagram holds.
func summary(st story) string {
	workers := 0
	for _, l := range st.lanes {
		if l.kind == workerLane {
			workers++
		}
	}
	steps := 0
	for _, s := range st.steps {
		if s.number > 0 {
			steps++
		}
	}
	return fmt.Sprintf("%s, %s, %s over %s; the virtual clock from %s to %s.", words.HowMany(steps, "step"), words.HowMany(workers, "worker"),
		words.HowMany(len(st.leases), "lease"), st.transport, clock(st.steps[0].now), clock(st.steps[len(st.steps)-1].now))
}
