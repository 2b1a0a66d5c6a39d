package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxlab/handoff/crm/contract"
	"github.com/outboxlab/handoff/internal/words"
)

// checkReceiver runs SPEC's receiver contract against the endpoint at URL
// and prints a table of clause, verdict and evidence, or one JSON object.
func checkReceiver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check-receiver", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	retention := fs.Duration("retention", 0, "the retention the receiver must state (0: forever); without it, any retention it states consistently passes")
	timeout := fs.Duration("timeout", contract.DefaultTimeout, "the longest each request, and each wait for a key in flight, may take")
	urls, err := operands(fs, args, stderr)
	if err != nil {
		return err
	}
	switch {
	case len(urls) == 0:
		return fmt.Errorf("%w: missing URL (the receiver's base URL)", errUsage)
	case len(urls) > 1:
		return fmt.Errorf("%w: unexpected argument %q", errUsage, urls[1])
	}
	opts := contract.Options{Timeout: *timeout}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "retention" {
			opts.Retention = retention
		}
	})
	report, err := contract.Check(ctx, urls[0], opts)
	if errors.Is(err, contract.ErrBadURL) {
		return fmt.Errorf("%w: %v", errUsage, strings.TrimPrefix(err.Error(), "crm: "))
	}
	if err != nil {
		if report.Results == nil {
			return err
		}
	}
	if *asJSON {
		if err := printCheckJSON(stdout, report); err != nil {
			return err
		}
	} else if err := printCheckTable(stdout, report); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	if failed, skipped := tally(report, contract.Fail), tally(report, contract.Skip); failed+skipped > 0 {
		return fmt.Errorf("the receiver does not keep the contract: %d of %d clauses failed, %d skipped (listed on stdout)", failed, len(report.Results), skipped)
	}
	return nil
}

// checkReceiverHelp says what check-receiver's URL is and what it checks,
// clause by clause, for its help.
func checkReceiverHelp() string {
	names := make([]string, 0, len(contract.Clauses()))
	for _, c := range contract.Clauses() {
		names = append(names, c.String())
	}
	return "URL is the receiver's base URL, http or https: the check sends POST URL/tasks,\n" +
		"GET URL/tasks?key=KEY, GET on a task's Location and GET URL/contract, and leaves\n" +
		"a few tasks there, under keys that start with handoff-check: and the run id.\n" +
		"clauses: " + strings.Join(names, ", ")
}

// tally counts the clauses of r with verdict v.
func tally(r contract.Report, v contract.Verdict) int {
	n := 0
	for _, res := range r.Results {
		if res.Verdict == v {
			n++
		}
	}
	return n
}

// printCheckTable prints the report as a line on the run, a table of
// clause, verdict and evidence, and a summary line.
func printCheckTable(w io.Writer, r contract.Report) error {
	fmt.Fprintf(w, "check-receiver %s: run %s, keys %s*\n\n", r.URL, r.RunID, r.KeyPrefix)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "clause\tverdict\tevidence")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", res.Clause, res.Verdict, res.Evidence)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "the receiver keeps the contract"
	if !r.OK() {
		verdict = "the receiver does not keep the contract"
	}
	_, err := fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d skipped; %s\n",
		words.HowMany(len(r.Results), "clause"), tally(r, contract.Pass), tally(r, contract.Fail), tally(r, contract.Skip), verdict)
	return err
}

// printCheckJSON prints the report as one JSON object (docs/json.md).
func printCheckJSON(w io.Writer, r contract.Report) error {
	type clause struct {
		Clause   string `json:"clause"`
		Verdict  string `json:"verdict"`
		Evidence string `json:"evidence"`
	}
	out := struct {
		URL              string   `json:"url"`
		RunID            string   `json:"run_id"`
		KeyPrefix        string   `json:"key_prefix"`
		RetentionSeconds *int64   `json:"retention_seconds"`
		OK               bool     `json:"ok"`
		Passed           int      `json:"passed"`
		Failed           int      `json:"failed"`
		Skipped          int      `json:"skipped"`
		Clauses          []clause `json:"clauses"`
	}{URL: r.URL, RunID: r.RunID, KeyPrefix: r.KeyPrefix, OK: r.OK(),
		Passed: tally(r, contract.Pass), Failed: tally(r, contract.Fail), Skipped: tally(r, contract.Skip), Clauses: []clause{}}
	if r.Retention != nil {
		seconds := int64(*r.Retention / time.Second)
		out.RetentionSeconds = &seconds
	}
	for _, res := range r.Results {
		out.Clauses = append(out.Clauses, clause{res.Clause.String(), res.Verdict.String(), res.Evidence})
	}
	return encodeJSON(w, out)
}
