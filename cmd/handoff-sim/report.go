package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/outboxlab/handoff/internal/cli"
	htmlreport "github.com/outboxlab/handoff/internal/report"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// reportCmd replays one scenario file and writes its report: the run as
// a sequence diagram, every step's state, where the model and the system
// first disagreed, the broken invariant if one broke, the steps whose
// output differs from the file's. It prints the report's path and what
// the run did in one line.
func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("out", "", "write the report to this file (default: beside FILE, FILE.html for FILE.txt)")
	transportName := fs.String("transport", string(sim.InProcess), "how the worker's requests reach the CRM when the file names no transport: in-process, or http")
	backendFlags := cli.AddBackendFlags(fs)
	if err := cli.Parse(fs, args, stderr, true); err != nil {
		return err
	}
	if err := cli.NotAFolder("out", *out); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: report takes one scenario file, got %d", cli.ErrUsage, fs.NArg())
	}
	transport, err := sim.ParseTransport(*transportName)
	if err != nil {
		return fmt.Errorf("%w: --transport: %s", cli.ErrUsage, strings.TrimPrefix(err.Error(), "handoff: "))
	}
	backend, postgresURL, err := backendFlags.Values(ctx, func(u string) string { return cli.ConnectionsNeeded(u, 1) })
	if err != nil {
		return err
	}
	file := fs.Arg(0)
	sc, err := readScenario(file)
	if err != nil {
		return err
	}
	run, problems, err := replayOne(ctx, sc, sim.Config{Transport: transport, Backend: backend, PostgresURL: postgresURL, ConnectWait: *backendFlags.Wait})
	if errors.Is(err, sim.ErrOtherBackend) {
		return fmt.Errorf("%v: give --backend to run it", err)
	}
	if err != nil {
		return err
	}
	in := replayReport(sc, run, problems)
	path := *out
	if path == "" {
		path = htmlreport.Beside(file)
	}
	if path == file {
		return fmt.Errorf("%w: --out names the scenario file itself", cli.ErrUsage)
	}
	written, err := htmlreport.WriteFile(path, in)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("design %s kept every invariant", run.Design)
	if v := in.Violation; v != nil {
		what = fmt.Sprintf("design %s broke invariant %d (%s)", run.Design, v.Invariant, v.Name)
	}
	if n := len(in.Mismatched); n > 0 {
		what += "; " + words.Agree(n, "output", "differs", "differ") + " from the file's"
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %s\n", written, words.HowMany(run.Length(), "step"), what)
	return nil
}
