// Package lanes runs an exploration's lanes in processes of their own:
// explore --parallel N, for N above 1, starts its own executable N times
// with the one argument Command, and each process runs one lane (Lane)
// while explore's process hands out the run's sequences and sums what
// the lanes count (Run). Lanes in one process share its runtime, its
// scheduler and the C library's allocator of the SQLite driver; lanes in
// processes of their own share only the machine (see README.md,
// Performance).
//
// A lane reads its run on its standard input and writes what it does to
// its standard output, both as gob streams of the messages in
// protocol.go.
package lanes

import "errors"

// Command is the argument a lane's process is started with: the hidden
// command explore-lane of handoff. It is no command for a person, and
// help does not list it.
const Command = "explore-lane"

// ErrRefused marks the errors of Lane that run nothing: its process was
// not started by Run (it has arguments, its input is a terminal, or
// what it reads is not a run of this protocol), or the run names a design
// it does not know. The lane command exits 2 for them, as for a usage
// error.
var ErrRefused = errors.New("lanes: a lane refused its run")

// refusal is an error of Lane that is ErrRefused, and says what err says.
type refusal struct{ err error }

func (e refusal) Error() string        { return e.err.Error() }
func (e refusal) Unwrap() error        { return e.err }
func (e refusal) Is(target error) bool { return target == ErrRefused }

// errNotALane is Lane's error when its process was not started by Run.
var errNotALane = refusal{errors.New(Command + " runs one lane of handoff-sim explore --parallel N, which starts it and sends it its work; run handoff-sim explore")}

// errLane says that a lane's process did not end with its report.
var errLane = errors.New("a lane ended without its report")
