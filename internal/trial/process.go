package trial

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a handoff process of a trial, started again with the same
// arguments after each kill. Everything it prints goes to NAME.log in the
// trial's folder.
type process struct {
	name string
	exe  string
	args []string
	log  *os.File
	addr string // the address crm serve listens on

	out    *lineTracker
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited and its output is read
	err    error         // cmd's exit, once exited is closed
	killed bool          // the trial killed or stopped it: its exit is expected
	past   int           // delivery log lines of the runs before this one
}

// serverAddress is the address in crm serve's first line.
var serverAddress = regexp.MustCompile(`on http://(\S+) `)

// startProcess starts the handoff with args as a process of the trial
// called name, and adds it to procs, the processes to stop at the end,
// even when it fails to start.
func startProcess(ctx context.Context, cfg config, procs *[]*process, name string, args ...string) (*process, error) {
	log, err := os.Create(filepath.Join(cfg.dir, strings.ReplaceAll(name, " ", "-")+".log"))
	if err != nil {
		return nil, err
	}
	p := &process{name: name, exe: cfg.exe, args: args, log: log}
	*procs = append(*procs, p)
	return p, p.start(ctx)
}

// start starts the process once more, and waits for its first line: crm
// serve listens then, and work has read the receiver's contract and
// started a worker. A kill of the server never finds a worker at its
// start, which would refuse a receiver that does not answer.
func (p *process) start(ctx context.Context) error {
	if p.out != nil {
		p.past += p.out.count()
	}
	fmt.Fprintf(p.log, "=== %s: handoff %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	p.out = newLineTracker(p.log)
	p.cmd = exec.Command(p.exe, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.killed = false
	p.exited = make(chan struct{})
	if err := p.cmd.Start(); err != nil {
		p.err = err
		close(p.exited)
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	cmd, exited := p.cmd, p.exited // a restart replaces both
	go func() {
		p.err = cmd.Wait()
		close(exited)
	}()
	line, err := p.firstLine(ctx)
	if err == nil && p.args[0] == "crm" {
		if m := serverAddress.FindStringSubmatch(line); m != nil {
			p.addr = m[1]
		} else {
			err = fmt.Errorf("%s printed %q, not the address it listens on", p.name, line)
		}
	}
	if err != nil {
		// A process that did not start as it should dies here, so that
		// a restart does not find its port, or its files, still held.
		_ = cmd.Process.Kill()
		<-exited
	}
	return err
}

// firstLine waits, up to StartTimeout, for the first line the process
// prints: crm serve prints it once it listens, work once a worker started
// (and its signal handlers are in place).
func (p *process) firstLine(ctx context.Context) (string, error) {
	t := time.NewTimer(StartTimeout)
	defer t.Stop()
	for {
		first, _, changed := p.out.state()
		if first != "" {
			return first, nil
		}
		select {
		case <-changed:
		case <-p.exited:
			return "", fmt.Errorf("%s exited at its start: %v; its last line: %s", p.name, p.err, p.out.last())
		case <-t.C:
			return "", fmt.Errorf("%s printed nothing within %v", p.name, StartTimeout)
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
}

// waitDeliveries waits until the process has logged n more deliveries,
// for at most d or until it exits, and returns how many it logged.
func (p *process) waitDeliveries(ctx context.Context, n int, d time.Duration) (int, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	_, from, _ := p.out.state()
	for {
		_, now, changed := p.out.state()
		if now-from >= n {
			return now - from, nil
		}
		select {
		case <-changed:
		case <-p.exited:
			return now - from, nil
		case <-t.C:
			return now - from, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
}

// restart starts a killed process again. crm serve may find its port
// still held for a moment; it tries again then.
func (p *process) restart(ctx context.Context) error {
	var err error
	for range 20 {
		if err = p.start(ctx); err == nil || p.args[0] != "crm" || ctx.Err() != nil {
			return err
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return err
}

// kill sends SIGKILL, waits for the process to die, and returns the last
// line it printed.
func (p *process) kill() string {
	p.killed = true
	_ = p.cmd.Process.Kill() // it may have died already: died says so
	<-p.exited
	fmt.Fprintf(p.log, "=== %s: SIGKILL\n", time.Now().UTC().Format(time.RFC3339Nano))
	return p.out.last()
}

// died says how the process ended by itself, or "" while it runs.
func (p *process) died() string {
	select {
	case <-p.exited:
		if p.killed {
			return ""
		}
		p.killed = true // reported once
		return fmt.Sprintf("exited by itself (%v); its last line: %s", p.err, p.out.last())
	default:
		return ""
	}
}

// terminate sends SIGTERM and says what went wrong if the process did
// not exit 0 within stopTimeout.
func (p *process) terminate() string {
	if f := p.died(); f != "" {
		return f
	}
	p.killed = true
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return "SIGTERM: " + err.Error()
	}
	return p.finish(stopTimeout)
}

// finish waits for the process to exit, within d, and says what went
// wrong unless it exited 0.
func (p *process) finish(d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.stop()
		return fmt.Sprintf("still running after %v, killed; its last line: %s", d, p.out.last())
	}
	p.killed = true
	if p.err != nil {
		return fmt.Sprintf("exited with %v; its last line: %s", p.err, p.out.last())
	}
	return ""
}

// stop kills the process if it runs.
func (p *process) stop() {
	select {
	case <-p.exited:
	default:
		p.killed = true
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// deliveries is how many delivery log lines the process printed, in all
// its runs.
func (p *process) deliveries() int {
	return p.past + p.out.count()
}

// lineTracker copies a process's output to w, remembers its first and
// last complete lines, and counts its delivery log lines.
type lineTracker struct {
	w io.Writer

	mu         sync.Mutex
	partial    []byte
	first      string
	lastLine   string
	deliveries int
	// changed is closed, and replaced, at every complete line.
	changed chan struct{}
}

func newLineTracker(w io.Writer) *lineTracker {
	return &lineTracker{w: w, changed: make(chan struct{})}
}

func (t *lineTracker) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.lastLine = string(t.partial[:i])
		t.partial = t.partial[i+1:]
		if t.first == "" {
			t.first = t.lastLine
		}
		if strings.Contains(t.lastLine, " msg=delivery ") {
			t.deliveries++
		}
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return t.w.Write(p)
}

// count is the number of delivery lines.
func (t *lineTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deliveries
}

// state returns the first line, the number of delivery lines, and the
// channel closed at the next line.
func (t *lineTracker) state() (string, int, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first, t.deliveries, t.changed
}

// last is the last complete line written, or "(nothing)".
func (t *lineTracker) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastLine == "" {
		return "(nothing)"
	}
	return t.lastLine
}

// setFlag sets the value that follows flag in args.
func setFlag(args []string, flag, value string) {
	for i := range args[:len(args)-1] {
		if args[i] == flag {
			args[i+1] = value
		}
	}
}
