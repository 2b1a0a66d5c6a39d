package sim

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/textdiff"
	"github.com/outboxlab/handoff/system"
)

// Scenario is a parsed scenario file: test cases in the datadriven style,
//
//	# why the next step is there
//	deliver fault=lost-reply
//	----
//	the output the step must produce
//
// each a directive line, a "----" line and the expected output up to a
// blank line or the end of the file. Lines starting with # are comments.
type Scenario struct {
	Name    string
	Cases   []Case
	Trailer []string // comment and blank lines after the last case
}

// Case is one step of a scenario with its expected output.
type Case struct {
	Line     int      // line number of the directive
	Comments []string // the comment and blank lines before it, verbatim
	Text     string   // the directive line as written
	Step     Step
	Want     string
}

// ParseScenario parses the text of the scenario file name. Malformed text
// is an ErrScenario error that starts with name:line.
func ParseScenario(name, text string) (Scenario, error) {
	sc := Scenario{Name: name}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var comments []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			comments = append(comments, line)
			continue
		}
		step, err := ParseStep(line)
		if err != nil {
			return Scenario{}, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return Scenario{}, fmt.Errorf("%s:%d: %w: want a ---- line after the directive", name, i+2, ErrScenario)
		}
		c := Case{Line: i + 1, Comments: comments, Text: line, Step: step}
		comments = nil
		var want []string
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		c.Want = strings.Join(want, "\n")
		sc.Cases = append(sc.Cases, c)
	}
	sc.Trailer = comments
	return sc, nil
}

// ReadScenario reads and parses a scenario file.
func ReadScenario(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("handoff: %w", err)
	}
	return ParseScenario(path, string(b))
}

// Design is the design the scenario runs: the one its first step names
// with a design directive, or designs.Handoff.
func (sc Scenario) Design() string {
	if len(sc.Cases) > 0 && sc.Cases[0].Step.Directive == "design" {
		name, _ := sc.Cases[0].Step.Arg("name")
		return name
	}
	return designs.Handoff.Name
}

// Backend is the backend the scenario runs on only, as its backend line
// says (among the design, config and transport lines it starts with), or
// "" when it runs on both.
func (sc Scenario) Backend() backend.Backend {
	for _, c := range sc.Cases {
		switch c.Step.Directive {
		case "backend":
			name, _ := c.Step.Arg("name")
			return backend.Backend(name)
		case "design", "config", "transport":
			continue
		}
		break
	}
	return ""
}

// Format prints the scenario with the given outputs in place of the
// expected ones, keeping comments and directive lines as written.
func (sc Scenario) Format(outputs []string) string {
	var b strings.Builder
	for i, c := range sc.Cases {
		for _, l := range c.Comments {
			b.WriteString(l + "\n")
		}
		fmt.Fprintf(&b, "%s\n----\n%s\n", c.Text, outputs[i])
		if i+1 < len(sc.Cases) || len(sc.Trailer) > 0 {
			b.WriteByte('\n')
		}
	}
	for _, l := range sc.Trailer {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// Problem is a way a replayed case failed: its output differs from the
// expected one, or the real design broke an invariant. It is an error that
// names the file and line of the case.
type Problem struct {
	File    string // the scenario's name
	Case    Case
	Got     string
	Message string
}

// Error prints the problem with the file and line of its case and, for
// an output that differs, the lines that differ (-want +got, with the
// lines both have between them); for an output as wanted, the output.
func (p Problem) Error() string {
	if diff := textdiff.Lines(p.Case.Want, p.Got); diff != "" {
		return fmt.Sprintf("%s:%d: %s: %s (-want +got):\n%s", p.File, p.Case.Line, p.Case.Text, p.Message, strings.TrimSuffix(diff, "\n"))
	}
	return fmt.Sprintf("%s:%d: %s: %s:\n%s", p.File, p.Case.Line, p.Case.Text, p.Message, p.Got)
}

// Replay runs the scenario on an Env of cfg (its Dir, which must exist,
// Transport, Backend and PostgresURL; the scenario's design line, if any,
// names the design, and its transport line, if any, the transport), with
// the simulation's durability, and returns the run, every step and what
// it did (Run.Outputs is every case's output), and every problem. A
// scenario of the real design must break no invariant, whatever its
// expected output says: a saved counterexample fails until the bug is
// fixed. An error means the scenario could not run; it starts with
// file:line where it can.
func Replay(ctx context.Context, sc Scenario, cfg Config) (Run, []Problem, error) {
	cfg.Durability = system.ProcessSafe
	env, err := NewEnv(ctx, cfg)
	if err != nil {
		return Run{}, nil, err
	}
	defer env.Close()
	run := Run{Design: env.Design().Name}
	var problems []Problem
	for _, c := range sc.Cases {
		out, err := env.Apply(ctx, c.Step)
		if err != nil {
			return Run{}, nil, fmt.Errorf("%s:%d: %w", sc.Name, c.Line, err)
		}
		run.Steps, run.Outcomes = append(run.Steps, c.Step), append(run.Outcomes, out)
		if c.Step.Directive == "design" {
			run.Design = env.Design().Name
		}
		switch {
		case out.Output != c.Want:
			problems = append(problems, Problem{sc.Name, c, out.Output, "output differs"})
		case out.Violation != nil && env.Design().Name == designs.Handoff.Name:
			problems = append(problems, Problem{sc.Name, c, out.Output, "the real design broke an invariant"})
		}
	}
	return run, problems, nil
}

// SaveCounterexample writes f as a scenario file into dir, named after the
// design and the broken invariant, without overwriting an existing file.
// It returns the path written.
func SaveCounterexample(dir string, f *Failure) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("handoff: %w", err)
	}
	base := fmt.Sprintf("found-%s-invariant-%d", f.Design, f.Violation.Invariant)
	for n := 1; ; n++ {
		path := filepath.Join(dir, base+".txt")
		if n > 1 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.txt", base, n))
		}
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("handoff: %w", err)
		}
		if _, err := file.WriteString(f.Scenario(f.Header()...)); err != nil {
			file.Close()
			return "", fmt.Errorf("handoff: %w", err)
		}
		return path, file.Close()
	}
}

// Corpus parses every scenario file (*.txt) under the folder "corpus" of
// fsys, in lexical order, each named by its path ("corpus/NAME.txt"):
// the module's corpus, built into the binary (handoff.Corpus) or read
// from the source tree.
func Corpus(fsys fs.FS) ([]Scenario, error) {
	var scenarios []Scenario
	err := fs.WalkDir(fsys, "corpus", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txt") {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
		sc, err := ParseScenario(path, string(b))
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
		return nil
	})
	return scenarios, err
}
