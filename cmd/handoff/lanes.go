package main

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/explore"
	"github.com/outboxlab/handoff/internal/sim"
)

// laneCommand is what explore --parallel N, for N above 1, runs each of
// its lanes with: its own executable with this one argument, in a process
// of its own. Lanes in one process share its runtime, its scheduler and
// the C library's allocator of the SQLite driver, and two of them on two
// processors ran about 1.4 times as many steps per second as one; lanes
// in processes of their own share only the machine (see README.md,
// Performance). The lane reads its run from explore on its standard
// input and writes what it does to its standard output, both as gob
// streams; it is no command for a person, and help does not list it.
const laneCommand = "explore-lane"

// laneProtocol names the messages below: a lane refuses a run that does
// not start with it (a person at the keyboard, or an executable replaced
// under a running explore).
const laneProtocol = "handoff explore-lane 1"

// errNotALane is returned by the lane command when it was not started by
// explore: a usage error.
var errNotALane = fmt.Errorf("%w: %s runs one lane of handoff explore --parallel N, which starts it and sends it its work; run handoff explore", errUsage, laneCommand)

// laneStart is the first message a lane reads: the run it is a lane of.
type laneStart struct {
	Protocol    string
	Design      string
	Checks      int
	Steps       int
	Seed        uint64
	Shard       int
	Shards      int
	NoSwarm     bool
	Transport   sim.Transport
	Backend     backend.Backend
	PostgresURL string
	Dir         string // the folder the lane makes its own in
}

// laneGrant answers a lane's request for its next sequences: their
// indexes, laneChunk at most, in increasing order; none when the lane
// must stop.
type laneGrant struct {
	Indexes []int64
}

// laneChunk is how many sequences a lane is granted at a time: a request
// costs explore's process a wake-up (a tenth of a millisecond of a
// processor the lanes could use), a sequence a few milliseconds. At the
// end of a run, a lane may still hold that many when the others are done.
const laneChunk = 4

// laneMessage is one message of a lane to explore: its counts (about once
// a second), a request for its next sequence, the index of a sequence
// that failed (before it is shrunk), or its report, the last message.
// (Gob sends no zero value, not even through a pointer: index 0 needs
// Failed beside it.)
type laneMessage struct {
	Counts *laneCounts
	Next   bool
	Failed bool
	Index  int64
	Report *laneReport
}

// laneCounts are the counters of a lane's Stats.
type laneCounts struct {
	Sequences, ShrinkRuns, Steps int64
}

// laneReport is how a lane ended: what it counted and its failure, or the
// error that stopped it.
type laneReport struct {
	Stats       *sim.Stats
	Interrupted bool
	Failure     *sim.Failure
	FirstAt     time.Time
	FailureSeed uint64
	Problem     string
	Err         string
}

