package running

import (
	"slices"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

// namings are the lines that name fault k in a schedule: as an event, a
// request's fault or a key's, with the arguments each needs.
func namings(k faults.Kind) []string {
	w := string(k)
	return []string{
		w + " at=1s", w + " at=1s for=1s",
		"request n=1 fault=" + w, "request n=1 fault=" + w + " for=1s",
		"request n=1 fault=" + w + " status=503 retry-after=1s",
		"key case=case-1 fault=" + w,
	}
}

// accepts reports whether a schedule file, on either backend, takes one
// of k's namings.
func accepts(k faults.Kind) bool {
	return slices.ContainsFunc(namings(k), func(l string) bool {
		return slices.ContainsFunc([]string{"sqlite", "postgres"}, func(b string) bool {
			_, err := ParseSchedule("inline", strings.NewReader("design name=pool\nbackend name="+b+"\n"+l+"\n"))
			return err == nil
		})
	})
}

// TestOneFaultVocabulary: every fault a schedule names is a fault of
// package faults that the running mode injects, one row of its table
// with one meaning in both modes; every fault of the running mode can be
// named; and a fault of the step mode alone is refused.
func TestOneFaultVocabulary(t *testing.T) {
	for _, k := range Faults() {
		switch {
		case !slices.Contains(faults.All, k):
			t.Errorf("schedule fault %q is not a fault of package faults: declare it there", k)
		case !faults.RunningMode.Injects(k):
			t.Errorf("schedule fault %q is not marked as the running mode's in package faults", k)
		case !accepts(k):
			t.Errorf("Faults lists %q, which no schedule line takes", k)
		}
	}
	for _, k := range faults.All {
		if in := faults.RunningMode.Injects(k); in != slices.Contains(Faults(), k) || in != accepts(k) {
			t.Errorf("fault %s: the running mode injects it: %v; a schedule names it: %v", k, in, accepts(k))
		}
	}
	for _, w := range []string{"crash", "reset", "outage", "slow", "hold", "down", "429", "400"} {
		if accepts(faults.Kind(w)) {
			t.Errorf("a schedule takes %q, which is no fault of package faults", w)
		}
	}
}
