package main

import (
	"context"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/lanes"
	htmlreport "github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// exploreCmd runs the rapid property outside go test and prints a summary.
// It prints its seed, and the command that reproduces the run, first; on
// SIGINT or SIGTERM it stops starting sequences, prints the partial
// summary and fails. When the environment fails (exit status 4) it
// prints, with --json, an environmentFailure instead of the summary.
func exploreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	checks := fs.Int("checks", explore.DefaultChecks, "random sequences to try")
	steps := fs.Int("steps", explore.DefaultSteps, "the most random steps a sequence takes")
	seed := fs.Uint64("seed", 0, "seed of the first sequence (default: a fresh one, printed in the summary)")
	designName := fs.String("design", designs.Handoff.Name, "design to explore (handoff-sim designs lists them)")
	save := fs.String("save", "", "save the minimal failing scenario as a file in this folder")
	reportPath := fs.String("report", "", "write the run's report to this file: an HTML page of what the run reached, as charts, and of a failure as a picture (default: a failure's, beside the scenario --save saves)")
	dir := fs.String("dir", "", "folder for the sequences' databases (default: the system's temporary folder)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	defer func() {
		if *asJSON && cli.Environmental(err) {
			if jerr := cli.EncodeJSON(stdout, environmentFailure{Environment: cli.Message(err), ExitStatus: 4}); jerr != nil {
				err = jerr
			}
		}
	}()
	parallel := fs.Int("parallel", runtime.NumCPU(), "sequences to run at once, each lane a process of its own when more than one; the sequences are the same whatever it is (default: the number of CPUs)")
	shardFlag := fs.String("shard", "1/1", "run shard i/n of the run's sequences (every n-th, from the i-th), --checks of them")
	swarm := fs.Bool("swarm", true, "swarm testing: one sequence in four reweights or switches off kinds of steps and faults")
	transportName := fs.String("transport", string(sim.InProcess), "how the worker's requests reach the CRM: in-process, or http (crm.Sender through a fault proxy to crm.Server on loopback)")
	backendFlags := cli.AddBackendFlags(fs)
	if err := cli.Parse(fs, args, stderr, false); err != nil {
		return err
	}
	// The run's paths are checked before it connects or writes anything:
	// a report or a scenario it could not write would be found only at
	// its end.
	for _, err := range []error{cli.ExistingFolder("dir", *dir), cli.NotAFile("save", *save), cli.NotAFolder("report", *reportPath)} {
		if err != nil {
			return err
		}
	}
	which, postgresURL, err := backendFlags.Values(ctx, func(u string) string { return cli.ConnectionsNeeded(u, *parallel) })
	if err != nil {
		return err
	}
	var shard, shards int
	if _, err := fmt.Sscanf(*shardFlag, "%d/%d", &shard, &shards); err != nil || shard < 1 || shard > shards ||
		fmt.Sprintf("%d/%d", shard, shards) != *shardFlag {
		return fmt.Errorf("%w: --shard is %q, want i/n with 1 <= i <= n", cli.ErrUsage, *shardFlag)
	}
	design, err := lookupDesign(*designName)
	if err != nil {
		return err
	}
	transport, err := sim.ParseTransport(*transportName)
	if err == nil {
		err = sim.CheckTransport(design, transport)
	}
	if err != nil {
		return fmt.Errorf("%w: --transport: %s", cli.ErrUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	// One lane runs here, one goroutine at a time, on one processor; each
	// of several runs in a process of its own, on one (see lanes.Run).
	// A second processor makes one lane no faster and costs CPU time, the
	// runtime's threads taking turns with the lane's around SQLite's
	// system calls.
	if *parallel == 1 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	if *seed == 0 {
		*seed = new(maphash.Hash).Sum64() | 1
	}
	common := fmt.Sprintf("%s explore --design %s --steps %d", cli.InvokedAs(os.Args[0]), design.Name, *steps)
	if !*swarm {
		common += " --swarm=false"
	}
	if transport != sim.InProcess {
		common += " --transport " + string(transport)
	}
	common += backendFlags.Flags()
	again := fmt.Sprintf("%s --seed %d --checks %d", common, *seed, *checks)
	if shards > 1 {
		again += " --shard " + *shardFlag
	}
	fmt.Fprintf(stderr, "exploring design %s (%s) with seed %d; to run it again: %s\n", design.Name, transport, *seed, again)
	if which == backend.Postgres {
		fmt.Fprintln(stderr, cli.ConnectionsNeeded(postgresURL, *parallel))
	}
	cfg := explore.Config{Design: design, Checks: *checks, Steps: *steps, Seed: *seed, Dir: *dir,
		Shard: shard, Shards: shards, Parallel: *parallel, NoSwarm: !*swarm, Transport: transport,
		Backend: which, PostgresURL: postgresURL, ConnectWait: *backendFlags.Wait, Progress: progressLine(stderr, *checks)}
	report, err := runExploration(ctx, cfg)
	if err != nil && cli.Environmental(err) && which == backend.Postgres {
		err = fmt.Errorf("%w\n%s", err, cli.ConnectionsNeeded(postgresURL, *parallel))
	}
	if err != nil {
		return err
	}
	fmt.Fprint(stderr, progressDone(stderr))
	reproduce := fmt.Sprintf("%s --seed %d --checks 1", common, report.FailureSeed)
	if design.Name == designs.Handoff.Name {
		reproduce += " --save corpus"
	}
	if *asJSON {
		if err := printJSON(stdout, report, reproduce); err != nil {
			return err
		}
	} else {
		printSummary(stdout, report, reproduce)
	}
	if report.Failure != nil && *save != "" {
		path, err := sim.SaveCounterexample(*save, report.Failure)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "saved the minimal scenario as %s\n", path)
		if *reportPath == "" {
			*reportPath = htmlreport.Beside(path)
		}
	}
	if *reportPath != "" {
		if err := writeExploreReport(*reportPath, report, reproduce, which, stderr); err != nil {
			return err
		}
	}
	switch {
	case report.Interrupted:
		return fmt.Errorf("interrupted after %d of %s; to run it again: %s", report.Stats.Sequences.Load(), words.HowMany(*checks, "sequence"), again)
	case report.Problem != "":
		return fmt.Errorf("the harness itself failed:\n%s", report.Problem)
	case report.Failure != nil && design.Name == designs.Handoff.Name:
		return fmt.Errorf("invariant %d broke; the minimal scenario is above", report.Failure.Violation.Invariant)
	case report.Failure == nil && design.Name != designs.Handoff.Name:
		return fmt.Errorf("no violation found in fragile design %s after %s", design.Name, words.HowMany(*checks, "sequence"))
	}
	return nil
}

// writeExploreReport writes the report of exploration r to path: its
// coverage as charts, and its failure, if any, as a picture.
func writeExploreReport(path string, r explore.Report, reproduce string, b backend.Backend, stderr io.Writer) error {
	in := htmlreport.Input{}
	if r.Failure != nil {
		var err error
		if in, err = htmlreport.FromFailure(r.Failure, reproduce); err != nil {
			return err
		}
	}
	in.Coverage = &htmlreport.Coverage{Design: r.Config.Design.Name, Seed: r.Config.Seed, Transport: string(r.Config.Transport), Backend: string(b), Stats: r.Stats}
	written, err := htmlreport.WriteFile(path, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote the report: %s\n", written)
	return nil
}

// runExploration runs cfg's exploration: in this process for one lane,
// each lane in a process of its own for more (see lanes.Run).
func runExploration(ctx context.Context, cfg explore.Config) (explore.Report, error) {
	if cfg.Parallel == 1 {
		return explore.Run(ctx, cfg)
	}
	exe, err := os.Executable()
	if err != nil {
		return explore.Report{}, fmt.Errorf("finding this program, to run its lanes: %w", err)
	}
	return lanes.Run(ctx, exe, cfg)
}

// progressLine returns the progress callback: a line rewritten in place on
// a terminal, a line every ten seconds elsewhere.
func progressLine(w io.Writer, checks int) func(*sim.Stats, time.Duration) {
	terminal := cli.IsTerminal(w)
	return func(st *sim.Stats, elapsed time.Duration) {
		line := fmt.Sprintf("exploring: %s (of %s), %s, %s, %.0f steps/s",
			words.HowMany(st.Sequences.Load(), "sequence"), words.HowMany(checks, "check"), words.HowMany(st.ShrinkRuns.Load(), "shrink run"), words.HowMany(st.Steps.Load(), "step"),
			float64(st.Steps.Load())/elapsed.Seconds())
		switch {
		case terminal:
			fmt.Fprintf(w, "\r%s ", line)
		case int(elapsed.Seconds())%10 == 0:
			fmt.Fprintln(w, line)
		}
	}
}

// progressDone ends an in-place progress line on a terminal.
func progressDone(w io.Writer) string {
	if cli.IsTerminal(w) {
		return "\n"
	}
	return ""
}

func printSummary(w io.Writer, r explore.Report, reproduce string) {
	st := r.Stats
	fmt.Fprintf(w, "explored design %s (%s): %s (%s asked) and %s, %s in %.1fs = %.0f steps/s, seed %d, %s",
		r.Config.Design.Name, r.Config.Transport, words.HowMany(st.Sequences.Load(), "sequence"), words.HowMany(r.Config.Checks, "check"), words.HowMany(st.ShrinkRuns.Load(), "shrink run"),
		words.HowMany(st.Steps.Load(), "step"), r.Elapsed.Seconds(), r.StepsPerSecond(), r.Config.Seed, words.HowMany(r.Config.Parallel, "lane"))
	if r.Config.Shards > 1 {
		fmt.Fprintf(w, ", shard %d/%d", r.Config.Shard, r.Config.Shards)
	}
	if r.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  faults injected: %s\n", cli.Counts(st.Faults))
	fmt.Fprintf(w, "  transitions:     %s\n", cli.Counts(st.Transitions))
	fmt.Fprintf(w, "  worker results:  %s\n", cli.Counts(st.Results))
	fmt.Fprintf(w, "  other steps:     %s\n", cli.Counts(st.Phases))
	fmt.Fprintf(w, "  input classes:   %d of %d drawn\n", len(st.InputClasses), len(sim.InputClasses))
	fmt.Fprintf(w, "  shapes (steps):  %s\n", cli.Counts(st.Shapes))
	if r.Failure == nil {
		fmt.Fprintln(w, "  failures:        0")
		return
	}
	fmt.Fprintf(w, "  failures:        1 (seed %d)\n\n", r.FailureSeed)
	f := r.Failure
	if f.Design != designs.Handoff.Name {
		fmt.Fprintf(w, "caught: the minimal counterexample of %s, %s\n(reproduce: %s; add --save DIR for a scenario file)\n\n%s%s",
			f.Design, words.HowMany(f.Length(), "step"), reproduce, f.Table(), f.Diverged())
		return
	}
	fmt.Fprintf(w, "%s\n%s", f.Table(), f.Report(reproduce))
}

// summary is the JSON form of a report.
// environmentFailure is explore's JSON output when the environment
// failed, not the design (exit status 4): nothing was proved either way.
type environmentFailure struct {
	Environment string `json:"environment"`
	ExitStatus  int    `json:"exit_status"`
}

type summary struct {
	Design           string         `json:"design"`
	Transport        string         `json:"transport"`
	Seed             uint64         `json:"seed"`
	Checks           int            `json:"checks"`
	StepsPerSequence int            `json:"steps_per_sequence"`
	Sequences        int64          `json:"sequences"`
	ShrinkRuns       int64          `json:"shrink_runs"`
	Parallel         int            `json:"parallel"`
	Shard            string         `json:"shard"`
	Interrupted      bool           `json:"interrupted"`
	InputClasses     map[string]int `json:"input_classes"`
	Shapes           map[string]int `json:"shapes"`
	Steps            int64          `json:"steps"`
	ElapsedSeconds   float64        `json:"elapsed_seconds"`
	StepsPerSecond   float64        `json:"steps_per_second"`
	Faults           map[string]int `json:"faults"`
	Transitions      map[string]int `json:"transitions"`
	Results          map[string]int `json:"results"`
	Phases           map[string]int `json:"phases"`
	Failures         int            `json:"failures"`
	Violation        *violationJSON `json:"violation"`
	Scenario         *string        `json:"scenario"`
	FailureSeed      *uint64        `json:"failure_seed"`
	Reproduce        *string        `json:"reproduce"`
}

// violationJSON is the violation object of explore's and prove's JSON
// (docs/json.md): what the failing sequence broke, as violation.Violation
// says it, and the sequence's length.
type violationJSON struct {
	Invariant int    `json:"invariant"`
	Name      string `json:"name"`
	Detail    string `json:"detail"`
	Steps     int    `json:"steps"`
}

// newViolationJSON is the violation object of f.
func newViolationJSON(f *sim.Failure) *violationJSON {
	return &violationJSON{f.Violation.Invariant, f.Violation.Name, f.Violation.Detail, f.Length()}
}

func printJSON(w io.Writer, r explore.Report, reproduce string) error {
	st := r.Stats
	s := summary{
		Design: r.Config.Design.Name, Transport: string(r.Config.Transport), Seed: r.Config.Seed, Checks: r.Config.Checks, StepsPerSequence: r.Config.Steps,
		Sequences: st.Sequences.Load(), ShrinkRuns: st.ShrinkRuns.Load(), Steps: st.Steps.Load(),
		Parallel: r.Config.Parallel, Shard: fmt.Sprintf("%d/%d", r.Config.Shard, r.Config.Shards), Interrupted: r.Interrupted,
		InputClasses: stringKeys(st.InputClasses), Shapes: stringKeys(st.Shapes),
		ElapsedSeconds: r.Elapsed.Seconds(), StepsPerSecond: r.StepsPerSecond(),
		Faults: stringKeys(st.Faults), Transitions: stringKeys(st.Transitions), Results: stringKeys(st.Results), Phases: st.Phases,
	}
	if f := r.Failure; f != nil {
		scenario := f.Scenario(f.Header()...)
		s.Failures = 1
		s.Violation = newViolationJSON(f)
		s.Scenario, s.FailureSeed, s.Reproduce = &scenario, &r.FailureSeed, &reproduce
	}
	return cli.EncodeJSON(w, s)
}

func stringKeys[K ~string](m map[K]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}
