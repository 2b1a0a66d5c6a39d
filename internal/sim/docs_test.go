package sim

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

// readDoc reads a file of the module's docs folder.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsNameEveryFaultDirectiveAndInvariant: the spec's fault table
// names every fault, the scenario language's page every directive, and
// the spec's numbered list every invariant of the table with what it
// demands; so that a new one cannot be added without its documentation.
func TestDocsNameEveryFaultDirectiveAndInvariant(t *testing.T) {
	spec, scenarios := readDoc(t, "spec.md"), readDoc(t, "scenarios.md")
	for _, k := range faults.All {
		if !strings.Contains(spec, "| `"+k.String()) {
			t.Errorf("docs/spec.md's fault table has no row for %s", k)
		}
	}
	for _, d := range Directives() {
		if !strings.Contains(scenarios, "| `"+d) {
			t.Errorf("docs/scenarios.md's table of directives has no row for %s", d)
		}
	}
	_, section, _ := strings.Cut(spec, "\n## Invariants\n")
	section, _, _ = strings.Cut(section, "\n## ")
	for n, name := range InvariantNames() {
		name = strings.ToLower(name)
		item := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\. \*\*([^*]+)\*\*`, n)).FindStringSubmatch(section)
		if item == nil {
			t.Errorf("docs/spec.md lists no invariant %d", n)
			continue
		}
		if got := strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(item[1], "`", "")), " ")); !strings.HasPrefix(got, name) {
			t.Errorf("docs/spec.md's invariant %d reads %q, want it to start with what the table says it demands: %q", n, got, name)
		}
	}
}

// TestDirectivesDocumented: every directive's handler is in a file of its
// own, directive_NAME.go, whose doc comment shows the directive's line.
func TestDirectivesDocumented(t *testing.T) {
	for _, d := range Directives() {
		b, err := os.ReadFile("directive_" + d + ".go")
		if err != nil {
			t.Errorf("directive %s: %v", d, err)
			continue
		}
		lines := regexp.MustCompile(`(?m)^//\t`+d+`\b.*$`).FindAllString(string(b), -1)
		if lines == nil {
			t.Errorf("directive_%s.go: the handler's doc comment shows no line of the directive (//\t%s ...)", d, d)
			continue
		}
		shown := map[string]bool{}
		for _, line := range lines {
			for _, m := range regexp.MustCompile(`([a-z][a-z-]*)=`).FindAllStringSubmatch(line, -1) {
				shown[m[1]] = true
			}
		}
		if got, want := slices.Sorted(maps.Keys(shown)), slices.Sorted(slices.Values(directives[d].args)); !slices.Equal(got, want) {
			t.Errorf("directive_%s.go's doc comment shows the arguments %v, its row in the directive table takes %v", d, got, want)
		}
	}
}

// TestDirectivesListTheirFaults: the line of a directive that its
// handler's doc comment shows, and its row in docs/scenarios.md, list in
// their [fault=...] (or, where the row writes fault=…, in its "faults:"
// list) exactly the faults the directive table gives the directive, and
// a directive that takes none shows none: the lists are copied by hand,
// so a fault added to the table or taken out of it would otherwise leave
// them behind.
func TestDirectivesListTheirFaults(t *testing.T) {
	scenarios := readDoc(t, "scenarios.md")
	for _, d := range Directives() {
		var table []string
		for _, k := range FaultsOf(d) {
			table = append(table, k.String())
		}
		b, err := os.ReadFile("directive_" + d + ".go")
		if err != nil {
			t.Errorf("directive %s: %v", d, err)
			continue
		}
		var comment []string
		for _, line := range regexp.MustCompile(`(?m)^//\t`+d+`\b.*$`).FindAllString(string(b), -1) {
			comment = append(comment, faultsOfLine(t, "directive_"+d+".go's doc comment", line)...)
		}
		row := regexp.MustCompile("(?m)^\\| `" + d + "\\b([^`]*)` \\|(.*)$").FindStringSubmatch(scenarios)
		if row == nil {
			t.Errorf("docs/scenarios.md has no row for %s", d)
			continue
		}
		documented := faultsOfLine(t, "docs/scenarios.md's row of "+d, strings.ReplaceAll(row[1], `\|`, "|"))
		if strings.Contains(row[1], "fault=…") {
			_, list, _ := strings.Cut(row[2], "faults: ")
			for _, m := range regexp.MustCompile("^(?:`([a-z-]+)`(?:, )?)+").FindAllString(list, -1) {
				documented = append(documented, strings.Split(strings.NewReplacer("`", "", " ", "").Replace(m), ",")...)
			}
		}
		for where, listed := range map[string][]string{"directive_" + d + ".go's doc comment": comment, "docs/scenarios.md's row of " + d: documented} {
			if !sameSet(listed, table) {
				t.Errorf("%s lists the faults %v; the directive table gives %s %v", where, listed, d, table)
			}
		}
	}
}

