package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/outboxlab/handoff/designs"
)

// TestCrashPointEnumeration crashes every corpus scenario of the real
// design at every fault point it passes, and checks that every run keeps
// every invariant; then shows that enumeration catches the fragile designs
// that a single crash breaks.
func TestCrashPointEnumeration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every corpus file crashed at every fault point; run without -short")
	}
	t.Parallel()
	ctx := t.Context()
	scenarios := corpusScenarios(t)
	total := 0
	for _, sc := range scenarios {
		if sc.Design() != designs.Handoff.Name {
			continue
		}
		points, err := Enumerate(ctx, sc, EnumerateConfig{Design: designs.Handoff, Dir: t.TempDir()})
		if errors.Is(err, ErrOtherBackend) {
			continue // a scenario of PostgreSQL only: enumeration runs on SQLite
		}
		if err != nil {
			t.Fatal(err)
		}
		total += len(points)
		for _, p := range points {
			if p.Violation != nil {
				t.Errorf("%s:%d: crash at pass %d (%s): %s", sc.Name, p.Case.Line, p.Pass, p.Point, p.Violation)
			}
		}
	}
	if total < 20 {
		t.Errorf("only %d crash points in the corpus", total)
	}

	demo := corpus(t)["corpus/lost-reply-demo.txt"]
	for _, tt := range []struct {
		design    string
		invariant int
	}{
		{"two-writes", 2}, {"count-after-send", 4}, {"transaction-across-send", 4}, {"sent-before-send", 3},
	} {
		d, err := designs.Lookup(tt.design)
		if err != nil {
			t.Fatal(err)
		}
		points, err := Enumerate(ctx, demo, EnumerateConfig{Design: d, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		caught := ""
		for _, p := range points {
			if p.Violation != nil && p.Violation.Invariant == tt.invariant {
				caught = fmt.Sprintf("pass %d (%s)", p.Pass, p.Point)
			}
		}
		if caught == "" {
			t.Errorf("enumerating %s over the demo broke no invariant %d", tt.design, tt.invariant)
		}
	}
}

// TestEnumerateRenewedAsFresh checks that crash points enumerated on one
// pair of databases, emptied between runs, are those that new databases
// for every run give: the same passes, points, outputs and violations,
// for the fragile designs that the demo catches and for the real design
// on scenarios of crashes, named workers and leases.
func TestEnumerateRenewedAsFresh(t *testing.T) {
	t.Parallel()
	scenarios := corpus(t)
	type run struct {
		file   string
		design string
	}
	var runs []run
	for _, d := range []string{"handoff", "two-writes", "count-after-send", "transaction-across-send", "sent-before-send"} {
		runs = append(runs, run{"corpus/lost-reply-demo.txt", d})
	}
	for _, f := range []string{"crash-after-reply-until-budget", "workers-interleaved", "workers-lease-outlives-crash"} {
		runs = append(runs, run{"corpus/" + f + ".txt", designs.Handoff.Name})
	}
	for _, r := range runs {
		d, err := designs.Lookup(r.design)
		if err != nil {
			t.Fatal(err)
		}
		var got [2][]CrashPoint
		for i, fresh := range []bool{false, true} {
			got[i], err = Enumerate(t.Context(), scenarios[r.file], EnumerateConfig{Design: d, Dir: t.TempDir(), Fresh: fresh})
			if err != nil {
				t.Fatalf("%s on %s: %v", r.file, r.design, err)
			}
		}
		if diff := cmp.Diff(got[1], got[0]); diff != "" {
			t.Errorf("%s on %s: crash points renewed differ from fresh (-fresh +renewed):\n%s", r.file, r.design, diff)
		}
	}
}

// TestEnumerateWithoutAFolder checks that Enumerate says when it cannot
// make its databases, fresh or not, and leaves nothing behind.
func TestEnumerateWithoutAFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "missing")
	for _, fresh := range []bool{false, true} {
		_, err := Enumerate(t.Context(), corpus(t)["corpus/lost-reply-demo.txt"], EnumerateConfig{Dir: dir, Fresh: fresh})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Fresh %v: Enumerate in a folder that does not exist: %v, want an error that it does not exist", fresh, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Enumerate made %s: %v", dir, err)
	}
}
