package textdiff

import (
	"fmt"
	"reflect"
	"strings"
)

// Values shows how two values of the same type differ, as Lines does for
// texts: each is written one line per field, and a list one line per
// element, in Go-like syntax (strings quoted), and the lines are
// compared. Unchanged lines more than context lines away from a change
// are left out, a run of them shown as one line "  …"; a list's header
// line is always kept, to say where a change is. It returns "" when
// both are written alike.
//
// Unlike go-cmp's Diff, whose spacing varies from process to process on
// purpose (so that nobody depends on its output), the same two values
// give the same bytes in every run: two explorations with the same seed
// print the same terminal output.
func Values(want, got any, context int) string {
	diff := Lines(render(want), render(got))
	if diff == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimSuffix(diff, "\n"), "\n")
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l[0] != ' ' {
			for j := max(0, i-context); j <= min(len(lines)-1, i+context); j++ {
				keep[j] = true
			}
		}
		keep[i] = keep[i] || len(l) > 1 && l[1] != ' ' // a header
	}
	var out strings.Builder
	for i, l := range lines {
		switch {
		case keep[i]:
			out.WriteString(strings.TrimSuffix(l, "\n"))
			out.WriteByte('\n')
		case i == 0 || keep[i-1]:
			out.WriteString("   …\n")
		}
	}
	return out.String()
}

// render writes v one line per field (a struct's), and a list one line
// per element, indented under its field's name (under its type's, for v
// a list).
func render(v any) string {
	var b strings.Builder
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Struct {
		b.WriteString(rv.Type().String() + ":")
		list(&b, "  ", rv)
		return strings.TrimSuffix(b.String(), "\n")
	}
	t := rv.Type()
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			continue
		}
		f := rv.Field(i)
		if f.Kind() == reflect.Slice || f.Kind() == reflect.Array {
			b.WriteString(t.Field(i).Name + ":")
			list(&b, "  ", f)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Field(i).Name, value(f))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// list writes the elements of the list v one a line, each after indent;
// nil and an empty list, which differ, as "nil" and "[]".
func list(b *strings.Builder, indent string, v reflect.Value) {
	switch {
	case v.Kind() == reflect.Slice && v.IsNil():
		b.WriteString(" nil\n")
		return
	case v.Len() == 0:
		b.WriteString(" []\n")
		return
	}
	b.WriteByte('\n')
	for i := range v.Len() {
		b.WriteString(indent + value(v.Index(i)) + "\n")
	}
}

// value writes v on one line: what its String method says, if it has
// one; a string quoted; a struct as {Name: value, …} with its exported
// fields; anything else as %v (a pointer would show its address: the
// values compared hold none).
func value(v reflect.Value) string {
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	switch v.Kind() {
	case reflect.String:
		return fmt.Sprintf("%q", v.String())
	case reflect.Struct:
		var fields []string
		t := v.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fields = append(fields, t.Field(i).Name+": "+value(v.Field(i)))
			}
		}
		return "{" + strings.Join(fields, ", ") + "}"
	case reflect.Slice, reflect.Array:
		var elems []string
		for i := range v.Len() {
			elems = append(elems, value(v.Index(i)))
		}
		return "[" + strings.Join(elems, ", ") + "]"
	}
	return fmt.Sprintf("%v", v.Interface())
}
