package lanes

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/sim"
)

// Run runs the exploration cfg describes as explore.Run does, split
// across lane processes: each of its cfg.Parallel lanes is a process of
// exe's own running Command (see Lane). The lanes take the run's
// sequences from one Sequencer, in this process, and send their counts
// (summed here for cfg.Progress) and their reports, which make the run's
// Report. A lane whose process cannot
// start or ends without its report stops the run with an error; an
// interrupt (ctx done, or a lane interrupted by a signal of its own)
// stops every lane after the sequence it runs, and the report says so.
// The lanes' folders are made in one of the run's, removed at the end
// even if a lane could not remove its own.
func Run(ctx context.Context, exe string, cfg explore.Config) (explore.Report, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "handoff-explore-")
	if err != nil {
		return explore.Report{}, err
	}
	defer os.RemoveAll(dir)
	report := explore.Report{Config: cfg, Stats: sim.NewStats(), Start: time.Now()}
	start := laneStart{Protocol: laneProtocol, Design: cfg.Design.Name, Checks: cfg.Checks, Steps: cfg.Steps, Seed: cfg.Seed, Shard: cfg.Shard, Shards: cfg.Shards,
		NoSwarm: cfg.NoSwarm, Transport: cfg.Transport, Backend: cfg.Backend, PostgresURL: cfg.PostgresURL, ConnectWait: cfg.ConnectWait, Dir: dir}
	r := &laneRun{seqs: explore.NewSequencer(cfg.Checks), live: sim.NewStats(), superseded: map[*laneProcess]bool{}}
	served := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			r.stopAll()
		case <-served:
		}
	}()
	stopProgress := explore.ProgressEverySecond(cfg.Progress, r.live)
	var (
		wg       sync.WaitGroup
		startErr error
		cpus     = laneCPUs(cfg.Parallel)
	)
	for n := 1; n <= cfg.Parallel && ctx.Err() == nil; n++ {
		l, err := startLane(exe, n, cfg.Parallel, cpuOf(cpus, n), start)
		if err != nil {
			startErr = err
			break
		}
		r.mu.Lock()
		r.lanes = append(r.lanes, l)
		r.mu.Unlock()
		wg.Go(func() {
			r.serve(l)
			r.mu.Lock()
			interrupted := l.err == nil && l.report.Interrupted && !r.superseded[l]
			r.mu.Unlock()
			if l.err != nil || interrupted {
				r.stopAll()
			}
		})
	}
	if startErr != nil || ctx.Err() != nil {
		r.stopAll()
	}
	wg.Wait()
	close(served)
	report.Elapsed = time.Since(report.Start)
	stopProgress()
	if startErr != nil {
		return explore.Report{}, startErr
	}
	report.Interrupted = ctx.Err() != nil
	for _, l := range r.lanes {
		if l.err != nil {
			return explore.Report{}, l.err
		}
		report.Stats.Add(l.report.Stats)
		report.Interrupted = report.Interrupted || l.report.Interrupted && !r.superseded[l]
	}
	if l := r.failed; l != nil && (l.report.Failure != nil || l.report.Problem != "") {
		report.Recorder = explore.Recorder{Failure: l.report.Failure, FirstSequences: r.firstSequences, FirstAt: l.report.FirstAt}
		report.FailureSeed, report.Problem = l.report.FailureSeed, l.report.Problem
	}
	return report, nil
}

// laneProcess is one lane of Run as its parent sees it.
type laneProcess struct {
	n, of int
	cmd   *exec.Cmd
	out   io.ReadCloser

	mu     sync.Mutex // guards in, closed and the encoder
	in     io.WriteCloser
	enc    *gob.Encoder
	closed bool

	stderr bytes.Buffer // what the process wrote on its standard error
	counts laneCounts   // the last counts it sent
	report *laneReport
	err    error
}

// send sends v to the lane, unless its input is closed.
func (l *laneProcess) send(v any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	return l.enc.Encode(v)
}

// stop closes the lane's input: it starts no other sequence, abandons
// the shrinking it may be doing, and ends.
func (l *laneProcess) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.in.Close()
	}
}

// name says which lane l is, for an error message.
func (l *laneProcess) name() string {
	return fmt.Sprintf("lane %d of %d (process %d)", l.n, l.of, l.cmd.Process.Pid)
}

// laneRun is one call of Run: its lanes, the Sequencer they take their
// sequences from, and the failures they found.
type laneRun struct {
	seqs    explore.Sequencer
	live    *sim.Stats   // the sums of the lanes' last counts
	granted atomic.Int64 // sequences handed out

	mu    sync.Mutex // guards what follows
	lanes []*laneProcess
	// failed is the lane whose failure has the lowest index, at index,
	// found when the run had handed out firstSequences sequences.
	failed         *laneProcess
	index          int64
	firstSequences int64
	// superseded are the lanes stopped because another failed at a lower
	// index: their reports say they were interrupted, which the run was
	// not.
	superseded map[*laneProcess]bool
}

