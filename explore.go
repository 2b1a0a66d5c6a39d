package handoff

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"pgregory.net/rapid"
)

// Defaults of an exploration: DefaultChecks sequences of up to
// DefaultSteps steps.
const (
	DefaultChecks = 2000
	DefaultSteps  = 50
)

// ExploreConfig says what to explore and how much.
type ExploreConfig struct {
	Design designs.Design // the zero value means designs.Handoff
	Checks int            // sequences to try before calling it a pass
	Steps  int            // the most random steps a sequence takes (it ends at random before)
	Seed   uint64         // the first sequence's seed; every choice follows from it
	// Dir is where sequences keep their databases; "" means os.TempDir().
	Dir string
	// Progress, if not nil, is called about once a second while it runs.
	Progress func(*Stats, time.Duration)
}

// Report is what an exploration found.
type Report struct {
	Config  ExploreConfig
	Stats   *Stats
	Elapsed time.Duration
	// Failure is the minimal failing sequence, nil if none was found.
	Failure *Failure
	// FailureSeed reproduces Failure as the first sequence of an
	// exploration with the same Design and Steps.
	FailureSeed uint64
	// FirstSequences and FirstElapsed say how many sequences had started,
	// and how long it took, when the first failure was found (before
	// shrinking); zero when none was.
	FirstSequences int64
	FirstElapsed   time.Duration
	// Problem is rapid's own account of a failure the harness did not
	// record (a panic in the harness itself); empty otherwise.
	Problem string
}

// StepsPerSecond is the simulated steps per second of wall time, each step
// including the model comparison and the invariant checks.
func (r Report) StepsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Stats.Steps.Load()) / r.Elapsed.Seconds()
}

// Explore runs the rapid property of TestSimulation outside go test: the
// same generators, invariants and shrinking, driven by cfg instead of
// rapid's command-line flags.
func Explore(ctx context.Context, cfg ExploreConfig) (Report, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	switch {
	case cfg.Checks < 1:
		return Report{}, fmt.Errorf("handoff: checks is %d, want at least 1", cfg.Checks)
	case cfg.Steps < 1:
		return Report{}, fmt.Errorf("handoff: steps is %d, want at least 1", cfg.Steps)
	case cfg.Seed == 0:
		return Report{}, fmt.Errorf("handoff: seed 0 asks rapid for a random one; choose a seed")
	}
	dir, err := os.MkdirTemp(cfg.Dir, "handoff-explore-")
	if err != nil {
		return Report{}, fmt.Errorf("handoff: %w", err)
	}
	defer os.RemoveAll(dir)

	report := Report{Config: cfg, Stats: NewStats()}
	rec := &Recorder{}
	tb := &exploreTB{name: "explore/" + cfg.Design.Name}
	stop := startProgress(cfg.Progress, report.Stats)
	start := time.Now()
	err = withRapidFlags(map[string]string{
		"rapid.checks":     strconv.Itoa(cfg.Checks),
		"rapid.seed":       strconv.FormatUint(cfg.Seed, 10),
		"rapid.nofailfile": "true",
	}, func() {
		rapid.Check(tb, Property(ctx, cfg.Design, dir, cfg.Steps, report.Stats, rec))
	})
	report.Elapsed = time.Since(start)
	stop()
	if err != nil {
		return Report{}, err
	}
	if tb.failed {
		report.Failure = rec.Failure
		report.FailureSeed = tb.seed()
		if !rec.FirstAt.IsZero() {
			report.FirstSequences, report.FirstElapsed = rec.FirstSequences, rec.FirstAt.Sub(start)
		}
		if report.Failure == nil {
			report.Problem = strings.Join(tb.messages, "\n")
		}
	}
	return report, nil
}

// startProgress calls progress about once a second until the returned
// function is called.
func startProgress(progress func(*Stats, time.Duration), stats *Stats) func() {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				progress(stats, time.Since(start))
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// withRapidFlags runs fn with rapid's command-line flags set to values,
// and puts them back afterwards. rapid reads its configuration only from
// these flags (and testing.Short, which needs the testing flags parsed), so
// a program that runs rapid outside go test must go through them.
func withRapidFlags(values map[string]string, fn func()) error {
	if flag.Lookup("test.short") == nil {
		testing.Init()
	}
	if !flag.Parsed() {
		if err := flag.CommandLine.Parse(nil); err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
	}
	old := map[string]string{}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			return fmt.Errorf("handoff: rapid has no flag %s", name)
		}
		old[name] = f.Value.String()
		if err := flag.Set(name, v); err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
	}
	defer func() {
		for name, v := range old {
			_ = flag.Set(name, v) // the value was read from this flag a moment ago
		}
	}()
	fn()
	return nil
}

// exploreTB is the rapid.TB of an exploration: it keeps rapid's failure
// messages instead of failing a test.
type exploreTB struct {
	name     string
	failed   bool
	messages []string
}

func (tb *exploreTB) Helper()                          {}
func (tb *exploreTB) Name() string                     { return tb.name }
func (tb *exploreTB) Logf(string, ...any)              {}
func (tb *exploreTB) Log(...any)                       {}
func (tb *exploreTB) Skipf(format string, args ...any) { tb.Errorf(format, args...) }
func (tb *exploreTB) Skip(args ...any)                 { tb.Error(args...) }
func (tb *exploreTB) SkipNow()                         { tb.failed = true }
func (tb *exploreTB) Errorf(format string, args ...any) {
	tb.failed = true
	tb.messages = append(tb.messages, fmt.Sprintf(format, args...))
}
func (tb *exploreTB) Error(args ...any)                 { tb.Errorf("%s", fmt.Sprint(args...)) }
func (tb *exploreTB) Fatalf(format string, args ...any) { tb.Errorf(format, args...) }
func (tb *exploreTB) Fatal(args ...any)                 { tb.Error(args...) }
func (tb *exploreTB) FailNow()                          { tb.failed = true }
func (tb *exploreTB) Fail()                             { tb.failed = true }
func (tb *exploreTB) Failed() bool                      { return tb.failed }

var rapidSeed = regexp.MustCompile(`-rapid\.seed=(\d+)`)

// seed is the seed rapid reported for the failing sequence, or 0.
func (tb *exploreTB) seed() uint64 {
	for _, m := range tb.messages {
		if s := rapidSeed.FindStringSubmatch(m); s != nil {
			n, _ := strconv.ParseUint(s[1], 10, 64)
			return n
		}
	}
	return 0
}
