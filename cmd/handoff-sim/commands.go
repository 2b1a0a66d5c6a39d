package main

import "github.com/outboxlab/handoff/internal/cli"

// commandTable is the harness's command table, in the order help lists
// it. It is registered in init because the help command reads it.
func commandTable() []cli.Command {
	return []cli.Command{
		{
			Name:        "explore",
			Environment: true,
			Args:        "[--checks N] [--steps N] [--seed S] [--design NAME] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] [--parallel N] [--shard I/N] [--swarm=false] [--save DIR] [--report PATH] [--dir DIR] [--json]",
			Summary:     "explore random fault sequences against the real handoff (the main job)",
			Done:        "the real design kept every invariant, or the fragile design given with --design was caught",
			Failed:      "an invariant of the real design broke (the minimal scenario is printed), the fragile design was not caught, the run was interrupted (the partial summary is printed), or the harness failed",
			AtLeastOne:  []string{"checks", "steps", "parallel"},
			Run:         exploreCmd,
		},
		{
			Name:        "designs",
			Environment: true,
			Args:        "[--json] [--measure SEEDS [--seed S] [--backend NAME [--postgres-url URL] [--connect-wait D]]] [NAME...]",
			Summary:     "list the fragile designs the harness must catch; --measure how fast it does, on either backend",
			Done:        "listed, explained or measured",
			Failed:      "an exploration could not run, or --measure found a fragile design " + notAsDocumented + " (found, shrunk to its documented length, and caught by its documented invariant)",
			AtLeastOne:  []string{"measure"},
			Run:         designsCmd,
		},
		{
			Name:       "prove",
			Args:       "[--depth N] [--time D] [--design NAME] [--reduce NAME] [--workers LIST] [--cases N] [--configs=false] [--parallel N] [--save DIR] [--report PATH] [--dir DIR] [--json]",
			Summary:    "run every sequence of steps up to a depth against the real handoff, breadth first: a proof within the bound, or the shortest counterexample",
			Done:       "no sequence up to the depth broke an invariant of the real design, or the fragile design given with --design was caught (by its shortest counterexample)",
			Failed:     "an invariant of the real design broke (the shortest scenario is printed), the fragile design was not caught within the depth, the time limit or an interruption stopped the search (the summary says which depth it completed), or the harness failed",
			AtLeastOne: []string{"depth", "parallel"},
			Positive:   []string{"time"},
			Run:        proveCmd,
		},
		{
			Name:    "enumerate",
			Args:    "[FILE...]",
			Summary: "crash every scenario of the real design at every fault point it passes",
			Done:    "every crash point kept every invariant",
			Failed:  "a crash point broke an invariant, a file could not be read or parsed, or every file given is a fragile design's scenario",
			Run:     enumerate,
		},
		{
			Name:        "replay",
			Environment: true,
			Args:        "[--quiet] [--report PATH] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] [FILE...]",
			Summary:     "replay scenario files (default: the embedded corpus) and compare outputs",
			Done:        "every output matches (a file of the other backend is skipped, with its reason)",
			Failed:      "an output did not match, a file could not be read or parsed, or no file given can run over the transport or on the backend",
			Run:         replay,
		},
		{
			Name:        "report",
			Environment: true,
			Args:        "[--out PATH] [--transport NAME] [--backend NAME [--postgres-url URL] [--connect-wait D]] FILE",
			Summary:     "replay a scenario file and write its report: an HTML page of the run as a sequence diagram, every step's state, and where the model and the system first disagreed",
			Operands:    "FILE is a scenario file (corpus/fragile/no-fencing.txt, say); the report is written beside it, FILE.html for FILE.txt, unless --out names another file.",
			Done:        "the report is written, whatever the scenario did (the report and a line on stdout say whether it broke an invariant)",
			Failed:      "the file could not be read, parsed or run, or the report could not be written",
			Run:         reportCmd,
		},
		{
			Name:    "help",
			Args:    "[COMMAND]",
			Summary: "list the commands, or show one command's flags and exit status",
			Done:    "help shown",
			Run:     cli.Help,
		},
	}
}

func init() {
	cli.Register("handoff-sim", "./cmd/handoff-sim", "approve, deliver, work and the product's other commands are handoff's (go run ./cmd/handoff help)", commandTable())
}