// stopAll stops every lane.
func (r *laneRun) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lanes {
		l.stop()
	}
}

// fail records that lane l failed at index m. Of two lanes that failed,
// the one of the higher index is stopped: its shrinking would only make
// the run longer, for a failure the run does not report.
func (r *laneRun) fail(l *laneProcess, m int64) {
	r.seqs.Fail(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	loser := l
	if r.failed == nil || m < r.index {
		loser = r.failed
		r.failed, r.index, r.firstSequences = l, m, r.granted.Load()
	}
	if loser != nil && loser != r.failed {
		r.superseded[loser] = true
		loser.stop()
	}
}

// startLane starts lane n of the run start describes, on processor cpu
// alone if it is not negative (see laneCPUs).
func startLane(exe string, n, of, cpu int, start laneStart) (*laneProcess, error) {
	l := &laneProcess{n: n, of: of}
	cmd, in, out, err := spawn(exe, Command, n, of, cpu, &l.stderr)
	if err != nil {
		return nil, err
	}
	l.cmd, l.out, l.in, l.enc = cmd, out, in, gob.NewEncoder(in)
	if err := l.send(start); err != nil {
		l.stop()
		return nil, l.ended(cmd.Wait(), err)
	}
	return l, nil
}

// cpuOf is the processor of lane n among cpus (see laneCPUs), -1 (any)
// when cpus is nil.
func cpuOf(cpus []int, n int) int {
	if cpus == nil {
		return -1
	}
	return cpus[n-1]
}

// spawn starts lane n of of: exe running command, on processor cpu alone
// if it is not negative, its stderr into stderr, and returns its
// process, its stdin and its stdout, which carry the lane's protocol. In
// a process group of its own, a lane hears no interrupt from the
// terminal: its parent alone does, and stops its lanes. A lane that heard
// one a moment after it started, before it could catch it, would end
// without its report.
func spawn(exe, command string, n, of, cpu int, stderr io.Writer) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(exe, command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := startOn(cmd, cpu); err != nil {
		return nil, nil, nil, fmt.Errorf("starting lane %d of %d: %w", n, of, err)
	}
	return cmd, in, out, nil
}

// serve answers l's messages until its report, then waits for its
// process to end; l.err says why it ended without one.
func (r *laneRun) serve(l *laneProcess) {
	dec := gob.NewDecoder(l.out)
	var ioErr error
	for l.report == nil && ioErr == nil {
		var m laneMessage
		if ioErr = dec.Decode(&m); ioErr != nil {
			break
		}
		switch {
		case m.Counts != nil:
			r.live.Sequences.Add(m.Counts.Sequences - l.counts.Sequences)
			r.live.ShrinkRuns.Add(m.Counts.ShrinkRuns - l.counts.ShrinkRuns)
			r.live.Steps.Add(m.Counts.Steps - l.counts.Steps)
			l.counts = *m.Counts
		case m.Next:
			var g laneGrant
			for len(g.Indexes) < laneChunk {
				i, ok := r.seqs.Next()
				if !ok {
					break
				}
				g.Indexes = append(g.Indexes, i)
			}
			r.granted.Add(int64(len(g.Indexes)))
			ioErr = l.send(g)
		case m.Failed:
			r.fail(l, m.Index)
		case m.Report != nil:
			l.report = m.Report
		}
	}
	l.stop()
	io.Copy(io.Discard, l.out)
	waitErr := l.cmd.Wait()
	switch {
	case l.report == nil:
		l.err = l.ended(waitErr, ioErr)
	case l.report.Err != "":
		l.err = errors.New(l.report.Err)
		if l.report.Environment {
			l.err = fmt.Errorf("%w: %s", backend.ErrEnvironment, strings.TrimPrefix(l.report.Err, backend.ErrEnvironment.Error()+": "))
		}
	}
}

// ended is the error of a lane whose process ended without its report:
// how it ended (waitErr, the error of cmd.Wait), what reading it or
// writing to it failed with, and the first lines it wrote on its
// standard error.
func (l *laneProcess) ended(waitErr, ioErr error) error {
	how := "it exited"
	if waitErr != nil {
		how = waitErr.Error()
	} else if ioErr != nil && !errors.Is(ioErr, io.EOF) {
		how = ioErr.Error()
	}
	err := fmt.Errorf("%s: %w: %s", l.name(), errLane, how)
	if said := strings.TrimSpace(l.stderr.String()); said != "" {
		lines := strings.SplitN(said, "\n", laneStderrLines+1)
		err = fmt.Errorf("%w; it said:\n%s", err, strings.Join(lines[:min(len(lines), laneStderrLines)], "\n"))
	}
	return err
}

// laneStderrLines is how many lines of a failed lane's standard error its
// error shows: a panic's message and the top of its stack.
const laneStderrLines = 10
