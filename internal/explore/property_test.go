package explore

import (
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
)

// TestFuzzingFailuresSayTheyAreNotShrunk: a failure of the property
// configured for the fuzzer (rapid.MakeFuzz does not shrink) is reported
// and headed as found, not as minimal; configured for rapid.Check it is
// minimal. It runs both under rapid.Check: what it tests is that the
// configuration reaches the report.
func TestFuzzingFailuresSayTheyAreNotShrunk(t *testing.T) {
	d, err := designs.Lookup("two-writes")
	if err != nil {
		t.Fatal(err)
	}
	if err := rapidFlags.begin(); err != nil {
		t.Fatal(err)
	}
	defer rapidFlags.end()
	for _, tt := range []struct {
		fuzzing        bool
		report, header string
	}{
		{false, "\nminimal scenario (", "Minimal after shrinking."},
		{true, "\nscenario as found, not shrunk (", "Found by the fuzzer, not shrunk"},
	} {
		rec := &Recorder{}
		prop, done := Property(t.Context(), PropertyConfig{Design: d, Dir: t.TempDir(), MaxSteps: DefaultSteps, Recorder: rec, Fuzzing: tt.fuzzing})
		rapidFlags.check(&exploreTB{name: t.Name()}, SequenceSeed(1, 5), prop)
		done()
		if rec.Failure == nil {
			t.Fatalf("two-writes did not fail on seed %d", SequenceSeed(1, 5))
		}
		f := rec.Failure
		if f.Unshrunk != tt.fuzzing || !strings.Contains(f.Report(""), tt.report) || !strings.HasPrefix(f.Header()[1], tt.header) {
			t.Errorf("fuzzing %v: Unshrunk %v, header %q, report:\n%s\nwant Unshrunk %v, %q in the report, a header starting %q",
				tt.fuzzing, f.Unshrunk, f.Header()[1], f.Report(""), tt.fuzzing, tt.report, tt.header)
		}
	}
}
