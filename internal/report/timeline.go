package report

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxlab/handoff/internal/running"
)

// Timeline is a run of the running mode as its page shows it: the run,
// how often its schedule reproduced the failure, and the command that
// keeps it.
type Timeline struct {
	running.Result
	Reproduced, Runs int
	Reproduce        string
}

// timelinePage draws a Timeline as one self-contained HTML page, in the
// style sheet of a step run's report: the verdict, a table with a column
// per lane (the app, each boot, each named worker, the receiver, the
// harness) and a row per thing that happened, by virtual time, and the
// schedule. It needs no script and no network.
var timelinePage = template.Must(template.New("timeline.html").Funcs(template.FuncMap{
	"at":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"inc": func(i int) int { return i + 1 },
}).ParseFS(assets, "assets/timeline.html"))

// WriteTimeline writes t as an HTML page at path, making its folder.
func WriteTimeline(path string, t Timeline) error {
	css, err := assets.ReadFile("assets/report.css")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	// The page's fields are the Timeline's, and the Result's methods
	// (Lanes, Timeline) among them, beside the style sheet.
	view := struct {
		running.Result
		Reproduced, Runs int
		Reproduce        string
		Style            template.CSS
	}{t.Result, t.Reproduced, t.Runs, t.Reproduce, template.CSS(css)}
	if err := timelinePage.Execute(&b, view); err != nil {
		return fmt.Errorf("report: drawing the timeline: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
