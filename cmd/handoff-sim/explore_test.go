package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/cli"
	"github.com/outboxlab/handoff/internal/notrun"
	"github.com/outboxlab/handoff/internal/pgtest"
	"github.com/outboxlab/handoff/internal/textdiff"
)

// explore from the command line: its summary, JSON and reproduce line,
// and its lanes, each a process of its own with --parallel N.

func TestExploreJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "explore", "--checks", "20", "--seed", "42", "--json", "--dir", t.TempDir())
	var s map[string]any
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --json: exit %d, %v, stderr %s", code, err, stderr)
	}
	for _, k := range []string{"checks", "steps", "failures", "steps_per_second", "faults", "transitions", "seed"} {
		if _, ok := s[k]; !ok {
			t.Errorf("explore --json: no %q in %v", k, s)
		}
	}
	if s["checks"] != 20.0 || s["failures"] != 0.0 || s["seed"] != 42.0 {
		t.Errorf("explore --json: got %v", s)
	}
}

func TestExploreFragileDesign(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "explore", "--design", "drop-on-error", "--seed", "1", "--dir", t.TempDir())
	var lines []string // with runs of spaces folded, so that column widths do not matter
	for _, l := range strings.Split(stdout, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	folded := strings.Join(lines, "\n")
	for _, want := range []string{
		"caught: the minimal counterexample of drop-on-error, 2 steps",
		"# step result outbox attempts tasks for key\n1 approve case=case-1 title=\"Call back\" approved pending 0 0\n2 deliver fault=",
		"violation: invariant 2",
		"first disagreed at step 2 (-model +system)",
	} {
		if code != 0 || !strings.Contains(folded, want) {
			t.Fatalf("explore --design drop-on-error: exit %d, no %q in:\n%s%s", code, want, stdout, stderr)
		}
	}
	code, stdout, _ = runCLI(t, "explore", "--design", "two-writes", "--seed", "1", "--json", "--dir", t.TempDir())
	var s struct {
		Design    string `json:"design"`
		Scenario  string `json:"scenario"`
		Violation struct {
			Invariant int `json:"invariant"`
			Steps     int `json:"steps"`
		} `json:"violation"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
		t.Fatalf("explore --design --json: exit %d, %v", code, err)
	}
	if s.Design != "two-writes" || s.Violation.Invariant != 2 || s.Violation.Steps != 1 || !strings.Contains(s.Scenario, "design name=two-writes") {
		t.Errorf("explore --design two-writes --json: got %+v", s)
	}
}

// TestExploreReproduceLineOfAnInstalledBinary runs explore as a binary
// started by its name, as from the PATH: the lines that say how to run it
// again name it so, not go run, which works only in the module's folder.
func TestExploreReproduceLineOfAnInstalledBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "handoff-sim")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{"handoff-sim", "explore", "--checks", "2", "--seed", "3", "--parallel", "1", "--dir", dir},
		Env: append(os.Environ(), "HANDOFF_RUN_MAIN=1")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("handoff-sim explore: %v:\n%s", err, out)
	}
	if want := "; to run it again: handoff-sim explore --design handoff --steps 50 --seed 3 --checks 2\n"; !strings.Contains(string(out), want) {
		t.Errorf("handoff-sim explore: no %q in:\n%s", want, out)
	}
}

// exploreJSON is what the lane tests read of explore --json.
type exploreJSON struct {
	Parallel    int     `json:"parallel"`
	Sequences   int64   `json:"sequences"`
	Steps       int64   `json:"steps"`
	Transport   string  `json:"transport"`
	Scenario    *string `json:"scenario"`
	FailureSeed *uint64 `json:"failure_seed"`
	Reproduce   *string `json:"reproduce"`
	Violation   *struct {
		Invariant int    `json:"invariant"`
		Detail    string `json:"detail"`
	} `json:"violation"`
}

// TestExploreLanesFindTheSameFailure explores fragile designs with one
// lane and with two processes of lanes, and checks that both print and
// save the same failure: the same seed, violation and minimal scenario.
func TestExploreLanesFindTheSameFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: lanes in processes of their own; run without -short")
	}
	t.Parallel()
	for _, tt := range []struct {
		design, seed string
	}{
		{"count-after-send", "2"},      // fails first at sequence 5
		{"fresh-key-per-attempt", "1"}, // fails at every sequence: both lanes fail at once
	} {
		if testing.Short() && tt.design != "count-after-send" {
			continue // -short: the case where lanes race for the lowest index is enough
		}
		var got [2]exploreJSON
		var saved [2]map[string]string
		for i, parallel := range []string{"1", "2"} {
			save := t.TempDir()
			code, stdout, stderr := runCLI(t, "explore", "--design", tt.design, "--seed", tt.seed, "--parallel", parallel, "--json", "--save", save, "--dir", t.TempDir())
			if err := json.Unmarshal([]byte(stdout), &got[i]); code != 0 || err != nil || got[i].FailureSeed == nil || got[i].Parallel != i+1 {
				t.Fatalf("explore --design %s --parallel %s: exit %d, %v, %s%s", tt.design, parallel, code, err, stdout, stderr)
			}
			saved[i] = folder(t, save)
			// The report beside the saved scenario holds the run's
			// coverage, which the number of lanes changes: it is
			// checked to be there, and left out of the comparison.
			for name, text := range saved[i] {
				if html, ok := strings.CutSuffix(name, ".html"); ok {
					if _, ok := saved[i][html+".txt"]; !ok || !strings.Contains(text, "<svg") {
						t.Errorf("explore --design %s --parallel %s: a report %s without its scenario, or without a picture", tt.design, parallel, name)
					}
					delete(saved[i], name)
				}
			}
			if !strings.Contains(stderr, "wrote the report: "+save) {
				t.Errorf("explore --save does not say where it wrote the report:\n%s", stderr)
			}
		}
		one, two := got[0], got[1]
		if *one.FailureSeed != *two.FailureSeed || *one.Scenario != *two.Scenario || *one.Reproduce != *two.Reproduce || *one.Violation != *two.Violation {
			t.Errorf("%s, seed %s: one lane found seed %d, %+v:\n%s\ntwo found seed %d, %+v:\n%s", tt.design, tt.seed,
				*one.FailureSeed, *one.Violation, *one.Scenario, *two.FailureSeed, *two.Violation, *two.Scenario)
		}
		if len(saved[0]) != 1 || !maps.Equal(saved[0], saved[1]) {
			t.Errorf("%s, seed %s: one lane saved %v, two saved %v; want the same file", tt.design, tt.seed, saved[0], saved[1])
		}
	}
}

// TestExploreLanesEverywhere runs explore in two processes of lanes over
// HTTP and with the app database in PostgreSQL (each lane a schema of its
// own): every sequence asked runs.
func TestExploreLanesEverywhere(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		flags     func(t *testing.T) []string
		transport string
	}{
		{"http", func(*testing.T) []string { return []string{"--transport", "http"} }, "http"},
		{"postgres", func(t *testing.T) []string {
			return []string{"--backend", "postgres", "--postgres-url", pgtest.Server(t)}
		}, "in-process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"explore", "--checks", "4", "--seed", "5", "--parallel", "2", "--json", "--dir", t.TempDir()}, tt.flags(t)...)
			code, stdout, stderr := runCLI(t, args...)
			var s exploreJSON
			if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil || s.Sequences != 4 || s.Parallel != 2 || s.Steps == 0 || s.Transport != tt.transport {
				t.Errorf("%v: exit %d, %v, %+v, stderr %s", args, code, err, s, stderr)
			}
		})
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

// TestExploreStopped starts a long exploration in a process of its own,
// stops it once its lanes run (an interrupt of the command, or a lane's
// process killed), and checks that it fails with the message or summary
// each case calls for, that no lane's process outlives it, and that it
// leaves no folder behind.
func TestExploreStopped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		parallel string
		lanes    int
		stop     func(explore int, lanes []int) error
		stdout   string // what the command prints, on stdout
		stderr   string // and on stderr
	}{
		{"interrupt, one lane", "1", 0, func(explore int, _ []int) error { return syscall.Kill(explore, syscall.SIGINT) },
			"(interrupted)", "interrupted after"},
		{"interrupt, two lanes", "2", 2, func(explore int, _ []int) error { return syscall.Kill(explore, syscall.SIGINT) },
			"(interrupted)", "interrupted after"},
		{"terminate, two lanes", "2", 2, func(explore int, _ []int) error { return syscall.Kill(explore, syscall.SIGTERM) },
			"(interrupted)", "interrupted after"},
		{"interrupt from a terminal, two lanes", "2", 2, func(explore int, _ []int) error { return syscall.Kill(-explore, syscall.SIGINT) },
			"(interrupted)", "interrupted after"},
		{"a lane killed", "2", 2, func(_ int, lanes []int) error { return syscall.Kill(lanes[1], syscall.SIGKILL) },
			"", "a lane ended without its report: signal: killed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "explore", "--checks", "100000", "--seed", "9", "--parallel", tt.parallel, "--dir", dir)
			cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a process group, as a terminal's job has
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stderrPipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stderr := bufio.NewReader(stderrPipe)
			first, err := stderr.ReadString('\n')
			if err != nil || !strings.Contains(first, "seed 9; to run it again: "+cli.InvokedAs(os.Args[0])+" explore") {
				cmd.Process.Kill()
				t.Fatalf("first line on stderr: %q, %v; want the seed and the command", first, err)
			}
			var lanes []int
			for start := time.Now(); len(lanes) < tt.lanes; lanes = children(t, cmd.Process.Pid) {
				if time.Since(start) > time.Minute {
					cmd.Process.Kill()
					t.Fatalf("explore --parallel %s started %v in a minute", tt.parallel, lanes)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := tt.stop(cmd.Process.Pid, lanes); err != nil {
				t.Fatal(err)
			}
			// An explore that does not stop fails the test, instead of
			// hanging it.
			stuck := time.AfterFunc(2*time.Minute, func() {
				for _, pid := range append(lanes, cmd.Process.Pid) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			defer stuck.Stop()
			rest, _ := io.ReadAll(stderr)
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(string(rest), tt.stderr) {
				t.Errorf("got %v, stdout %q, stderr %q; want exit status 1, %q and %q", err, stdout.String(), rest, tt.stdout, tt.stderr)
			}
			for _, lane := range lanes {
				if err := syscall.Kill(lane, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("lane process %d outlived explore: signalling it gave %v", lane, err)
				}
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
				t.Errorf("%s holds %v (%v), want it empty", dir, entries, err)
			}
		})
	}
}

// BenchmarkExploreLanes runs explore's default run of the real design
// (2000 sequences, seed 1) with one lane and with one lane per processor
// (each a process of its own), in turn, the first of a round run first in
// the next, and reports the medians of their steps per second and of the
// ratio of each round's two: a machine shared with other work slows both
// runs of a round alike. The steps per second are explore's own (--json),
// from before its lanes start to after they end; -v shows every round's.
func BenchmarkExploreLanes(b *testing.B) {
	lanes := runtime.NumCPU()
	var one, many, ratios []float64
	for round := 0; b.Loop(); round++ {
		rates := map[int]float64{}
		for i := range 2 {
			parallel := []int{1, lanes}[(round+i)%2]
			code, stdout, stderr := runCLI(b, "explore", "--seed", "1", "--parallel", strconv.Itoa(parallel), "--json", "--dir", b.TempDir())
			var s struct {
				StepsPerSecond float64 `json:"steps_per_second"`
			}
			if err := json.Unmarshal([]byte(stdout), &s); code != 0 || err != nil {
				b.Fatalf("explore --parallel %d: exit %d, %v, %s", parallel, code, err, stderr)
			}
			rates[parallel] = s.StepsPerSecond
		}
		one, many, ratios = append(one, rates[1]), append(many, rates[lanes]), append(ratios, rates[lanes]/rates[1])
		b.Logf("round %d: %.0f steps/s in one lane, %.0f in %d: %.3f times", round+1, rates[1], rates[lanes], lanes, rates[lanes]/rates[1])
	}
	b.ReportMetric(median(one), "steps/s-1-lane")
	b.ReportMetric(median(many), fmt.Sprintf("steps/s-%d-lanes", lanes))
	b.ReportMetric(median(ratios), "ratio")
}

// TestExploreOutputIsTheSameTwice: two explorations of the same seed, in
// two processes, print the same bytes, the diff of the model's and the
// system's observations included; only the time taken and the rate
// differ.
func TestExploreOutputIsTheSameTwice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: two explore processes; run without -short to compare their bytes")
	}
	dir := t.TempDir()
	timing := regexp.MustCompile(` in [0-9.]+[µnm]?s = [0-9]+ steps/s`)
	var outputs [2]string
	for i := range outputs {
		cmd := exec.Command(os.Args[0], "explore", "--design", "drop-on-error", "--seed", "1", "--parallel", "1", "--dir", dir)
		cmd.Env = append(os.Environ(), "HANDOFF_RUN_MAIN=1")
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), "first disagreed at step 2 (-model +system)") {
			t.Fatalf("explore --design drop-on-error: %v, no disagreement shown:\n%s", err, out)
		}
		outputs[i] = timing.ReplaceAllString(string(out), " in T = R steps/s")
	}
	if outputs[0] != outputs[1] {
		t.Errorf("two explorations of seed 1 printed different bytes:\n%s", textdiff.Lines(outputs[0], outputs[1]))
	}
}
