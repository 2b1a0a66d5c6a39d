package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonOutputs lists every JSON output of the command line, by its section
// in docs/json.md, with a function that produces real examples of it.
// Between them the examples must print every documented field (a field
// that can be null needs one example where it is not). Documenting a new
// output is one section there and one entry here.
var jsonOutputs = []struct {
	section string
	outputs func(t *testing.T) []string
}{
	{"explore --json", func(t *testing.T) []string {
		return []string{
			cliJSON(t, "explore", "--checks", "3", "--seed", "1", "--json", "--dir", t.TempDir()),
			cliJSON(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir()),
		}
	}},
	{"demo --json", func(t *testing.T) []string {
		return []string{cliJSON(t, "demo", "--dir", filepath.Join(t.TempDir(), "demo"), "--json")}
	}},
	{"inspect --json", func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		cliJSON(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		cliJSON(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		cliJSON(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db")) // the same CRM before it held a task
		cliJSON(t, "deliver", "--app", app, "--crm", crm)
		cliJSON(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		cliJSON(t, "reconcile", "case-105", "--app", app, "--absent", "--actor", "ann", "--reason", "not in the CRM")
		lease(t, app, "w")
		return []string{
			cliJSON(t, "inspect", "--app", app, "--json"),
			cliJSON(t, "inspect", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "inspect", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{"check --json", func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		cliJSON(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		cliJSON(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db"))
		cliJSON(t, "deliver", "--app", app, "--crm", crm)
		return []string{
			cliJSON(t, "check", "--app", app, "--json"),
			cliJSON(t, "check", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "check", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{"stale --json", func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		cliJSON(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		cliJSON(t, "crm", "init", "--crm", crm)
		none := cliJSON(t, "stale", "--app", app, "--older-than", "1h", "--json")
		for range 3 {
			cliJSON(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		}
		cliJSON(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		lease(t, app, "w")
		return []string{none, attentionJSON(t, "stale", "--app", app, "--older-than", "0s", "--json")}
	}},
	{"designs --json", func(t *testing.T) []string {
		return []string{cliJSON(t, "designs", "--json")}
	}},
	{"trial --json", func(t *testing.T) []string {
		return []string{passingTrial(t).stdout, brokenTrial(t).stdout}
	}},
	// Measuring runs every fragile design to a shrunk failure (seconds per
	// seed), so this example is the command's printer on a measurement,
	// not a measuring run.
	{"designs --measure --json", func(t *testing.T) []string {
		var b bytes.Buffer
		m := measurement{Design: "two-writes", Seeds: 1, Found: 1, ShrunkSteps: []int{1}}
		if err := printMeasurements(&b, []measurement{m}, true); err != nil {
			t.Fatal(err)
		}
		return []string{b.String()}
	}},
	{"check-receiver --json", func(t *testing.T) []string {
		code, none, stderr := runCLI(t, "check-receiver", notFound(t), "--json")
		if code != 1 || !strings.Contains(none, `"ok": false`) {
			t.Fatalf("check-receiver of an endpoint that is no receiver: exit %d, want 1 and ok false: %s%s", code, none, stderr)
		}
		return []string{cliJSON(t, "check-receiver", servedCRM(t, 0), "--json"), none}
	}},
}

// cliJSON runs the command line, fails the test unless it exits 0, and
// returns its stdout.
func cliJSON(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// problemJSON runs the command line, fails the test unless it exits 1 for
// a problem with the files, and returns its stdout.
func problemJSON(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 1 || !strings.Contains(stdout, `"problems": [`) {
		t.Fatalf("%v: exit %d, want 1 and problems: %s%s", args, code, stdout, stderr)
	}
	return stdout
}

// attentionJSON runs the command line, fails the test unless it exits 3
// for something that needs a person, and returns its stdout.
func attentionJSON(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 3 {
		t.Fatalf("%v: exit %d, want 3: %s%s", args, code, stdout, stderr)
	}
	return stdout
}

// jsonDoc is a section of docs/json.md: its fields, and those that are
// maps (whose keys are data, not documented one by one).
type jsonDoc struct {
	fields []string
	maps   map[string]bool
}

var (
	docSection = regexp.MustCompile("^## `([^`]+)`$")
	docRow     = regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+) \\|")
)

// readJSONDoc parses docs/json.md into its sections.
func readJSONDoc(t *testing.T) map[string]jsonDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]jsonDoc{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		if m := docSection.FindStringSubmatch(line); m != nil {
			section = m[1]
			docs[section] = jsonDoc{maps: map[string]bool{}}
			continue
		}
		if m := docRow.FindStringSubmatch(line); m != nil && section != "" {
			d := docs[section]
			d.fields = append(d.fields, m[1])
			if strings.HasPrefix(m[2], "map") {
				d.maps[m[1]] = true
			}
			docs[section] = d
		}
	}
	return docs
}

// jsonFields adds to seen the path of every field in v, as docs/json.md
// names them (an array's elements are not fields, their fields are),
// without going into maps and arrays of plain values.
func jsonFields(v any, path string, maps map[string]bool, seen map[string]bool) {
	if path != "" && !strings.HasSuffix(path, "[]") {
		seen[path] = true
	}
	switch v := v.(type) {
	case map[string]any:
		if maps[path] {
			return
		}
		for k, e := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			jsonFields(e, p, maps, seen)
		}
	case []any:
		for _, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				jsonFields(e, path+"[]", maps, seen)
			}
		}
	}
}

func TestJSONDocumentation(t *testing.T) {
	t.Parallel()
	docs := readJSONDoc(t)
	var sections []string
	for _, o := range jsonOutputs {
		sections = append(sections, o.section)
	}
	for s := range docs {
		if !slices.Contains(sections, s) {
			t.Errorf("docs/json.md documents %q, which no test produces", s)
		}
	}
	for _, o := range jsonOutputs {
		t.Run(o.section, func(t *testing.T) {
			doc, ok := docs[o.section]
			if !ok {
				t.Fatalf("docs/json.md has no section ## `%s`", o.section)
			}
			seen := map[string]bool{}
			for _, out := range o.outputs(t) {
				var v any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("not JSON: %v:\n%s", err, out)
				}
				jsonFields(v, "", doc.maps, seen)
			}
			for f := range seen {
				if !slices.Contains(doc.fields, f) {
					t.Errorf("%s prints %s, which docs/json.md does not document", o.section, f)
				}
			}
			for _, f := range doc.fields {
				if !seen[f] {
					t.Errorf("docs/json.md documents %s, which %s did not print", f, o.section)
				}
			}
		})
	}
}
