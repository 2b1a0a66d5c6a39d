// Package line is the syntax that the scenario language and the running
// mode's schedules share: a line is a directive and key=value arguments,
//
//	approve case=case-1 title="Call about the approved repair plan"
//
// where a value that is not a plain token is Go-quoted. Parse reads a
// line and String prints one back; neither knows a directive or an
// argument, which each language checks itself. An error here says what is
// wrong with the line alone: the language that reads it wraps it with its
// own error and the file and line number.
package line

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Arg is one key=value argument of a line.
type Arg struct {
	Key, Value string
}

// Line is a directive and its arguments, in the order written. A Line
// prints as the text that parses back to it.
type Line struct {
	Directive string
	Args      []Arg
}

// New builds a line from a directive and key, value pairs.
func New(directive string, keyValues ...string) Line {
	l := Line{Directive: directive}
	for i := 0; i+1 < len(keyValues); i += 2 {
		l.Args = append(l.Args, Arg{keyValues[i], keyValues[i+1]})
	}
	return l
}

// Arg returns the value of key and whether the line has it.
func (l Line) Arg(key string) (string, bool) {
	for _, a := range l.Args {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// With returns l with the argument key=value added after the others.
func (l Line) With(key, value string) Line {
	l.Args = append(l.Args[:len(l.Args):len(l.Args)], Arg{key, value})
	return l
}

// Only returns an error naming the first argument of l outside allowed,
// and what l's directive takes.
func (l Line) Only(allowed ...string) error {
	for _, a := range l.Args {
		found := false
		for _, k := range allowed {
			found = found || a.Key == k
		}
		if !found {
			return fmt.Errorf("%s takes no argument %q (it takes %s)", l.Directive, a.Key, orNone(allowed))
		}
	}
	return nil
}

func orNone(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// String prints l. Values that are not plain tokens are Go-quoted, so
// white space, quotes and invalid UTF-8 survive the trip.
func (l Line) String() string {
	var b strings.Builder
	b.WriteString(l.Directive)
	for _, a := range l.Args {
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteByte('=')
		if isPlain(a.Value) {
			b.WriteString(a.Value)
		} else {
			b.WriteString(strconv.Quote(a.Value))
		}
	}
	return b.String()
}

func isPlain(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '=' || c == '#' {
			return false
		}
	}
	return true
}

// Parse reads one line of text.
func Parse(text string) (Line, error) {
	rest := strings.TrimSpace(text)
	directive, rest, _ := strings.Cut(rest, " ")
	if directive == "" {
		return Line{}, errors.New("empty directive")
	}
	l := Line{Directive: directive}
	for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return Line{}, fmt.Errorf("want key=value, got %q", rest)
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			quoted, err := strconv.QuotedPrefix(after)
			if err != nil {
				return Line{}, fmt.Errorf("value of %s is not a closed Go string: %s", key, after)
			}
			value, _ = strconv.Unquote(quoted)
			rest = after[len(quoted):]
			if rest != "" && rest[0] != ' ' {
				return Line{}, fmt.Errorf("want a space after the value of %s, got %q", key, rest)
			}
		} else {
			value, rest, _ = strings.Cut(after, " ")
		}
		if _, dup := l.Arg(key); dup {
			return Line{}, fmt.Errorf("%s given twice", key)
		}
		l.Args = append(l.Args, Arg{key, value})
	}
	return l, nil
}
