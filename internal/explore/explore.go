// Package explore is the harness's search: the rapid property
// (Property) that draws a sequence of steps from the model's state (the
// approvals' edge inputs, swarm mixes of kinds of steps and faults, named
// workers' phases, time, a person's repairs), applies each to a sim.Env
// and fails on the first broken invariant; and the explorations that run
// it outside go test (Run), in lanes that each keep one pair of
// databases for many sequences. It drives rapid through a rapid.TB of its
// own, and sets rapid's flags in one place (Check), so that the
// command line (handoff-sim explore), handoff.Explore and the tests share
// one search. It imports rapid, and so testing: only the harness's binary
// and tests link it.
package explore

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/sim"
	"pgregory.net/rapid"
)

// Defaults of an exploration: DefaultChecks sequences of up to
// DefaultSteps steps.
const (
	DefaultChecks = 2000
	DefaultSteps  = 50
)

// Config says what to explore and how much.
type Config struct {
	Design designs.Design // the zero value means designs.Handoff
	Checks int            // sequences to run (in this shard) before calling it a pass
	Steps  int            // the most random steps a sequence takes (it ends at random before)
	// Seed is the run's seed: the first sequence's rapid seed, from which
	// every other sequence's follows (see SequenceSeed).
	Seed uint64
	// Shard and Shards split a run over several processes (a CI matrix):
	// shard i of n (1-based) runs every n-th sequence of the run, starting
	// at the i-th, Checks of them. Zero values mean shard 1 of 1.
	Shard, Shards int
	// Parallel is how many sequences run at once, each lane in its own
	// folder; 0 means 1. The sequences are the same whatever it is.
	Parallel int
	// Sequencer, if not nil, hands the lanes their sequences instead of
	// the run's own (NewSequencer of Checks): that of a run whose other
	// lanes run in other processes, as cmd/handoff's explore runs them.
	Sequencer Sequencer
	// NoSwarm draws every sequence at the default levels (see mix).
	NoSwarm bool
	// Transport carries the worker's requests; the zero value means
	// InProcess.
	Transport sim.Transport
	// Backend is where the app database lives; the zero value means
	// SQLite. On Postgres each lane has a schema of its own on the server
	// PostgresURL names, dropped when the run ends.
	Backend     backend.Backend
	PostgresURL string
	// ConnectWait is how long a connection to PostgreSQL waits for a
	// server that is full or starting; 0 means system.DefaultConnectWait.
	// Past it the run ends with an error that is backend.ErrEnvironment.
	ConnectWait time.Duration
	// Dir is where sequences keep their databases; "" means os.TempDir().
	Dir string
	// Progress, if not nil, is called about once a second while it runs.
	Progress func(*sim.Stats, time.Duration)
}

// Report is what an exploration found: what ran, how long it took, and
// the failing lane's Recorder.
type Report struct {
	Config Config
	// Stats counts the sequences run (Stats.Sequences: Checks unless a
	// failure or an interruption stopped the run) apart from the runs of
	// rapid's shrinking (Stats.ShrinkRuns).
	Stats *sim.Stats
	// Start is when the run started, Elapsed how long it took.
	Start   time.Time
	Elapsed time.Duration
	// Interrupted is true when ctx was cancelled before the run ended: the
	// report covers the sequences run until then, and a failure may not be
	// minimal.
	Interrupted bool
	// Recorder is what the lane that failed recorded: the minimal failing
	// sequence (nil if none was found), and how many sequences had
	// started, and when, at the first failure (before shrinking).
	Recorder
	// FailureSeed reproduces Failure as the first sequence of an
	// exploration with the same Design, Steps and NoSwarm.
	FailureSeed uint64
	// Problem is rapid's own account of a failure the harness did not
	// record (a panic in the harness itself); empty otherwise.
	Problem string
}

// FirstElapsed is how long the run took to find its first failure, before
// shrinking; 0 when it found none.
func (r Report) FirstElapsed() time.Duration {
	if r.FirstAt.IsZero() {
		return 0
	}
	return r.FirstAt.Sub(r.Start)
}

// StepsPerSecond is the simulated steps per second of wall time, each step
// including the model comparison and the invariant checks.
func (r Report) StepsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Stats.Steps.Load()) / r.Elapsed.Seconds()
}

