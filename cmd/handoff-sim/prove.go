package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/outboxlab/handoff/internal/cli"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/exhaustive"
	"github.com/outboxlab/handoff/internal/lanes"
	htmlreport "github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/model"
)

// Defaults of prove.
const (
	defaultProveDepth = 3
	defaultProveTime  = 10 * time.Minute
)

// proveCmd runs the exhaustive search (internal/exhaustive) and says what
// it proved: the bound, the alphabet, the states and transitions, the
// depth completed and the time. A violation is the shortest sequence
// that makes it, printed, and saved with its report when asked. On
// SIGINT or SIGTERM, or at the time limit, it stops, prints what it
// completed and fails.
func proveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("prove", flag.ContinueOnError)
	depth := fs.Int("depth", defaultProveDepth, "the bound: every sequence of up to this many steps runs (a config line counts, the design line does not)")
	limit := fs.Duration("time", defaultProveTime, "stop after this long, and say which depth was completed")
	designName := fs.String("design", designs.Handoff.Name, "design to search (handoff designs lists them)")
	reduce := fs.String("reduce", "both", "which states count as one beyond equal ones: keys (a state and the same with the two cases swapped), workers (with workers A and B swapped), both, or none")
	workers := fs.String("workers", "A,B,P", "the named workers, comma-separated (P is the pipelined one), or none; those the design supports run")
	cases := fs.Int("cases", 2, "how many cases are approved: 1 or 2")
	configs := fs.Bool("configs", true, "a sequence may start with a config line: a retention, backoff, or a time budget")
	save := fs.String("save", "", "save the shortest failing scenario as a file in this folder")
	reportPath := fs.String("report", "", "write a failure's report, an HTML page of it, to this file (default: beside the scenario --save saves)")
	dir := fs.String("dir", "", "folder for the search's databases (default: the system's temporary folder)")
	parallel := fs.Int("parallel", runtime.NumCPU(), "lanes that expand the states of a depth side by side, each a process of its own when more than one; the result is the same whatever it is (default: the number of CPUs)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	if err := cli.Parse(fs, args, stderr, false); err != nil {
		return err
	}
	for _, err := range []error{cli.ExistingFolder("dir", *dir), cli.NotAFile("save", *save), cli.NotAFolder("report", *reportPath)} {
		if err != nil {
			return err
		}
	}
	design, err := lookupDesign(*designName)
	if err != nil {
		return err
	}
	reduction, ok := exhaustive.Reductions[*reduce]
	if !ok {
		return fmt.Errorf("%w: --reduce is %q, want %s", cli.ErrUsage, *reduce, strings.Join(slices.Sorted(maps.Keys(exhaustive.Reductions)), ", "))
	}
	alphabet, err := proveAlphabet(*workers, *cases, *configs)
	if err != nil {
		return err
	}
	// One lane runs here, one step at a time: a second processor makes it
	// no faster (see explore's one lane). Each of several runs in a
	// process of its own.
	var searchLanes []exhaustive.Lane
	if *parallel == 1 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	} else {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this program, to run its lanes: %w", err)
		}
		if searchLanes, err = lanes.ProveLanes(exe, *parallel, exhaustive.LaneConfig{Design: design, Alphabet: alphabet, Reduction: reduction, Dir: *dir}); err != nil {
			return err
		}
		defer func() {
			for _, l := range searchLanes {
				err = errors.Join(err, l.Close())
			}
		}()
	}
	again := fmt.Sprintf("%s prove --design %s --depth %d --reduce %s --workers %s --cases %d", cli.InvokedAs(os.Args[0]), design.Name, *depth, reduction, *workers, *cases)
	if !*configs {
		again += " --configs=false"
	}
	fmt.Fprintf(stderr, "proving design %s up to depth %d within %v; to run it again: %s\n", design.Name, *depth, *limit, again)
	timed, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	start := time.Now()
	r, err := exhaustive.Search(timed, exhaustive.Config{Design: design, Depth: *depth, Alphabet: alphabet, Reduction: reduction, Dir: *dir, Lanes: searchLanes,
		Progress: func(l exhaustive.Level) {
			fmt.Fprintf(stderr, "depth %d completed: %s, %s, %.1fs\n", l.Depth, words.HowMany(l.States, "new state"), words.HowMany(l.Transitions, "transition"), time.Since(start).Seconds())
		}})
	if err != nil {
		return err
	}
	stopped := ""
	switch {
	case r.Stopped == nil:
	case errors.Is(r.Stopped, context.DeadlineExceeded) && ctx.Err() == nil:
		stopped = "the time limit"
	default:
		stopped = "an interruption"
	}
	reproduce := again
	if r.Failure != nil && design.Name == designs.Handoff.Name {
		reproduce += " --save corpus"
	}
	if *asJSON {
		err = printProofJSON(stdout, r, stopped, reproduce)
	} else {
		printProof(stdout, r, stopped, reproduce)
	}
	if err != nil {
		return err
	}
	if r.Failure != nil {
		if err := saveProofFailure(r.Failure, *save, *reportPath, reproduce, stderr); err != nil {
			return err
		}
	}
	switch {
	case r.Failure != nil && design.Name == designs.Handoff.Name:
		return fmt.Errorf("invariant %d broke; the shortest scenario is above", r.Failure.Violation.Invariant)
	case r.Failure != nil:
		return nil
	case stopped != "":
		return fmt.Errorf("stopped by %s with depth %d of %d completed; to run it again: %s", stopped, r.Completed, *depth, again)
	case design.Name != designs.Handoff.Name:
		return fmt.Errorf("no violation found in fragile design %s up to depth %d", design.Name, *depth)
	}
	return nil
}

