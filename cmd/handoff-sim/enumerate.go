package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
)

// enumerate crashes every scenario of the real design at every fault point
// it passes, restarts, converges, and checks every invariant, on SQLite.
// It skips scenarios of fragile designs (they are meant to break an
// invariant) and those of PostgreSQL only, saying so on stderr for each
// file named; when every scenario is skipped
// there is nothing to enumerate, and it fails (exit status 1, as for any
// other file it cannot use).
func enumerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("enumerate", flag.ContinueOnError)
	if err := cli.Parse(fs, args, stderr, true); err != nil {
		return err
	}
	scenarios, err := readScenarios(fs.Args())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "handoff-enumerate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tried, passed, files, skipped, skippedBackend := 0, 0, 0, 0, 0
	for _, sc := range scenarios {
		if d := sc.Design(); d != designs.Handoff.Name {
			skipped++
			if fs.NArg() > 0 {
				fmt.Fprintf(stderr, "skipped %s: a scenario of the fragile design %s, which breaks an invariant on purpose; enumerate crashes scenarios of the real design only\n", sc.Name, d)
			}
			continue
		}
		points, err := sim.Enumerate(ctx, sc, sim.EnumerateConfig{Design: designs.Handoff, Dir: dir})
		if errors.Is(err, sim.ErrOtherBackend) {
			skippedBackend++
			if fs.NArg() > 0 {
				fmt.Fprintf(stderr, "skipped %v; enumerate runs on sqlite\n", err)
			}
			continue
		}
		if err != nil {
			return err
		}
		files++
		ok := 0
		for _, p := range points {
			if p.Violation == nil {
				ok++
				continue
			}
			fmt.Fprintf(stderr, "%s:%d: %s: crash at pass %d (%s), restart, converge:\n%s\n",
				sc.Name, p.Case.Line, p.Case.Text, p.Pass, p.Point, p.Output)
		}
		fmt.Fprintf(stdout, "%s: %s, %d kept every invariant\n", sc.Name, words.HowMany(len(points), "crash point"), ok)
		tried, passed = tried+len(points), passed+ok
	}
	if files == 0 {
		if n := skipped + skippedBackend; n != 1 {
			return fmt.Errorf("nothing to enumerate: all %d scenarios are of fragile designs or of PostgreSQL only", n)
		}
		return errors.New("nothing to enumerate: the one scenario is of a fragile design or of PostgreSQL only")
	}
	fmt.Fprintf(stdout, "enumerated %s in %s: %d passed, %d failed", words.HowMany(tried, "crash point"), words.HowMany(files, "scenario"), passed, tried-passed)
	if skipped > 0 {
		fmt.Fprintf(stdout, "; skipped %s of fragile designs", words.HowMany(skipped, "scenario"))
	}
	if skippedBackend > 0 {
		fmt.Fprintf(stdout, "; skipped %s of PostgreSQL only", words.HowMany(skippedBackend, "scenario"))
	}
	fmt.Fprintln(stdout)
	if passed < tried {
		return fmt.Errorf("%s broke an invariant", words.HowMany(tried-passed, "crash point"))
	}
	return nil
}
