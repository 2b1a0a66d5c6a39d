package running

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"time"
)

// Page is what a running run's report shows besides the run: how often
// its schedule reproduced the failure, and the command that reproduces
// it.
type Page struct {
	Result
	Reproduced, Runs int
	Reproduce        string
}

// reportPage is one self-contained HTML page: the verdict, a table with
// a column per lane (the app, each boot, each named worker, the receiver,
// the harness) and
// a row per thing that happened, by virtual time, and the schedule. It
// needs no script and no network; a narrow screen scrolls the table
// sideways under its sticky clock column.
var reportPage = template.Must(template.New("running").Funcs(template.FuncMap{
	"at":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"inc": func(i int) int { return i + 1 },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Schedule.Design}} on {{.Schedule.Backend}}: {{if .Violation}}{{.Violation.Check}} broke{{else}}every check held{{end}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1rem;color:#222}
h1{font-size:1.2rem}
.verdict{padding:.5rem .75rem;border-left:4px solid #b00;background:#fff4f4}
.ok{border-color:#080;background:#f4fff4}
.wrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ddd;padding:.25rem .4rem;vertical-align:top;min-width:9rem}
th{background:#f0f0f0;position:sticky;top:0}
td.at,th.at{position:sticky;left:0;background:#fafafa;min-width:5rem;white-space:nowrap}
tr.broke td{background:#ffe0e0}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}
</style></head><body>
<h1>{{.Schedule.Design}} on {{.Schedule.Backend}}</h1>
{{with .Violation}}<p class="verdict">{{.Check}} broke at {{at .At}} of virtual time: {{.Detail}}</p>
{{else}}<p class="verdict ok">every history check held</p>{{end}}
{{if .Runs}}<p>The same schedule {{if .Reproduced}}broke a check in {{.Reproduced}} of {{.Runs}} runs{{else}}broke nothing in {{.Runs}} more runs: goroutine scheduling decides it, and this is the run that broke{{end}}.</p>{{end}}
{{if .Reproduce}}<p>To keep it: <code>{{.Reproduce}}</code></p>{{end}}
<div class="wrap"><table>
<thead><tr><th class="at">time</th>{{range .Lanes}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{$lanes := .Lanes}}{{$last := len .Timeline}}{{range $i, $e := .Timeline}}
<tr{{if and $.Violation (eq (inc $i) $last)}} class="broke"{{end}}><td class="at">{{at $e.At}}</td>{{range $lanes}}<td>{{if eq . $e.Lane}}{{if $e.From}}from {{$e.From}}: {{end}}{{$e.Text}}{{end}}</td>{{end}}</tr>{{end}}
</tbody></table></div>
<h2>The schedule</h2>
<pre>{{.Schedule}}</pre>
</body></html>
`))

// WriteReport writes p as an HTML page at path, making its folder.
func WriteReport(path string, p Page) error {
	var b bytes.Buffer
	if err := reportPage.Execute(&b, p); err != nil {
		return fmt.Errorf("running: writing the report: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