// proveAlphabet is the alphabet prove's flags ask for, or a usage error.
func proveAlphabet(workers string, cases int, configs bool) (exhaustive.Alphabet, error) {
	a := exhaustive.DefaultAlphabet()
	if cases != 1 && cases != 2 {
		return a, fmt.Errorf("%w: --cases is %d, want 1 or 2", cli.ErrUsage, cases)
	}
	a.Cases = a.Cases[:cases]
	a.Workers = []string{}
	if workers != "none" {
		for _, w := range strings.Split(workers, ",") {
			if w == "" || slices.Contains(a.Workers, w) || strings.ContainsAny(w, " =\"") || w == model.DefaultWorker {
				return a, fmt.Errorf("%w: --workers is %q, want names such as A,B,P (each once; P is the pipelined one), or none", cli.ErrUsage, workers)
			}
			a.Workers = append(a.Workers, w)
		}
	}
	if !configs {
		a.Configs = []sim.Step{}
	}
	return a, nil
}

// printProof prints what the search proved or found.
func printProof(w io.Writer, r exhaustive.Result, stopped, reproduce string) {
	d := r.Config.Design
	switch {
	case r.Failure != nil:
		fmt.Fprintf(w, "design %s breaks invariant %d in %s, and no shorter sequence does\n", d.Name, r.Failure.Violation.Invariant, words.HowMany(r.Failure.Length(), "step"))
	case stopped != "":
		fmt.Fprintf(w, "design %s: no sequence of up to %s breaks an invariant (stopped by %s at depth %d of %d)\n", d.Name, words.HowMany(r.Completed, "step"), stopped, r.Completed+1, r.Config.Depth)
	default:
		fmt.Fprintf(w, "design %s: no sequence of up to %s breaks an invariant\n", d.Name, words.HowMany(r.Completed, "step"))
	}
	l := r.Alphabet.Letters(d)
	fmt.Fprintf(w, "  bound:       depth %d, %d completed\n", r.Config.Depth, r.Completed)
	fmt.Fprintf(w, "  alphabet:    cases %s; workers %s; configs %s\n", strings.Join(l.Cases, ", "), listOrNone(l.Workers), listOrNone(l.Configs))
	fmt.Fprintf(w, "               directives %s\n", strings.Join(l.Directives, ", "))
	fmt.Fprintf(w, "               faults %s\n", listOrNone(l.Faults))
	fmt.Fprintf(w, "               ticks %s\n", l.Ticks)
	fmt.Fprintf(w, "  reduction:   %s\n", r.Config.Reduction)
	var levels []string
	for _, lv := range r.Levels {
		levels = append(levels, fmt.Sprintf("%d at depth %d", lv.States, lv.Depth))
	}
	fmt.Fprintf(w, "  states:      %d (1 empty, %s)\n", r.States, strings.Join(levels, ", "))
	fmt.Fprintf(w, "  transitions: %d checked, and %d steps replayed to restore states\n", r.Transitions, r.Replayed)
	fmt.Fprintf(w, "  time:        %.1fs, %.0f states/s, %.0f steps/s\n", r.Elapsed.Seconds(), r.StatesPerSecond(), float64(r.Transitions+r.Replayed)/max(r.Elapsed.Seconds(), 1e-9))
	if f := r.Failure; f != nil {
		fmt.Fprintf(w, "\n%s\n%s", f.Table(), f.Report(reproduce))
	}
}

