package designs_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestRunningCheck: a running design that cannot run is refused with
// what is missing or out of range, and each of the catalog's runs.
func TestRunningCheck(t *testing.T) {
	boot := func(context.Context, designs.Process) (designs.Booted, error) { return nil, nil }
	good := designs.Running{Name: "good", Boot: boot, Settle: time.Minute}
	for _, tt := range []struct {
		name string
		edit func(*designs.Running)
		want string // "" for none
	}{
		{"complete", func(*designs.Running) {}, ""},
		{"every field set", func(r *designs.Running) {
			r.Budget, r.Lease, r.Counts, r.Holds, r.Replicas = 3, time.Second, designs.CountsErrors, designs.HeldByLock, 2
		}, ""},
		{"no name", func(r *designs.Running) { r.Name = "" }, "needs a Name"},
		{"no boot", func(r *designs.Running) { r.Boot = nil }, "needs Boot"},
		{"a negative budget", func(r *designs.Running) { r.Budget = -1 }, "Budget is -1"},
		{"a negative lease", func(r *designs.Running) { r.Lease = -time.Second }, "Lease is -1s"},
		{"an unknown count", func(r *designs.Running) { r.Counts = "tries" }, `Counts is "tries"`},
		{"an unknown hold", func(r *designs.Running) { r.Holds = "mutex" }, `Holds is "mutex"`},
		{"negative replicas", func(r *designs.Running) { r.Replicas = -1 }, "Replicas is -1"},
		{"no settle time", func(r *designs.Running) { r.Settle = 0 }, "Settle is 0s"},
	} {
		r := good
		tt.edit(&r)
		err := r.Check()
		if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, designs.ErrRunning) || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	for _, r := range designs.AllRunning() {
		if err := r.Check(); err != nil {
			t.Errorf("the catalog's %s: %v", r.Name, err)
		}
	}
}