// SequenceSeed is the rapid seed of sequence i (0-based) of the run with
// seed: seed itself for the first, so that a failure's seed reproduces it
// as the first sequence of a run, and a splitmix64 hash of the two for the
// others (odd, never 0, which asks rapid for a random seed). Unlike
// rapid's own successive seeds (seed, seed+1, seed+3, ...), the runs of
// nearby seeds share no sequence.
func SequenceSeed(seed uint64, i int64) uint64 {
	if i == 0 {
		return seed
	}
	return splitmix64(seed, i) | 1
}

// Sequencer hands out the sequences of a run to its lanes, by their
// index in the run (in the shard, from 0), in increasing order, and
// learns of their failures. A lane runs what Next returns until it
// returns false, and calls Fail as soon as a sequence fails, before
// rapid shrinks it: every index below a failing one is handed out
// already, so the lanes together find the failure of the lowest index,
// whatever their number.
type Sequencer interface {
	// Next returns the index of the sequence a lane runs next, or false
	// when the lane must stop: Checks were handed out, or a sequence of a
	// lower index failed.
	Next() (int64, bool)
	// Fail says that sequence m failed: no index above it is handed out
	// after.
	Fail(m int64)
}

// NewSequencer returns the Sequencer of a run of checks sequences, safe
// for lanes to share.
func NewSequencer(checks int) Sequencer { return &sequencer{checks: int64(checks)} }

// sequencer is NewSequencer's Sequencer.
type sequencer struct {
	checks       int64
	next, failed atomic.Int64 // failed: 1 + the lowest index that failed, 0 while none did
}

func (s *sequencer) Next() (int64, bool) {
	m := s.next.Add(1) - 1
	f := s.failed.Load()
	return m, m < s.checks && (f == 0 || m < f-1)
}

func (s *sequencer) Fail(m int64) {
	for f := s.failed.Load(); f == 0 || m+1 < f; f = s.failed.Load() {
		if s.failed.CompareAndSwap(f, m+1) {
			return
		}
	}
}

