// Package notrun tells whoever ran go test, in one line, that a part of
// the suite did not run in a package and why: the PostgreSQL suite
// without a server, the browser tests without Chromium, either under
// -short. go test shows the output of a package that passed only with
// -v, so a skip would otherwise go unseen; the line goes to the go
// command's own standard error when that is a terminal or a pipe (found
// through Linux's /proc, and never a file, which another writer's offset
// would overwrite), and to the test's own otherwise, where -v or a
// failure shows it. With HANDOFF_EVERY_PART=1 (CI sets it), a part that
// would not run fails its test instead (see Skip).
package notrun

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// Required names the variable that, set to 1, makes every part of the
// suite required: where a part would not run, Skip fails the test. Under
// -short, which leaves the browser tests out (and the PostgreSQL suite
// without a URL), it fails those.
const Required = "HANDOFF_EVERY_PART"

// Skip skips t, saying reason once in one line (see Say); with Required
// set to 1 it fails t instead, so that a run meant to hold every part
// cannot pass without one.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(Required) == "1" {
		t.Fatalf("%s, and %s=1 wants every part of the suite to run", reason, Required)
	}
	Say(reason)
	t.Skip(reason)
}

// said holds the reasons this test binary has given, each said once.
var said sync.Map

// Say writes "handoff: PACKAGE: REASON" once for each reason in this test
// binary, PACKAGE being the package under test.
func Say(reason string) {
	if _, dup := said.LoadOrStore(reason, true); dup {
		return
	}
	line := fmt.Sprintf("handoff: %s: %s\n", testedPackage(), reason)
	if w, ok := goCommandStderr(); ok {
		defer w.Close()
		if _, err := io.WriteString(w, line); err == nil {
			return
		}
	}
	io.WriteString(os.Stderr, line)
}

// testedPackage is the import path of the package this test binary tests.
func testedPackage() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return "this package"
}

// goCommandStderr opens the standard error of the go command that runs
// this test binary, when it is a terminal or a pipe.
func goCommandStderr() (io.WriteCloser, bool) {
	if runtime.GOOS != "linux" {
		return nil, false
	}
	parent := fmt.Sprintf("/proc/%d/", os.Getppid())
	if comm, err := os.ReadFile(parent + "comm"); err != nil || strings.TrimSpace(string(comm)) != "go" {
		return nil, false
	}
	info, err := os.Stat(parent + "fd/2")
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil, false
	}
	f, err := os.OpenFile(parent+"fd/2", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, false
	}
	return f, true
}
