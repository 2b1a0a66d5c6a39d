package lanes

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/exhaustive"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/notrun"
	"github.com/outboxlab/handoff/internal/sim"
)

// TestMain makes the test binary a lane when it is started with Command,
// as Run starts its executable: the tests explore with os.Args[0].
func TestMain(m *testing.M) {
	for command, lane := range map[string]func(context.Context, []string, io.Reader, io.Writer) error{Command: Lane, ProveCommand: ProveLane} {
		if len(os.Args) > 1 && os.Args[1] == command {
			if err := lane(context.Background(), os.Args[2:], os.Stdin, os.Stdout); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", command, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// TestProveLaneSaysNondeterministic: a prove lane in a process of its
// own that restores a state to another fingerprint than the search
// expects says so with exhaustive.ErrNondeterministic, as a lane in the
// search's process does.
func TestProveLaneSaysNondeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a lane in a process of its own; run without -short")
	}
	ls, err := ProveLanes(os.Args[0], 1, exhaustive.LaneConfig{Design: designs.Handoff, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ls[0].Close()
	root, err := ls[0].Expand(nil, exhaustive.Fingerprint{})
	if err != nil || len(root.Children) == 0 {
		t.Fatalf("the root: %d children, %v", len(root.Children), err)
	}
	i := slices.IndexFunc(root.Children, func(c exhaustive.Child) bool { return c.Key != root.Key })
	if i < 0 {
		t.Fatal("no step from the root changed it")
	}
	if _, err := ls[0].Expand(nil, root.Children[i].Key); !errors.Is(err, exhaustive.ErrNondeterministic) {
		t.Errorf("the root restored where a child was expected: %v, want %v", err, exhaustive.ErrNondeterministic)
	}
}

// config is a run of the real design in two lanes, in a folder of the
// test's own.
func config(t *testing.T, checks, parallel int) explore.Config {
	return explore.Config{Design: designs.Handoff, Checks: checks, Steps: 5, Seed: 1, Shard: 1, Shards: 1, Parallel: parallel,
		Transport: sim.InProcess, Backend: backend.SQLite, Dir: t.TempDir()}
}

// TestLanesThatCannotRun runs a lane's share of explore with executables
// that are not lanes, and checks the error: one that does not exist, and
// one that says something on stderr and exits.
func TestLanesThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "not-a-lane")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'panic: no lanes here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		exe   string
		want  string
		isErr error
	}{
		{filepath.Join(dir, "missing"), "starting lane 1 of 2", os.ErrNotExist},
		{script, "a lane ended without its report: exit status 3; it said:\npanic: no lanes here", errLane},
	} {
		cfg := config(t, 4, 2)
		_, err := Run(t.Context(), tt.exe, cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.isErr) {
			t.Errorf("lanes of %s: got %v, want %q (%v)", tt.exe, err, tt.want, tt.isErr)
		}
		if entries, err := os.ReadDir(cfg.Dir); err != nil || len(entries) > 0 {
			t.Errorf("lanes of %s left %v (%v)", tt.exe, entries, err)
		}
	}
}

// TestExploreInLanes runs a small run in two lanes of the test binary:
// every sequence asked runs, and the lanes' folder is gone at the end.
func TestExploreInLanes(t *testing.T) {
	cfg := config(t, 6, 2)
	r, err := Run(t.Context(), os.Args[0], cfg)
	if err != nil || r.Stats.Sequences.Load() != 6 || r.Stats.Steps.Load() == 0 || r.Interrupted || r.Failure != nil || r.Problem != "" {
		t.Fatalf("two lanes: %v, %d sequences, %d steps, interrupted %v, failure %v, problem %q",
			err, r.Stats.Sequences.Load(), r.Stats.Steps.Load(), r.Interrupted, r.Failure, r.Problem)
	}
	if entries, err := os.ReadDir(cfg.Dir); err != nil || len(entries) > 0 {
		t.Errorf("the lanes left %v (%v)", entries, err)
	}
}

// TestLaneRefused: a lane started with arguments, with nothing or text
// on its input, with a run of another protocol or of a design it does not
// know runs nothing, and says so with an error that is ErrRefused.
func TestLaneRefused(t *testing.T) {
	run := func(s laneStart) io.Reader {
		var b bytes.Buffer
		if err := gob.NewEncoder(&b).Encode(s); err != nil {
			t.Fatal(err)
		}
		return &b
	}
	for _, tt := range []struct {
		name  string
		args  []string
		stdin io.Reader
		want  string
	}{
		{"arguments", []string{"--checks", "3"}, strings.NewReader(""), "explore-lane runs one lane of handoff-sim explore --parallel N"},
		{"no run on its input", nil, strings.NewReader(""), "explore-lane runs one lane of handoff-sim explore --parallel N"},
		{"text on its input", nil, strings.NewReader("explore please\n"), "explore-lane runs one lane of handoff-sim explore --parallel N"},
		{"another protocol", nil, run(laneStart{Protocol: "handoff explore-lane 0", Design: "handoff", Checks: 1, Steps: 1, Seed: 1}),
			"explore-lane runs one lane of handoff-sim explore --parallel N"},
		{"an unknown design", nil, run(laneStart{Protocol: laneProtocol, Design: "no-such-design", Checks: 1, Steps: 1, Seed: 1}),
			`designs: unknown design "no-such-design"`},
	} {
		var stdout bytes.Buffer
		err := Lane(t.Context(), tt.args, tt.stdin, &stdout)
		if !errors.Is(err, ErrRefused) || err.Error() == ErrRefused.Error() || !strings.Contains(err.Error(), tt.want) || stdout.Len() > 0 {
			t.Errorf("%s: got %v, stdout %q; want ErrRefused saying %q, and nothing sent", tt.name, err, stdout.String(), tt.want)
		}
	}
}

// children returns the processes whose parent is pid, read from /proc.
func children(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		notrun.Skip(t, fmt.Sprintf("a lanes test did not run: no /proc to find the lanes' processes in (%v)", err))
	}
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/proc/"), "/stat"))
			kids = append(kids, kid)
		}
	}
	return kids
}