// exploreLane is the lane command: it runs the lanes' share of the run
// explore sends it, taking each sequence's index from explore (so that
// the lanes together run the run's sequences, whatever their number),
// until explore has none left for it, or closes its standard input (an
// interrupt, or a lane that failed), or ctx is done. It sends its counts
// as it runs, and its report at the end.
func exploreLane(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	f, isFile := stdin.(*os.File)
	if len(args) > 0 || isFile && isTerminal(f) {
		return errNotALane
	}
	if isFile {
		stdin = pollable(f)
	}
	in := gob.NewDecoder(stdin)
	var start laneStart
	if err := in.Decode(&start); err != nil || start.Protocol != laneProtocol {
		return errNotALane
	}
	design, err := lookupDesign(start.Design)
	if err != nil {
		return err
	}
	// One lane is one goroutine at a time (see the comment in explore);
	// two lanes whose processes had two processors each ran at 3,600 to
	// 3,850 steps/s together, against 5,000 to 5,850 with one.
	runtime.GOMAXPROCS(1)
	out := &laneWriter{enc: gob.NewEncoder(stdout)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A lane has one request on its way at most: with room for its grant,
	// the reader is always back at its input, and hears explore close it
	// even while the lane shrinks a failure and asks for nothing.
	grants := make(chan laneGrant, 1)
	go func() {
		defer close(grants)
		defer cancel()
		for {
			var g laneGrant
			if in.Decode(&g) != nil {
				return
			}
			grants <- g
		}
	}()
	seqs := &remoteSequencer{out: out, grants: grants}
	cfg := explore.ExploreConfig{Design: design, Checks: start.Checks, Steps: start.Steps, Seed: start.Seed, Shard: start.Shard, Shards: start.Shards,
		NoSwarm: start.NoSwarm, Transport: start.Transport, Backend: start.Backend, PostgresURL: start.PostgresURL, Dir: start.Dir,
		Sequencer: seqs, Progress: func(st *sim.Stats, _ time.Duration) { out.send(laneMessage{Counts: countsOf(st)}) }}
	r, err := explore.Explore(ctx, cfg)
	report := &laneReport{Stats: r.Stats, Interrupted: r.Interrupted, Failure: r.Failure, FirstAt: r.FirstAt, FailureSeed: r.FailureSeed, Problem: r.Problem}
	if err != nil {
		report = &laneReport{Err: err.Error()}
	}
	return out.send(laneMessage{Report: report})
}

// laneExit prints err, if any, and returns the lane command's exit
// status: 0, 2 for a usage error, 1 for any other.
func laneExit(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "handoff %s: %s\n", laneCommand, message(err))
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// pollable returns f, a pipe, read through the runtime's poller, as
// exec leaves a pipe to the process it starts in blocking mode. A read
// in blocking mode keeps its processor in the system call: the lane's
// goroutine, made ready by the grant the read before delivered, would
// wait for the runtime to take the processor back (up to 10 ms), at every
// sequence. f itself if it cannot be made so.
func pollable(f *os.File) *os.File {
	if err := syscall.SetNonblock(int(f.Fd()), true); err != nil {
		return f
	}
	return os.NewFile(f.Fd(), f.Name())
}

// countsOf returns the counters of st.
func countsOf(st *sim.Stats) *laneCounts {
	return &laneCounts{st.Sequences.Load(), st.ShrinkRuns.Load(), st.Steps.Load()}
}

// laneWriter sends a lane's messages, one at a time: the lane's goroutine
// and its progress calls share it.
type laneWriter struct {
	mu  sync.Mutex
	enc *gob.Encoder
}

func (w *laneWriter) send(m laneMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(m)
}

// remoteSequencer is a lane's explore.Sequencer: explore's, over the
// lane's standard input and output, a grant of indexes at a time. It
// asks for the next grant as it returns the last index it holds, so that
// the answer comes while the lane runs that sequence: on a busy machine,
// explore's process may wait milliseconds for a processor to answer on.
// The indexes a lane holds but does not run (it failed, or it was
// stopped) are above every index it ran: every index below a failing one
// is still run.
type remoteSequencer struct {
	out    *laneWriter
	grants <-chan laneGrant // closed when explore closes the lane's input
	held   []int64          // granted, not yet returned
	asked  bool             // a request is on its way
}

func (s *remoteSequencer) Next() (int64, bool) {
	if len(s.held) == 0 {
		if !s.asked && s.out.send(laneMessage{Next: true}) != nil {
			return 0, false
		}
		g, ok := <-s.grants
		if s.held, s.asked = g.Indexes, false; !ok || len(s.held) == 0 {
			return 0, false
		}
	}
	m := s.held[0]
	if s.held = s.held[1:]; len(s.held) == 0 {
		s.asked = s.out.send(laneMessage{Next: true}) == nil
	}
	return m, true
}

// Fail tells explore; if it cannot be told, the lane's input is closed
// too, and Next stops the lane.
func (s *remoteSequencer) Fail(m int64) { _ = s.out.send(laneMessage{Failed: true, Index: m}) }

// errLane says that a lane's process did not end with its report.
var errLane = errors.New("a lane ended without its report")

// laneProcess is one lane of exploreInProcesses as its parent sees it.
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

// laneRun is a run of exploreInProcesses: its lanes, the Sequencer they
// take their sequences from, and the failures they found.
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

// exploreInProcesses runs the exploration cfg describes as explore.Explore
// does, each of its cfg.Parallel lanes a process of exe's own running
// laneCommand: the lanes take the run's sequences from one Sequencer, in
// this process, and send their counts (summed here for cfg.Progress) and
// their reports, which make the run's Report. A lane whose process cannot
// start or ends without its report stops the run with an error; an
// interrupt (ctx done, or a lane interrupted by a signal of its own)
// stops every lane after the sequence it runs, and the report says so.
// The lanes' folders are made in one of the run's, removed at the end
// even if a lane could not remove its own.
func exploreInProcesses(ctx context.Context, exe string, cfg explore.ExploreConfig) (explore.Report, error) {
	dir, err := os.MkdirTemp(cfg.Dir, "handoff-explore-")
	if err != nil {
		return explore.Report{}, err
	}
	defer os.RemoveAll(dir)
	report := explore.Report{Config: cfg, Stats: sim.NewStats(), Start: time.Now()}
	start := laneStart{Protocol: laneProtocol, Design: cfg.Design.Name, Checks: cfg.Checks, Steps: cfg.Steps, Seed: cfg.Seed, Shard: cfg.Shard, Shards: cfg.Shards,
		NoSwarm: cfg.NoSwarm, Transport: cfg.Transport, Backend: cfg.Backend, PostgresURL: cfg.PostgresURL, Dir: dir}
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
		cpu := -1
		if cpus != nil {
			cpu = cpus[n-1]
		}
		l, err := startLane(exe, n, cfg.Parallel, cpu, start)
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

// startLane starts lane n of the run start describes, on processor cpu
// alone if it is not negative (see laneCPUs).
func startLane(exe string, n, of, cpu int, start laneStart) (*laneProcess, error) {
	cmd := exec.Command(exe, laneCommand)
	// In a process group of its own, a lane hears no interrupt from the
	// terminal: explore alone does, and stops its lanes. A lane that heard
	// one a moment after it started, before it could catch it, would end
	// without its report.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := &laneProcess{n: n, of: of, cmd: cmd}
	cmd.Stderr = &l.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startOn(cmd, cpu); err != nil {
		return nil, fmt.Errorf("starting lane %d of %d: %w", n, of, err)
	}
	l.out, l.in, l.enc = out, in, gob.NewEncoder(in)
	if err := l.send(start); err != nil {
		l.stop()
		return nil, l.ended(cmd.Wait(), err)
	}
	return l, nil
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