// listOrNone joins items, or says none.
func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}

// proofSummary is the JSON form of a search's result.
type proofSummary struct {
	Design         string             `json:"design"`
	Depth          int                `json:"depth"`
	Completed      int                `json:"completed_depth"`
	Stopped        *string            `json:"stopped"`
	Reduction      string             `json:"reduction"`
	Alphabet       exhaustive.Letters `json:"alphabet"`
	States         int64              `json:"states"`
	Transitions    int64              `json:"transitions"`
	ReplayedSteps  int64              `json:"replayed_steps"`
	Levels         []proofLevel       `json:"levels"`
	ElapsedSeconds float64            `json:"elapsed_seconds"`
	StatesPerSec   float64            `json:"states_per_second"`
	Violation      *violationJSON     `json:"violation"`
	Scenario       *string            `json:"scenario"`
	Reproduce      *string            `json:"reproduce"`
}

// proofLevel is one depth of the search, in JSON.
type proofLevel struct {
	Depth          int     `json:"depth"`
	States         int64   `json:"states"`
	Transitions    int64   `json:"transitions"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
}

func printProofJSON(w io.Writer, r exhaustive.Result, stopped, reproduce string) error {
	s := proofSummary{Design: r.Config.Design.Name, Depth: r.Config.Depth, Completed: r.Completed, Stopped: cli.Optional(stopped),
		Reduction: r.Config.Reduction.String(), Alphabet: r.Alphabet.Letters(r.Config.Design),
		States: r.States, Transitions: r.Transitions, ReplayedSteps: r.Replayed, Levels: []proofLevel{},
		ElapsedSeconds: r.Elapsed.Seconds(), StatesPerSec: r.StatesPerSecond()}
	for _, l := range r.Levels {
		s.Levels = append(s.Levels, proofLevel{l.Depth, l.States, l.Transitions, l.Elapsed.Seconds()})
	}
	if f := r.Failure; f != nil {
		scenario := f.Scenario(f.Header()...)
		s.Violation = newViolationJSON(f)
		s.Scenario, s.Reproduce = &scenario, &reproduce
	}
	return cli.EncodeJSON(w, s)
}

// saveProofFailure saves f as a scenario file into dir (if not empty)
// and writes its report to reportPath, or beside the file saved.
func saveProofFailure(f *sim.Failure, dir, reportPath, reproduce string, stderr io.Writer) error {
	if dir != "" {
		path, err := sim.SaveCounterexample(dir, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "saved the shortest scenario as %s\n", path)
		if reportPath == "" {
			reportPath = htmlreport.Beside(path)
		}
	}
	if reportPath == "" {
		return nil
	}
	in, err := htmlreport.FromFailure(f, reproduce)
	if err != nil {
		return err
	}
	written, err := htmlreport.WriteFile(reportPath, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote the report: %s\n", written)
	return nil
}