// faultArg is the fault argument of a directive's line: [fault=a|b].
var faultArg = regexp.MustCompile(`\[fault=([^\]]+)\]`)

// faultsOfLine returns the faults a directive's line lists in its
// [fault=...]: "throttled retry-after=MS" is throttled with its argument,
// and in "mangled spoil=cut-body|not-json", not-json is no fault but
// another value of the argument before it.
func faultsOfLine(t *testing.T, where, line string) []string {
	t.Helper()
	m := faultArg.FindStringSubmatch(line)
	if m == nil || m[1] == "…" {
		return nil
	}
	var listed []string
	valueOf := ""
	for _, alt := range strings.Split(m[1], "|") {
		word := strings.Fields(alt)[0]
		if _, err := faults.ParseKind(word, faults.StepMode.Kinds()...); err == nil {
			listed = append(listed, word)
			valueOf = ""
			if strings.Contains(alt, "=") {
				valueOf = word
			}
		} else if valueOf == "" {
			t.Errorf("%s lists %q as a fault, which is none", where, word)
		}
	}
	return listed
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// numberWords are the numbers the documentation spells out.
var numberWords = []string{"none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

// TestDocsCountAndOrderTheInvariants: the README counts the invariants
// the table checks, in words; the spec states the order the table checks
// them in, number by number, and the architecture page which one comes
// last.
func TestDocsCountAndOrderTheInvariants(t *testing.T) {
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	readme, spec, architecture := flat(readDoc(t, "../README.md")), flat(readDoc(t, "spec.md")), flat(readDoc(t, "architecture.md"))
	if want := "the harness checks " + numberWords[len(invariants)] + " invariants"; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q: the invariant table has %d", want, len(invariants))
	}
	var order []string
	for _, inv := range invariants {
		order = append(order, fmt.Sprint(inv.Number))
	}
	if want := "in the order " + strings.Join(order, ", "); !strings.Contains(spec, want) {
		t.Errorf("docs/spec.md does not say %q, the order the table checks the invariants in", want)
	}
	if want := fmt.Sprintf("but invariant %d last", invariants[len(invariants)-1].Number); !strings.Contains(architecture, want) {
		t.Errorf("docs/architecture.md does not say %q", want)
	}
}

// TestReadmeStaysShort: the README is for a first reading (the two
// commands, what it does, the architecture, the corpus workflow); its
// details live in docs/, and it stays under 300 lines.
func TestReadmeStaysShort(t *testing.T) {
	if n := strings.Count(readDoc(t, "../README.md"), "\n"); n >= 300 {
		t.Errorf("README.md has %d lines, want under 300: move details into docs/", n)
	}
}

// TestNamedTestsExist: every test, benchmark or fuzz target that a
// comment in the module's Go files or a page of its documentation names
// is defined somewhere in the repository, so that a renamed or removed
// test cannot leave its name behind.
func TestNamedTestsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	name := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9]*`)
	defined := map[string]bool{}
	type mention struct{ where, name string }
	var mentions []mention
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(path)
		if d.IsDir() || ext != ".go" && ext != ".md" && path != filepath.Join(root, ".ci", "run") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if ext == ".go" {
				if m := regexp.MustCompile(`^func ((?:Test|Benchmark|Fuzz)\w+)\(`).FindStringSubmatch(line); m != nil {
					defined[m[1]] = true
				}
				_, comment, ok := strings.Cut(line, "//")
				if !ok {
					continue
				}
				line = comment
			}
			for _, n := range name.FindAllString(line, -1) {
				mentions = append(mentions, mention{fmt.Sprintf("%s:%d", path, i+1), n})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) < 100 {
		t.Fatalf("found %d tests in the repository; there were over 300 when this test was written", len(defined))
	}
	for _, m := range mentions {
		if !defined[m.name] && m.name != "TestMain" {
			t.Errorf("%s names %s, which no file defines", m.where, m.name)
		}
	}
}

// TestEveryPackageHasADoc: every package of the module says what it is
// in a package comment.
func TestEveryPackageHasADoc(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == ".git" || d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // a module of its own (examples/...)
		}
		pkgs, err := parser.ParseDir(token.NewFileSet(), path, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for name, pkg := range pkgs {
			documented := false
			for _, f := range pkg.Files {
				documented = documented || f.Doc != nil
			}
			if !documented {
				t.Errorf("package %s in %s has no package comment", name, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