// splitmix64 is the i-th value of the splitmix64 stream of seed.
func splitmix64(seed uint64, i int64) uint64 {
	z := seed + uint64(i)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Run runs the rapid property of TestSimulation outside go test: the
// same generators, invariants and shrinking, driven by cfg instead of
// rapid's command-line flags. Each sequence is one rapid check with its
// own seed (SequenceSeed of its index in the run), so that lanes run
// sequences side by side, and shards split a run, without changing which
// sequences make it up. The run stops at the first failure, after
// shrinking it: with several lanes, the others start no sequence once one
// has failed (see Sequencer), and the failure of the lowest index is
// reported.
//
// Cancelling ctx stops the run cleanly: no new sequence starts, the
// running ones finish (a shrink is abandoned), the folder is removed, and
// the report covers what ran, marked Interrupted.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Design.Name == "" {
		cfg.Design = designs.Handoff
	}
	if cfg.Shards == 0 && cfg.Shard == 0 {
		cfg.Shard, cfg.Shards = 1, 1
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if cfg.Transport == "" {
		cfg.Transport = sim.InProcess
	}
	if cfg.Backend == "" {
		cfg.Backend = backend.SQLite
	}
	if err := sim.CheckTransport(cfg.Design, cfg.Transport); err != nil {
		return Report{}, err
	}
	if err := backend.Check(cfg.Backend, cfg.PostgresURL); err != nil {
		return Report{}, err
	}
	switch {
	case cfg.Checks < 1:
		return Report{}, fmt.Errorf("handoff: checks is %d, want at least 1", cfg.Checks)
	case cfg.Steps < 1:
		return Report{}, fmt.Errorf("handoff: steps is %d, want at least 1", cfg.Steps)
	case cfg.Seed == 0:
		return Report{}, fmt.Errorf("handoff: seed 0 asks rapid for a random one; choose a seed")
	case cfg.Shard < 1 || cfg.Shard > cfg.Shards:
		return Report{}, fmt.Errorf("handoff: shard %d of %d, want 1 to %d", cfg.Shard, cfg.Shards, cfg.Shards)
	case cfg.Parallel < 1:
		return Report{}, fmt.Errorf("handoff: parallel is %d, want at least 1", cfg.Parallel)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "handoff-explore-")
	if err != nil {
		return Report{}, fmt.Errorf("handoff: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := rapidFlags.begin(); err != nil {
		return Report{}, err
	}
	defer rapidFlags.end()

	report := Report{Config: cfg, Stats: sim.NewStats(), Start: time.Now()}
	stop := ProgressEverySecond(cfg.Progress, report.Stats)
	seqs := cfg.Sequencer
	if seqs == nil {
		seqs = NewSequencer(cfg.Checks)
	}
	var (
		wg    sync.WaitGroup
		lanes = make([]laneResult, cfg.Parallel)
	)
	for i := range lanes {
		wg.Go(func() {
			lanes[i] = runLane(ctx, cfg, filepath.Join(dir, fmt.Sprint("lane-", i+1)), report.Stats, seqs)
		})
	}
	wg.Wait()
	report.Elapsed = time.Since(report.Start)
	stop()
	report.Interrupted = ctx.Err() != nil
	var first *laneResult
	for i, l := range lanes {
		if l.err != nil {
			return Report{}, l.err
		}
		if l.tb != nil && (first == nil || l.index < first.index) {
			first = &lanes[i]
		}
	}
	if first != nil && first.rec.Environment != nil {
		return Report{}, first.rec.Environment
	}
	if first != nil {
		report.Recorder, report.FailureSeed = *first.rec, first.seed
		if report.Failure == nil {
			report.Problem = strings.Join(first.tb.messages, "\n")
		}
	}
	return report, nil
}

// laneResult is what one lane of an exploration ended with: the failing
// sequence's index, seed, rapid account and recorded run, if one failed.
type laneResult struct {
	index int64
	seed  uint64
	tb    *exploreTB
	rec   *Recorder
	err   error
}

// runLane runs sequences in its own folder, taking their indexes from
// seqs, until seqs has none left for it or ctx is done. It tells seqs of
// a failure as soon as the property records it, so that the other lanes
// stop while rapid shrinks it, and again after the check (a failure of
// the harness itself is not recorded).
func runLane(ctx context.Context, cfg Config, dir string, stats *sim.Stats, seqs Sequencer) laneResult {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return laneResult{err: fmt.Errorf("handoff: %w", err)}
	}
	rec := &Recorder{}
	var m int64 // the index of the sequence the lane runs
	prop, done := Property(ctx, PropertyConfig{Design: cfg.Design, Dir: dir, MaxSteps: cfg.Steps, NoSwarm: cfg.NoSwarm, Transport: cfg.Transport,
		Backend: cfg.Backend, PostgresURL: cfg.PostgresURL, ConnectWait: cfg.ConnectWait, Stats: stats, Recorder: rec, FirstFailure: func() { seqs.Fail(m) }})
	defer done()
	for ctx.Err() == nil {
		var ok bool
		if m, ok = seqs.Next(); !ok {
			break
		}
		i := m*int64(cfg.Shards) + int64(cfg.Shard-1)
		seed := SequenceSeed(cfg.Seed, i)
		tb := &exploreTB{name: "explore/" + cfg.Design.Name}
		rapidFlags.check(tb, seed, prop)
		if tb.failed {
			seqs.Fail(m)
			return laneResult{index: m, seed: seed, tb: tb, rec: rec}
		}
	}
	return laneResult{}
}

// ProgressEverySecond calls progress with stats and the time since it
// started about once a second, until the returned function is called: an
// exploration's progress, whether its lanes run in this process or in
// processes of their own.
func ProgressEverySecond(progress func(*sim.Stats, time.Duration), stats *sim.Stats) func() {
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

// rapidFlags is the one place that sets rapid's command-line flags. rapid
// reads its configuration only from these flags (and testing.Short, which
// needs the testing flags parsed), so a program that runs rapid outside go
// test must go through them; it guards them with its mutex, so that
// explorations can run side by side in one process.
var rapidFlags rapidFlagSet

// rapidFlagSet keeps rapid's flags while explorations use them.
type rapidFlagSet struct {
	mu    sync.Mutex
	users int               // explorations between begin and end
	saved map[string]string // the values before the first of them began
}

// begin readies the flags for an exploration: rapid.nofailfile stays
// true (rapid reads it after a failure, unguarded) until the last
// exploration ends.
func (f *rapidFlagSet) begin() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == 0 {
		if flag.Lookup("test.short") == nil {
			testing.Init()
		}
		if !flag.Parsed() {
			if err := flag.CommandLine.Parse(nil); err != nil {
				return fmt.Errorf("handoff: %w", err)
			}
		}
		f.saved = map[string]string{}
		for _, name := range []string{"rapid.checks", "rapid.seed", "rapid.nofailfile", "rapid.shrinktime"} {
			fl := flag.Lookup(name)
			if fl == nil {
				return fmt.Errorf("handoff: rapid has no flag %s", name)
			}
			f.saved[name] = fl.Value.String()
		}
		if err := flag.Set("rapid.nofailfile", "true"); err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
		if err := flag.Set("rapid.shrinktime", shrinkTime.String()); err != nil {
			return fmt.Errorf("handoff: %w", err)
		}
	}
	f.users++
	return nil
}

