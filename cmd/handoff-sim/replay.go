package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/cli"
	htmlreport "github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// replay replays scenario files and compares every step's output. Over
// http it skips, saying so, the scenarios of a design that runs in
// process only; on either backend those whose backend line names the
// other (sim.ErrOtherBackend), saying why. A file that fails gets a
// report beside it (the embedded corpus's files, none), or the first
// that fails at the path --report names.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	quiet := fs.Bool("quiet", false, "print only mismatches and the summary")
	reportPath := fs.String("report", "", "write the report of the first file that fails (an HTML page of the run as a picture) to this file (default: every file named that fails gets one beside it, FILE.html for FILE.txt)")
	transportName := fs.String("transport", string(sim.InProcess), "how the worker's requests reach the CRM in a file that names no transport: in-process, or http")
	backendFlags := cli.AddBackendFlags(fs)
	if err := cli.Parse(fs, args, stderr, true); err != nil {
		return err
	}
	if err := cli.NotAFolder("report", *reportPath); err != nil {
		return err
	}
	transport, err := sim.ParseTransport(*transportName)
	if err != nil {
		return fmt.Errorf("%w: --transport: %s", cli.ErrUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	backend, postgresURL, err := backendFlags.Values(ctx, func(u string) string { return cli.ConnectionsNeeded(u, 1) })
	if err != nil {
		return err
	}
	scenarios, err := readScenarios(fs.Args())
	if err != nil {
		return err
	}
	scenarios = overTransport(scenarios, transport, stderr)
	if len(scenarios) == 0 {
		return fmt.Errorf("nothing to replay over %s", transport)
	}
	steps, mismatches, skipped, reported := 0, 0, 0, 0
	for _, sc := range scenarios {
		run, problems, err := replayOne(ctx, sc, sim.Config{Transport: transport, Backend: backend, PostgresURL: postgresURL, ConnectWait: *backendFlags.Wait})
		if errors.Is(err, sim.ErrOtherBackend) {
			fmt.Fprintf(stderr, "skipped %v\n", err)
			skipped++
			continue
		}
		if err != nil {
			return err
		}
		steps += len(run.Outcomes)
		mismatches += len(problems)
		if !*quiet {
			fmt.Fprintf(stdout, "== %s (design %s)\n", sc.Name, sc.Design())
			for i, c := range sc.Cases {
				fmt.Fprintf(stdout, "%s\n    %s\n", c.Text, strings.ReplaceAll(run.Outcomes[i].Output, "\n", "\n    "))
			}
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, p.Error())
		}
		path := *reportPath
		if path == "" && len(fs.Args()) > 0 {
			path = htmlreport.Beside(sc.Name)
		}
		if len(problems) > 0 && path != "" && (reported == 0 || *reportPath == "") {
			written, err := htmlreport.WriteFile(path, replayReport(sc, run, problems))
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "wrote the report of %s: %s\n", sc.Name, written)
			reported++
		}
	}
	replayed := len(scenarios) - skipped
	if mismatches > 0 {
		return fmt.Errorf("%d of %s in %s did not match", mismatches, words.HowMany(steps, "step"), words.HowMany(replayed, "file"))
	}
	if replayed == 0 {
		return fmt.Errorf("nothing to replay on %s: every file runs on another backend", backend)
	}
	fmt.Fprintf(stdout, "replayed %s, %s over %s: every output matches", words.HowMany(replayed, "file"), words.HowMany(steps, "step"), transport)
	if skipped > 0 {
		fmt.Fprintf(stdout, "; skipped %d not applicable on %s", skipped, backend)
	}
	fmt.Fprintln(stdout)
	return nil
}

// overTransport returns the scenarios that can run over t, and says on
// stderr which it skips: those of a design that runs in process only.
func overTransport(scenarios []sim.Scenario, t sim.Transport, stderr io.Writer) []sim.Scenario {
	var kept []sim.Scenario
	for _, sc := range scenarios {
		if d, err := designs.Lookup(sc.Design()); err == nil { // an unknown design fails at its design line
			if err := sim.CheckTransport(d, t); err != nil {
				fmt.Fprintf(stderr, "skipped %s: %s\n", sc.Name, strings.TrimPrefix(err.Error(), "handoff: "))
				continue
			}
		}
		kept = append(kept, sc)
	}
	return kept
}

// replayOne replays a scenario on an Env of cfg in a temporary folder of
// its own (and on PostgreSQL a schema of its own).
func replayOne(ctx context.Context, sc sim.Scenario, cfg sim.Config) (sim.Run, []sim.Problem, error) {
	dir, err := os.MkdirTemp("", "handoff-replay-")
	if err != nil {
		return sim.Run{}, nil, err
	}
	defer os.RemoveAll(dir)
	cfg.Dir = dir
	return sim.Replay(ctx, sc, cfg)
}

// replayReport is the report of scenario sc replayed as run: the steps
// whose output differs from the file's, and the first invariant a step
// broke.
func replayReport(sc sim.Scenario, run sim.Run, problems []sim.Problem) htmlreport.Input {
	in := htmlreport.Input{Run: run, Scenario: sc, Reproduce: fmt.Sprintf("%s replay %s", cli.InvokedAs(os.Args[0]), cli.ShellWord(sc.Name))}
	for i, c := range sc.Cases {
		if i < len(run.Outcomes) && run.Outcomes[i].Output != c.Want {
			in.Mismatched = append(in.Mismatched, i)
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
