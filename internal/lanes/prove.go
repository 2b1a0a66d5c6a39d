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
	"runtime"
	"strings"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/internal/exhaustive"
	"github.com/outboxlab/handoff/internal/sim"
)

// ProveCommand is the argument a lane of prove --parallel N is started
// with: the hidden command prove-lane of handoff, which expands the
// states prove's process sends it (see ProveLane). It is no command for a
// person, and help does not list it.
const ProveCommand = "prove-lane"

// proveProtocol names the messages below, as laneProtocol does explore's.
const proveProtocol = "handoff prove-lane 1"

// proveStart is the first message a prove lane reads: what it searches.
type proveStart struct {
	Protocol  string
	Design    string
	Alphabet  exhaustive.Alphabet
	Reduction exhaustive.Reduction
	Dir       string // the folder the lane makes its own in
}

// proveRequest asks a prove lane to expand the state the sequence Path
// reaches, whose fingerprint is Want (see exhaustive.Lane).
type proveRequest struct {
	Path []sim.Step
	Want exhaustive.Fingerprint
}

// proveAnswer is a prove lane's answer: the expansion, or the error that
// stopped it (Nondeterministic: exhaustive.ErrNondeterministic).
type proveAnswer struct {
	Expansion        exhaustive.Expansion
	Err              string
	Nondeterministic bool
}

// ProveLanes starts n lanes of an exhaustive search, each a process of
// exe's own running ProveCommand (on a processor of its own where the
// system allows, as explore's lanes), with a folder of its own inside
// cfg.Dir. Closing a lane ends its process.
func ProveLanes(exe string, n int, cfg exhaustive.LaneConfig) ([]exhaustive.Lane, error) {
	start := proveStart{Protocol: proveProtocol, Design: cfg.Design.Name, Alphabet: cfg.Alphabet, Reduction: cfg.Reduction, Dir: cfg.Dir}
	cpus := laneCPUs(n)
	var started []exhaustive.Lane
	for i := 1; i <= n; i++ {
		l, err := startProveLane(exe, i, n, cpuOf(cpus, i), start)
		if err != nil {
			for _, s := range started {
				s.Close()
			}
			return nil, err
		}
		started = append(started, l)
	}
	return started, nil
}

// proveProcess is one prove lane as its parent sees it.
type proveProcess struct {
	n, of  int
	cmd    *exec.Cmd
	in     io.WriteCloser
	enc    *gob.Encoder
	dec    *gob.Decoder
	stderr bytes.Buffer
}

// startProveLane starts lane n of of on processor cpu (-1: any) and sends
// it start.
func startProveLane(exe string, n, of, cpu int, start proveStart) (*proveProcess, error) {
	p := &proveProcess{n: n, of: of}
	cmd, in, out, err := spawn(exe, ProveCommand, n, of, cpu, &p.stderr)
	if err != nil {
		return nil, err
	}
	p.cmd, p.in, p.enc, p.dec = cmd, in, gob.NewEncoder(in), gob.NewDecoder(out)
	if err := p.enc.Encode(start); err != nil {
		return nil, p.ended(err)
	}
	return p, nil
}

// Expand has the lane's process expand the state path reaches (see
// exhaustive.Lane).
func (p *proveProcess) Expand(path []sim.Step, want exhaustive.Fingerprint) (exhaustive.Expansion, error) {
	if err := p.enc.Encode(proveRequest{Path: path, Want: want}); err != nil {
		return exhaustive.Expansion{}, p.ended(err)
	}
	var a proveAnswer
	if err := p.dec.Decode(&a); err != nil {
		return exhaustive.Expansion{}, p.ended(err)
	}
	switch {
	case a.Nondeterministic:
		return a.Expansion, fmt.Errorf("lane %d of %d: %w: %s", p.n, p.of, exhaustive.ErrNondeterministic, a.Err)
	case a.Err != "":
		return a.Expansion, fmt.Errorf("lane %d of %d: %s", p.n, p.of, a.Err)
	}
	return a.Expansion, nil
}

// Close closes the lane's input, which ends its process, and waits for
// it.
func (p *proveProcess) Close() error {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("lane %d of %d: %w: %s", p.n, p.of, err, strings.TrimSpace(p.stderr.String()))
	}
	return nil
}

// ended is the error of a lane whose process could not be written to or
// read from: it ended, and what it said on its standard error says why.
func (p *proveProcess) ended(err error) error {
	p.in.Close()
	werr := p.cmd.Wait()
	return fmt.Errorf("lane %d of %d ended (%w, %v): %s", p.n, p.of, errLane, errors.Join(err, werr), strings.TrimSpace(p.stderr.String()))
}

// ProveLane is the prove-lane command, run in a process ProveLanes
// started: it opens a lane of the search ProveLanes sends it
// (exhaustive.NewLane) and expands the states it is sent, one at a time,
// answering each, until its input closes. An error that is ErrRefused
// says it ran nothing.
func ProveLane(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	f, isFile := stdin.(*os.File)
	if len(args) > 0 || isFile && isTerminal(f) {
		return errNotAProveLane
	}
	in, out := gob.NewDecoder(stdin), gob.NewEncoder(stdout)
	var start proveStart
	if err := in.Decode(&start); err != nil || start.Protocol != proveProtocol {
		return errNotAProveLane
	}
	design, err := designs.Lookup(start.Design)
	if err != nil {
		return refusal{err}
	}
	// One step at a time: a second processor makes a lane no faster.
	runtime.GOMAXPROCS(1)
	lane, err := exhaustive.NewLane(ctx, exhaustive.LaneConfig{Design: design, Alphabet: start.Alphabet, Reduction: start.Reduction, Dir: start.Dir})
	if err != nil {
		return err
	}
	defer lane.Close()
	for {
		var req proveRequest
		if err := in.Decode(&req); err != nil {
			return nil // the search is done with this lane
		}
		e, err := lane.Expand(req.Path, req.Want)
		a := proveAnswer{Expansion: e}
		if err != nil {
			a.Err, a.Nondeterministic = err.Error(), errors.Is(err, exhaustive.ErrNondeterministic)
		}
		if err := out.Encode(a); err != nil {
			return err
		}
	}
}

// errNotAProveLane is ProveLane's error when its process was not started
// by ProveLanes.
var errNotAProveLane = refusal{errors.New(ProveCommand + " runs one lane of handoff prove --parallel N, which starts it and sends it its work; run handoff prove")}
