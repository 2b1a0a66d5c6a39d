package designs_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/system"
)

func TestCatalogEntriesAreComplete(t *testing.T) {
	names := map[string]bool{}
	for _, d := range designs.All() {
		if names[d.Name] {
			t.Errorf("%s: name used twice", d.Name)
		}
		names[d.Name] = true
		if err := d.Check(); err != nil || d.Summary == "" {
			t.Errorf("%q: a summary is required, and the design must hold together: %v", d.Name, err)
		}
		if d.Name == designs.Handoff.Name {
			continue
		}
		if d.Doc == "" || !slices.Contains([]string{designs.DuplicateTask, designs.LostWork, designs.ReplacedInstruction}, d.Failure) ||
			d.Invariant < 1 || d.Invariant > 12 || d.MinimalSteps < 1 { // the spec numbers twelve invariants
			t.Errorf("%s: a fragile design needs a doc, a failure, an invariant of the spec and a minimal length", d.Name)
		}
	}
	if len(designs.Fragile) < 12 {
		t.Errorf("got %d fragile designs, want the 12 of the catalog", len(designs.Fragile))
	}
}

func TestLookup(t *testing.T) {
	if d, err := designs.Lookup("check-then-create"); err != nil || d.Name != "check-then-create" {
		t.Errorf("got %q, %v", d.Name, err)
	}
	if _, err := designs.Lookup("three-writes"); err == nil {
		t.Error("an unknown design was found")
	}
}

// TestOwnReceiver checks that exactly the designs marked OwnReceiver open
// another receiver than system's CRM.
func TestOwnReceiver(t *testing.T) {
	for _, d := range designs.All() {
		c, err := d.OpenCRM(t.Context(), filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Durability: system.ProcessSafe})
		if err != nil {
			t.Fatal(err)
		}
		if _, real := c.(*system.CRM); real == d.OwnReceiver {
			t.Errorf("%s: OwnReceiver is %t, and it opens %T", d.Name, d.OwnReceiver, c)
		}
		c.Close()
	}
}
