package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	receiver "github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/system"
)

// jsonOutputs lists every JSON output of the command line, by its section
// in docs/json.md, with a function that produces real examples of it.
// Between them the examples must print every documented field, each with
// a value that is not null at least once. Documenting a new output is one
// section there and one entry here. An output of lines (work's log) is
// one JSON object per line, each with the fields of its event only.
var jsonOutputs = []struct {
	section string
	lines   bool
	outputs func(t *testing.T) []string
}{
	{"explore --json", false, func(t *testing.T) []string {
		return []string{
			mustRun(t, "explore", "--checks", "3", "--seed", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "explore", "--checks", "3", "--seed", "1", "--transport", "http", "--shard", "2/3", "--parallel", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir()),
		}
	}},
	{"explore --json, when the environment failed", false, func(t *testing.T) []string {
		// Nothing listens on port 1: the server is not running.
		code, stdout, stderr := runCLI(t, "explore", "--backend", "postgres", "--postgres-url", "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "--json")
		if code != 4 {
			t.Fatalf("explore on a server that does not run: exit %d, want 4: %s", code, stderr)
		}
		return []string{stdout}
	}},
	{"prove --json", false, func(t *testing.T) []string {
		// A bound of 50 is out of reach of a millisecond: the time limit
		// stops it, and it fails, printing what it completed.
		code, stopped, stderr := runCLI(t, "prove", "--depth", "50", "--time", "1ms", "--json", "--dir", t.TempDir())
		if code != 1 {
			t.Fatalf("prove stopped by its time limit: exit %d, want 1: %s", code, stderr)
		}
		return []string{
			mustRun(t, "prove", "--depth", "1", "--json", "--dir", t.TempDir()),
			mustRun(t, "prove", "--design", "no-lease", "--depth", "3", "--json", "--dir", t.TempDir()),
			stopped,
		}
	}},
	{"demo --json", false, func(t *testing.T) []string {
		return []string{mustRun(t, "demo", "--dir", filepath.Join(t.TempDir(), "demo"), "--json")}
	}},
	{"inspect --json", false, func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db")) // the same CRM before it held a task
		mustRun(t, "deliver", "--app", app, "--crm", crm)
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		mustRun(t, "reconcile", "case-105", "--app", app, "--absent", "--actor", "ann", "--reason", "not in the CRM")
		mustRun(t, "approve", "--app", app, "--case", "case-106", "--title", "Call back")
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline") // case-105 again: a last error
		lease(t, app, "w")                                                      // case-106
		return []string{
			mustRun(t, "inspect", "--app", app, "--json"),
			mustRun(t, "inspect", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "inspect", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{"check --json", false, func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		copyTo(t, crm, filepath.Join(dir, "empty.db"))
		mustRun(t, "deliver", "--app", app, "--crm", crm)
		return []string{
			mustRun(t, "check", "--app", app, "--json"),
			mustRun(t, "check", "--app", app, "--crm", crm, "--json"),
			problemJSON(t, "check", "--app", app, "--crm", filepath.Join(dir, "empty.db"), "--json"),
		}
	}},
	{"stale --json", false, func(t *testing.T) []string {
		dir := t.TempDir()
		app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		none := mustRun(t, "stale", "--app", app, "--older-than", "1h", "--json")
		for range 3 {
			mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
		}
		mustRun(t, "approve", "--app", app, "--case", "case-105", "--title", "Call back")
		lease(t, app, "w")
		return []string{none, attentionJSON(t, "stale", "--app", app, "--older-than", "0s", "--json")}
	}},
	{"designs --json", false, func(t *testing.T) []string {
		return []string{mustRun(t, "designs", "--json")}
	}},
	{"trial --json", false, func(t *testing.T) []string {
		return []string{passingTrial(t).stdout, brokenTrial(t).stdout}
	}},
	// Measuring the whole catalog takes seconds a seed: this is the
	// command's measuring on one cheap design (a tenth of a second).
	{"designs --measure --json", false, func(t *testing.T) []string {
		twoWrites, err := designs.Lookup("two-writes")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := measureDesigns(t.Context(), []designs.Design{twoWrites}, 1, backend.SQLite, "", 0, true, &b, io.Discard); err != nil {
			t.Fatal(err)
		}
		return []string{b.String()}
	}},
	{"check-receiver --json", false, func(t *testing.T) []string {
		code, none, stderr := runCLI(t, "check-receiver", notFound(t), "--json")
		if code != 1 || !strings.Contains(none, `"ok": false`) {
			t.Fatalf("check-receiver of an endpoint that is no receiver: exit %d, want 1 and ok false: %s%s", code, none, stderr)
		}
		return []string{mustRun(t, "check-receiver", servedCRM(t, 0), "--json"), none}
	}},
	// Two runs of work print the lines of a worker's start and stop and
	// of deliveries sent, retried and blocked; the lines no run can be
	// made to print on demand (a database that refuses a claim, a failure
	// after the attempt was counted) come from the pool's own logging.
	{"work --log-format json", true, func(t *testing.T) []string {
		dir := t.TempDir()
		app, other, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "other.db"), filepath.Join(dir, "crm.db")
		mustRun(t, "approve", "--app", app, "--case", "case-104", "--title", "Call back")
		mustRun(t, "approve", "--app", other, "--case", "case-105", "--title", "Call back")
		mustRun(t, "crm", "init", "--crm", crm)
		// A worker of a process that ended holds case-104's lease.
		ended := exec.Command(os.Args[0], "-test.run=^$")
		if err := ended.Run(); err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		lease(t, app, fmt.Sprintf("%s:%d:1", host, ended.Process.Pid))
		var lines []string
		for _, args := range [][]string{
			{"--app", app, "--crm", crm, "--metrics-addr", "127.0.0.1:0"},
			{"--app", other, "--crm-url", failingReceiver(t), "--max-attempts", "2", "--backoff-base", "0"},
		} {
			code, _, stderr := runCLI(t, append(append([]string{"work"}, args...), "--workers", "1", "--worker", "w", "--until-idle", "--log-format", "json")...)
			if code != 0 {
				t.Fatalf("work %v: exit %d: %s", args, code, stderr)
			}
			lines = append(lines, strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")...)
		}
		o, err := system.Open(t.Context(), app, system.Options{Worker: "w:1"})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		var b strings.Builder
		p := &pool{results: map[string]int{}, changed: make(chan struct{}), log: newLogger(&b, "json")}
		p.claimRefused(o, fmt.Errorf("%w: claiming the next row: database is locked", system.ErrBusy))
		p.report(t.Context(), o, nil, system.Delivery{}, &system.AttemptError{Key: system.KeyPrefix + "case-104", Attempt: 1, MaxAttempts: 3,
			Err: errors.New("local: recording the answer: database is busy")})
		return append(lines, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")...)
	}},
}

// failingReceiver is a receiver that states its contract and answers
// every POST /tasks 500: every delivery to it fails, transiently.
func failingReceiver(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/contract":
			json.NewEncoder(w).Encode(receiver.Contract{Identity: "failing", MaxKeyLength: receiver.MaxKeyLength, MaxBodyBytes: receiver.MaxBodyBytes})
		default:
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
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

// jsonDoc is a section of docs/json.md: its fields, in order, and what it
// says about each.
type jsonDoc struct {
	fields []string
	field  map[string]docField
}

// docField is what docs/json.md says about a field: its types (the
// alternatives of its type column), the values it takes when its meaning
// lists them all (`a`, `b` or `c`, with no … after them: for a map, its
// keys), and the values in its meaning written as JSON strings, with
// their quotes (`"1/1"`): examples that some output must print in it.
type docField struct {
	types    []string
	values   []*regexp.Regexp
	examples []string
}

func (f docField) isMap() bool {
	return slices.ContainsFunc(f.types, func(t string) bool { return strings.HasPrefix(t, "map") })
}

var (
	docSection = regexp.MustCompile("^## `([^`]+)`$")
	docRow     = regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+) \\| (.*) \\|$")
	// docValues is a list of two or more literals: `a`, `b` or `c`.
	docValues  = regexp.MustCompile("`[^`]+`(?:(?:, |, or | or )`[^`]+`)+")
	docLiteral = regexp.MustCompile("`([^`]+)`")
	// docExample is a JSON string in backticks: `"1/1"`.
	docExample = regexp.MustCompile("`(\"[^`]*\")`")
	// docWildcard, in a listed value, stands for any text: … or a
	// single capital letter (`worker N`).
	docWildcard = regexp.MustCompile(`…|\b[A-Z]\b`)
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
			docs[section] = jsonDoc{field: map[string]docField{}}
			continue
		}
		m := docRow.FindStringSubmatch(line)
		if m == nil || section == "" {
			continue
		}
		name, meaning := m[1], m[3]
		f := docField{types: strings.Split(strings.TrimSpace(m[2]), " or ")}
		if loc := docValues.FindStringIndex(meaning); loc != nil && !strings.HasPrefix(strings.TrimLeft(meaning[loc[1]:], " ,"), "…") {
			for _, v := range docLiteral.FindAllStringSubmatch(meaning[loc[0]:loc[1]], -1) {
				parts := docWildcard.Split(v[1], -1)
				for i := range parts {
					parts[i] = regexp.QuoteMeta(parts[i])
				}
				f.values = append(f.values, regexp.MustCompile("^"+strings.Join(parts, ".+")+"$"))
			}
		}
		for _, e := range docExample.FindAllStringSubmatch(meaning, -1) {
			var s string
			if err := json.Unmarshal([]byte(e[1]), &s); err != nil {
				t.Fatalf("docs/json.md, %s %s: the example %s is not a JSON string: %v", section, name, e[1], err)
			}
			f.examples = append(f.examples, s)
		}
		d := docs[section]
		d.fields = append(d.fields, name)
		d.field[name] = f
		docs[section] = d
	}
	return docs
}

// printed is one field of an output as printed: its path, as docs/json.md
// names it, and its value.
type printed struct {
	path  string
	value any
}

// jsonFields appends to out every field in v, by its path (an array's
// elements are not fields, their fields are), without going into maps
// and arrays of plain values. It checks that each object at a path has
// every field the documentation lists under that path, unless the output
// is lines (whose fields depend on the line's event).
func jsonFields(t *testing.T, v any, path string, doc jsonDoc, lines bool, out []printed) []printed {
	if path != "" && !strings.HasSuffix(path, "[]") {
		out = append(out, printed{path, v})
	}
	switch v := v.(type) {
	case map[string]any:
		if doc.field[path].isMap() {
			return out
		}
		for _, f := range doc.fields {
			parent, name := "", f
			if i := strings.LastIndex(f, "."); i >= 0 {
				parent, name = f[:i], f[i+1:]
			}
			if _, ok := v[name]; parent == path && !ok && !lines {
				t.Errorf("docs/json.md says fields never disappear, but %s has no %s: %v", cmp.Or(path, "the output"), f, v)
			}
		}
		for k, e := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out = jsonFields(t, e, p, doc, lines, out)
		}
	case []any:
		for _, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				out = jsonFields(t, e, path+"[]", doc, lines, out)
			}
		}
	}
	return out
}

