package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff"
	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/sim"
)

// replay of the embedded corpus and of files, in process and over HTTP.

func TestReplay(t *testing.T) {
	t.Parallel()
	if code, stdout, stderr := runCLI(t, "replay", "--quiet"); code != 0 || !strings.Contains(stdout, "every output matches") {
		t.Fatalf("replay of the embedded corpus: exit %d, %s%s", code, stdout, stderr)
	}
	file := filepath.Join(t.TempDir(), "wrong.txt")
	text := "approve case=case-104 title=\"Call back\"\n----\napproved something else\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "replay", file); code != 1 || !strings.Contains(stderr, file+":1: ") {
		t.Errorf("replay of a wrong expectation: got exit %d, stderr %q; want 1 and file:line", code, stderr)
	}
}

// TestOverHTTP replays and explores over HTTP from the command line: a
// file of a design that runs in process only is skipped with its reason,
// and the summaries name the transport.
func TestOverHTTP(t *testing.T) {
	real := filepath.Join("..", "..", "corpus", "lost-reply-demo.txt")
	own := filepath.Join("..", "..", "corpus", "fragile", "check-then-create.txt")
	code, stdout, stderr := runCLI(t, "replay", "--quiet", "--transport", "http", real, own)
	if code != 0 || !strings.Contains(stdout, "replayed 1 file, 4 steps over http: every output matches") ||
		!strings.Contains(stderr, "skipped "+own+": design check-then-create has a receiver of its own") {
		t.Errorf("replay --transport http: got exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "replay", "--transport", "http", own); code != 1 || !strings.Contains(stderr, "nothing to replay over http") {
		t.Errorf("replay --transport http of a design that runs in process only: got exit %d, stderr %q; want 1", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "explore", "--checks", "3", "--seed", "5", "--transport", "http", "--json", "--dir", t.TempDir())
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s["transport"] != "http" || s["sequences"] != 3.0 {
		t.Errorf("explore --transport http --json: exit %d, %v, %v, stderr %s", code, err, s, stderr)
	}
	if !strings.Contains(stderr, "exploring design handoff (http) with seed 5; to run it again: "+cli.InvokedAs(os.Args[0])+" explore --design handoff --steps 50 --transport http --seed 5") {
		t.Errorf("explore --transport http: stderr %q does not say how to run it again over http", stderr)
	}
}

// TestCorpusReadInOnePlace: replay and enumerate read the embedded corpus
// with sim.Corpus, as the root package's tests do, not with a loop of
// their own over its files that could come to read it otherwise.
func TestCorpusReadInOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		throughCorpus := map[ast.Node]bool{} // handoff.Corpus as sim.Corpus's argument
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && isSelector(c.Fun, "sim", "Corpus") && len(c.Args) == 1 {
				throughCorpus[c.Args[0]] = true
			}
			if isSelector(n, "handoff", "Corpus") && !throughCorpus[n] {
				t.Errorf("%s reads the corpus with handoff.Corpus itself; use sim.Corpus(handoff.Corpus)", fset.Position(n.Pos()))
			}
			return true
		})
	}
	got, err := readScenarios(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.Corpus(handoff.Corpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("readScenarios(nil): %d scenarios, want the %d of the corpus", len(got), len(want))
	}
	for i := range got {
		if got[i].Name != want[i].Name {
			t.Errorf("scenario %d: %s, want %s", i, got[i].Name, want[i].Name)
		}
	}
}

// isSelector reports whether n is the selector pkg.name.
func isSelector(n ast.Node, pkg, name string) bool {
	s, ok := n.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == pkg && s.Sel.Name == name
}
