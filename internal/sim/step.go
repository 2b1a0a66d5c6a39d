// Package sim is the fault simulation harness of the handoff: the
// scenario step language, the environment that applies a step to the
// reference model and to the real system (through the faults the step
// names), the invariants of the spec checked after every step, the rapid
// property that draws random steps, and the corpus of scenario files that
// replays them.
package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrScenario is returned for scenario text the harness cannot run: an
// unknown directive or argument, a malformed value. It is a mistake in the
// scenario, never an outcome of the system.
var ErrScenario = errors.New("handoff: malformed scenario")

// Arg is one key=value argument of a step.
type Arg struct {
	Key, Value string
}

// Step is one line of the scenario language: a directive and its
// arguments, for example
//
//	deliver fault=lost-reply
//
// A Step prints as the line that parses back to it.
type Step struct {
	Directive string
	Args      []Arg
}

// NewStep builds a step from a directive and key, value pairs.
func NewStep(directive string, keyValues ...string) Step {
	s := Step{Directive: directive}
	for i := 0; i+1 < len(keyValues); i += 2 {
		s.Args = append(s.Args, Arg{keyValues[i], keyValues[i+1]})
	}
	return s
}

// Arg returns the value of key and whether the step has it.
func (s Step) Arg(key string) (string, bool) {
	for _, a := range s.Args {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// String prints s as scenario text. Values that are not plain tokens are
// Go-quoted, so white space, quotes and invalid UTF-8 survive the trip.
func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Directive)
	for _, a := range s.Args {
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

// ParseStep parses one line of scenario text.
func ParseStep(line string) (Step, error) {
	rest := strings.TrimSpace(line)
	directive, rest, _ := strings.Cut(rest, " ")
	if directive == "" {
		return Step{}, fmt.Errorf("%w: empty directive", ErrScenario)
	}
	s := Step{Directive: directive}
	for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return Step{}, fmt.Errorf("%w: want key=value, got %q", ErrScenario, rest)
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			quoted, err := strconv.QuotedPrefix(after)
			if err != nil {
				return Step{}, fmt.Errorf("%w: value of %s is not a closed Go string: %s", ErrScenario, key, after)
			}
			value, _ = strconv.Unquote(quoted)
			rest = after[len(quoted):]
			if rest != "" && rest[0] != ' ' {
				return Step{}, fmt.Errorf("%w: want a space after the value of %s, got %q", ErrScenario, key, rest)
			}
		} else {
			value, rest, _ = strings.Cut(after, " ")
		}
		if _, dup := s.Arg(key); dup {
			return Step{}, fmt.Errorf("%w: %s given twice", ErrScenario, key)
		}
		s.Args = append(s.Args, Arg{key, value})
	}
	return s, nil
}

// only returns an ErrScenario error if s has an argument outside allowed.
func (s Step) only(allowed ...string) error {
	for _, a := range s.Args {
		found := false
		for _, k := range allowed {
			found = found || a.Key == k
		}
		if !found {
			return fmt.Errorf("%w: %s takes no argument %q (it takes %s)", ErrScenario, s.Directive, a.Key, orNone(allowed))
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

// With returns s with the argument key=value added after the others.
func (s Step) With(key, value string) Step {
	s.Args = append(s.Args[:len(s.Args):len(s.Args)], Arg{key, value})
	return s
}