// hasType reports whether v is of typ, one alternative of a type column:
// string, number, boolean, null, object, array (of objects), array of
// numbers, array of strings, map of numbers.
func hasType(v any, typ string) bool {
	all := func(xs []any, ok func(any) bool) bool {
		for _, x := range xs {
			if !ok(x) {
				return false
			}
		}
		return true
	}
	isString := func(x any) bool { _, ok := x.(string); return ok }
	isNumber := func(x any) bool { _, ok := x.(float64); return ok }
	isObject := func(x any) bool { _, ok := x.(map[string]any); return ok }
	arr, isArray := v.([]any)
	obj, _ := v.(map[string]any)
	switch typ {
	case "string":
		return isString(v)
	case "number":
		return isNumber(v)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "object":
		return isObject(v)
	case "array":
		return isArray && all(arr, isObject)
	case "array of numbers":
		return isArray && all(arr, isNumber)
	case "array of strings":
		return isArray && all(arr, isString)
	case "map of numbers":
		values := make([]any, 0, len(obj))
		for _, x := range obj {
			values = append(values, x)
		}
		return isObject(v) && all(values, isNumber)
	}
	return false
}

// TestJSONDocumentation checks docs/json.md against real output: every
// field printed is documented and every field documented is printed, not
// null at least once; every value has a documented type (null only where
// the type says "or null"); a field whose meaning lists its values prints
// no other; an example written as a JSON string is printed; and, but in
// an output of lines, no field disappears.
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
			for _, f := range doc.fields {
				for _, typ := range doc.field[f].types {
					if !slices.Contains([]string{"string", "number", "boolean", "null", "object", "array", "array of numbers", "array of strings", "map of numbers"}, typ) {
						t.Errorf("docs/json.md, %s: %s has the type %q, which this test does not know", o.section, f, typ)
					}
				}
			}
			var fields []printed
			for _, out := range o.outputs(t) {
				var v any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("not JSON: %v:\n%s", err, out)
				}
				if o.lines && !hasType(v, "object") {
					t.Errorf("a line that is not a JSON object: %s", out)
				}
				fields = jsonFields(t, v, "", doc, o.lines, fields)
			}
			notNull := map[string]bool{}
			for _, p := range fields {
				f, ok := doc.field[p.path]
				if !ok {
					t.Errorf("%s prints %s, which docs/json.md does not document", o.section, p.path)
					continue
				}
				notNull[p.path] = notNull[p.path] || p.value != nil
				if !slices.ContainsFunc(f.types, func(typ string) bool { return hasType(p.value, typ) }) {
					t.Errorf("docs/json.md says %s is %s, but %s printed %s", p.path, strings.Join(f.types, " or "), o.section, jsonText(p.value))
				}
				if len(f.values) == 0 {
					continue
				}
				var values []string
				switch v := p.value.(type) {
				case string:
					values = []string{v}
				case map[string]any:
					values = slices.Collect(maps.Keys(v))
				}
				for _, v := range values {
					if !slices.ContainsFunc(f.values, func(re *regexp.Regexp) bool { return re.MatchString(v) }) {
						t.Errorf("docs/json.md lists the values of %s, but %s printed %q, not among them", p.path, o.section, v)
					}
				}
			}
			for _, f := range doc.fields {
				if !notNull[f] {
					t.Errorf("docs/json.md documents %s, which %s did not print (but as null)", f, o.section)
				}
				for _, e := range doc.field[f].examples {
					if !slices.ContainsFunc(fields, func(p printed) bool { return p.path == f && p.value == e }) {
						t.Errorf("docs/json.md gives %q as a value of %s, which no example of %s printed", e, f, o.section)
					}
				}
			}
		})
	}
}

// jsonText is v as JSON, for a message.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
