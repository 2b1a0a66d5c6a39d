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
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// replay replays scenario files and compares every step's output. Over
// http it skips, saying so, the scenarios of a design that runs in
// process only; on either backend those whose backend line names the
// other (sim.ErrOtherBackend), saying why.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	quiet := fs.Bool("quiet", false, "print only mismatches and the summary")
	transportName := fs.String("transport", string(sim.InProcess), "how the worker's requests reach the CRM in a file that names no transport: in-process, or http")
	backendFlags := addBackendFlags(fs)
	if err := parse(fs, args, stderr, true); err != nil {
		return err
	}
	transport, err := sim.ParseTransport(*transportName)
	if err != nil {
		return fmt.Errorf("%w: --transport: %s", errUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	backend, postgresURL, err := backendFlags.values(ctx)
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
	steps, mismatches, skipped := 0, 0, 0
	for _, sc := range scenarios {
		outputs, problems, err := replayOne(ctx, sc, sim.Config{Transport: transport, Backend: backend, PostgresURL: postgresURL})
		if errors.Is(err, sim.ErrOtherBackend) {
			fmt.Fprintf(stderr, "skipped %v\n", err)
			skipped++
			continue
		}
		if err != nil {
			return err
		}
		steps += len(outputs)
		mismatches += len(problems)
		if !*quiet {
			fmt.Fprintf(stdout, "== %s (design %s)\n", sc.Name, sc.Design())
			for i, c := range sc.Cases {
				fmt.Fprintf(stdout, "%s\n    %s\n", c.Text, strings.ReplaceAll(outputs[i], "\n", "\n    "))
			}
		}
		for _, p := range problems {
			fmt.Fprintln(stderr, p.Error())
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
func replayOne(ctx context.Context, sc sim.Scenario, cfg sim.Config) ([]string, []sim.Problem, error) {
	dir, err := os.MkdirTemp("", "handoff-replay-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	cfg.Dir = dir
	return sim.ReplayWith(ctx, sc, cfg)
}
