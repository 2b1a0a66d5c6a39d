package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden reports in testdata/ (only commit the diff if you understand it)")

// replayed replays the scenario file at path (relative to the module's
// root) and returns the report's Input for it.
func replayed(t testing.TB, path string) Input {
	t.Helper()
	sc, err := sim.ReadScenario(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	sc.Name = path
	run, problems, err := sim.Replay(t.Context(), sc, sim.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Run: run, Scenario: sc, Reproduce: "handoff replay " + path}
	for _, p := range problems {
		for i, c := range sc.Cases {
			if c.Line == p.Case.Line && p.Message == "output differs" {
				in.Mismatched = append(in.Mismatched, i)
			}
		}
	}
	for _, out := range run.Outcomes {
		if out.Violation != nil {
			v := *out.Violation
			in.Violation = &v
			break
		}
	}
	return in
}

// coverage is a fixed Coverage with every chart's bars, some of them 0.
func coverage() *Coverage {
	st := sim.NewStats()
	st.Sequences.Store(2000)
	st.ShrinkRuns.Store(14)
	st.Steps.Store(48213)
	st.Faults[faults.LostReply], st.Faults[faults.Offline], st.Faults[faults.CrashAfterReply] = 812, 790, 35
	st.Transitions[sim.PendingToSent], st.Transitions[sim.PendingToPending], st.Transitions[sim.BlockedToPending] = 4100, 2300, 3
	st.Results[sim.Sent], st.Results[sim.Idle] = 3000, 1200
	st.Phases["settle stale"], st.Phases["claim claimed"] = 41, 2600
	st.InputClasses[sim.CaseDash], st.InputClasses[sim.TitleNonASCII] = 300, 12
	st.Shapes[sim.FaultBurst] = 77
	st.Attempts[1], st.Attempts[2], st.Attempts[3], st.Attempts[4] = 5000, 1500, 400, 2
	st.Backoffs[sim.BackoffCeiling{Attempt: 1, Ceiling: time.Second}] = 300
	st.Backoffs[sim.BackoffCeiling{Attempt: 2, Ceiling: 2 * time.Second}] = 90
	return &Coverage{Design: "handoff", Seed: 7, Transport: "in-process", Backend: "sqlite", Stats: st}
}

// TestGolden writes the reports of real runs and compares them with the
// files in testdata/, byte for byte: a counterexample of the fragile
// catalog, forty steps with three workers, a replay whose outputs differ
// from its file, and an exploration's coverage alone. -rewrite writes
// them.
func TestGolden(t *testing.T) {
	mismatch := replayed(t, "corpus/lost-reply-demo.txt")
	mismatch.Scenario.Cases[1].Want = strings.Replace(mismatch.Scenario.Cases[1].Want, "attempts=1", "attempts=2", 1)
	mismatch.Mismatched = []int{1}
	withCoverage := replayed(t, "corpus/fragile/no-fencing.txt")
	withCoverage.Coverage = coverage()
	for _, tt := range []struct {
		name string
		in   Input
	}{
		{"no-fencing", replayed(t, "corpus/fragile/no-fencing.txt")},
		{"three-workers", replayed(t, "internal/report/testdata/three-workers.txt")},
		{"mismatch", mismatch},
		{"explore-failure", withCoverage},
		{"explore-coverage", Input{Coverage: coverage()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tt.in); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := Write(&again, tt.in); err != nil || !bytes.Equal(b.Bytes(), again.Bytes()) {
				t.Fatalf("the same input wrote other bytes the second time (%v)", err)
			}
			golden := filepath.Join("testdata", tt.name+".html")
			if *rewrite {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("the report differs from %s (go test ./internal/report -run TestGolden -rewrite writes it; only commit the diff if you understand it)", golden)
			}
		})
	}
}

// TestSize: the report of forty steps with three workers stays under
// 300 KB.
func TestSize(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, replayed(t, "internal/report/testdata/three-workers.txt")); err != nil {
		t.Fatal(err)
	}
	if b.Len() >= 300_000 {
		t.Errorf("the report of forty steps with three workers is %d bytes, want under 300 KB", b.Len())
	}
}

// BenchmarkWrite writes the report of forty steps with three workers,
// and that of a fragile design's counterexample with an exploration's
// coverage, as explore --report writes it.
func BenchmarkWrite(b *testing.B) {
	withCoverage := replayed(b, "corpus/fragile/no-fencing.txt")
	withCoverage.Coverage = coverage()
	for _, bb := range []struct {
		name string
		in   Input
	}{
		{"three-workers", replayed(b, "internal/report/testdata/three-workers.txt")},
		{"explore-failure", withCoverage},
	} {
		b.Run(bb.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := Write(&buf, bb.in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes/report")
		})
	}
}

// TestChartsSayWhatCannotOccur: a fault the run's transport or backend
// cannot produce reads "not possible in this run", not "0: not reached",
// which would read as a gap in the run's coverage; a fault the run could
// have produced and did not still reads "0: not reached".
func TestChartsSayWhatCannotOccur(t *testing.T) {
	bars := regexp.MustCompile(`<title>([^<:]+): ([^<]*)</title>`)
	for _, tt := range []struct {
		transport, backend string
		want               map[string]string
	}{
		{"in-process", "sqlite", map[string]string{
			"answered": "not possible in this run (HTTP only)", "mangled": "not possible in this run (HTTP only)",
			"commit-lost": "not possible in this run (not on sqlite)", "restart": "0: not reached", "lost-reply": "812"}},
		{"http", "sqlite", map[string]string{
			"answered": "0: not reached", "mangled": "0: not reached", "commit-lost": "not possible in this run (not on sqlite)"}},
		{"http", "postgres", map[string]string{"answered": "0: not reached", "commit-lost": "0: not reached", "commit-reply-lost": "0: not reached"}},
		{"in-process", "postgres", map[string]string{"mangled": "not possible in this run (HTTP only)", "commit-lost": "0: not reached"}},
	} {
		c := coverage()
		c.Transport, c.Backend = tt.transport, tt.backend
		var b bytes.Buffer
		if err := Write(&b, Input{Coverage: c}); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, m := range bars.FindAllStringSubmatch(b.String(), -1) {
			got[m[1]] = m[2]
		}
		for fault, want := range tt.want {
			if got[fault] != want {
				t.Errorf("%s on %s: the bar of %s says %q, want %q", tt.transport, tt.backend, fault, got[fault], want)
			}
		}
	}
}
