package sim

import (
	"fmt"
	"os"
	"regexp"
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
		if !regexp.MustCompile(`(?m)^//\t` + d + `\b`).Match(b) {
			t.Errorf("directive_%s.go: the handler's doc comment shows no line of the directive (//\t%s ...)", d, d)
		}
	}
}
