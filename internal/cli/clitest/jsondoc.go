package clitest

import (
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/internal/cli"
)

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
func readJSONDoc(t *testing.T, path string) map[string]jsonDoc {
	t.Helper()
	b, err := os.ReadFile(path)
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

// JSONOutput is one JSON output of a program, by its section in
// docs/json.md (which starts with the command's name), with a function
// that produces real examples of it. An output of Lines (work's log) is
// one JSON object per line, each with the fields of its event only.
type JSONOutput struct {
	Section string
	Lines   bool
	Outputs func(t *testing.T) []string
}

// JSONDocumented checks docs/json.md (at path) against real output of the
// registered program: every section of one of its commands is among
// outputs; every field printed is documented and every field documented
// is printed, not null at least once; every value has a documented type
// (null only where the type says "or null"); a field whose meaning lists
// its values prints no other; an example written as a JSON string is
// printed; and, but in an output of lines, no field disappears. It runs
// every command of outputs, some of them searches, so -short leaves it
// to go test ./....
func JSONDocumented(t *testing.T, path string, outputs []JSONOutput) {
	if testing.Short() {
		t.Skip("-short: the commands that print each documented JSON output; run without -short")
	}
	docs := readJSONDoc(t, path)
	var sections []string
	for _, o := range outputs {
		sections = append(sections, o.Section)
	}
	for s := range docs {
		if _, ok := cli.Lookup(strings.Fields(s)[0]); ok && !slices.Contains(sections, s) {
			t.Errorf("docs/json.md documents %q, which no test produces", s)
		}
	}
	for _, o := range outputs {
		t.Run(o.Section, func(t *testing.T) {
			doc, ok := docs[o.Section]
			if !ok {
				t.Fatalf("docs/json.md has no section ## `%s`", o.Section)
			}
			for _, f := range doc.fields {
				for _, typ := range doc.field[f].types {
					if !slices.Contains([]string{"string", "number", "boolean", "null", "object", "array", "array of numbers", "array of strings", "map of numbers"}, typ) {
						t.Errorf("docs/json.md, %s: %s has the type %q, which this test does not know", o.Section, f, typ)
					}
				}
			}
			var fields []printed
			for _, out := range o.Outputs(t) {
				var v any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("not JSON: %v:\n%s", err, out)
				}
				if o.Lines && !hasType(v, "object") {
					t.Errorf("a line that is not a JSON object: %s", out)
				}
				fields = jsonFields(t, v, "", doc, o.Lines, fields)
			}
			notNull := map[string]bool{}
			for _, p := range fields {
				f, ok := doc.field[p.path]
				if !ok {
					t.Errorf("%s prints %s, which docs/json.md does not document", o.Section, p.path)
					continue
				}
				notNull[p.path] = notNull[p.path] || p.value != nil
				if !slices.ContainsFunc(f.types, func(typ string) bool { return hasType(p.value, typ) }) {
					t.Errorf("docs/json.md says %s is %s, but %s printed %s", p.path, strings.Join(f.types, " or "), o.Section, jsonText(p.value))
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
						t.Errorf("docs/json.md lists the values of %s, but %s printed %q, not among them", p.path, o.Section, v)
					}
				}
			}
			for _, f := range doc.fields {
				if !notNull[f] {
					t.Errorf("docs/json.md documents %s, which %s did not print (but as null)", f, o.Section)
				}
				for _, e := range doc.field[f].examples {
					if !slices.ContainsFunc(fields, func(p printed) bool { return p.path == f && p.value == e }) {
						t.Errorf("docs/json.md gives %q as a value of %s, which no example of %s printed", e, f, o.Section)
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