// shrinkTime is how long rapid may shrink an exploration's failure: long
// enough that it shrinks to the end on a loaded machine too, so that a
// seed gives the same minimal scenario whatever else runs (rapid's own
// limit, 30 s, cut a search short when two test suites shared two
// cores). Interrupting the run ends its shrinking within a few runs.
const shrinkTime = 10 * time.Minute

// end puts the flags back once the last exploration has ended.
func (f *rapidFlagSet) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users--; f.users == 0 {
		for name, v := range f.saved {
			_ = flag.Set(name, v) // the value was read from this flag in begin
		}
	}
}

// check runs prop as exactly one rapid check with seed (and, if it fails,
// rapid's shrinking). rapid divides rapid.checks by 5 under go test
// -short: it is set so that the quotient is 1.
func (f *rapidFlagSet) check(tb rapid.TB, seed uint64, prop func(*rapid.T)) {
	checks := "1"
	if testing.Short() {
		checks = "5"
	}
	f.checkWith(tb, func() func() {
		// Both values are valid for their flags; end puts them back.
		_ = flag.Set("rapid.checks", checks)
		_ = flag.Set("rapid.seed", strconv.FormatUint(seed, 10))
		return nil
	}, prop)
}

// checkAsGiven runs rapid.Check(tb, prop) with rapid.checks and
// rapid.seed as the command line gave them, even while explorations in
// the same process have set them for their own checks: a test's property
// (TestSimulation's, Verify's) must run the checks it was asked for. A
// checks above 0 replaces rapid.checks for this check only (under
// -short, a fifth of it, at least one), and a seed above 0 rapid.seed.
func (f *rapidFlagSet) checkAsGiven(tb rapid.TB, checks int, seed uint64, prop func(*rapid.T)) {
	f.checkWith(tb, func() (undo func()) {
		if f.users > 0 {
			for _, name := range []string{"rapid.checks", "rapid.seed"} {
				_ = flag.Set(name, f.saved[name]) // the value was read from this flag in begin
			}
		}
		givenChecks, givenSeed := flag.Lookup("rapid.checks").Value.String(), flag.Lookup("rapid.seed").Value.String()
		if seed > 0 {
			_ = flag.Set("rapid.seed", strconv.FormatUint(seed, 10)) // a valid seed
		}
		if checks > 0 {
			if testing.Short() {
				checks = max(checks, 5) // rapid runs a fifth: at least one
			}
			_ = flag.Set("rapid.checks", strconv.Itoa(checks)) // a valid count
		}
		return func() {
			_ = flag.Set("rapid.checks", givenChecks)
			_ = flag.Set("rapid.seed", givenSeed)
		}
	}, prop)
}

// checkWith runs rapid.Check(tb, prop) with rapid's flags as set leaves
// them, and puts back what the func set returns undoes, if anything.
// rapid reads its flags once, before the property first runs, so the
// mutex is held from setting them until then.
func (f *rapidFlagSet) checkWith(tb rapid.TB, set func() (undo func()), prop func(*rapid.T)) {
	f.mu.Lock()
	var once sync.Once
	var undo func()
	release := func() {
		once.Do(func() {
			if undo != nil {
				undo()
			}
			f.mu.Unlock()
		})
	}
	defer release()
	undo = set()
	rapid.Check(tb, func(t *rapid.T) {
		release()
		prop(t)
	})
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

// Check runs rapid.Check(tb, prop) with rapid's flags as the command line
// gave them (-rapid.checks, -rapid.seed), even while explorations in the
// same process set them for their own sequences: a test's property must
// run the checks it was asked for.
func Check(tb rapid.TB, prop func(*rapid.T)) { rapidFlags.checkAsGiven(tb, 0, 0, prop) }

// DrawStream returns n draws' worth of fuzz input (eight bytes a draw)
// from a splitmix64 stream with the given seed.
func DrawStream(seed uint64, n int) []byte {
	b := make([]byte, 0, 8*n)
	for i := range n {
		b = binary.LittleEndian.AppendUint64(b, splitmix64(seed, int64(i+1)))
	}
	return b
}
