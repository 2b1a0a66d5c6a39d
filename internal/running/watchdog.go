package running

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStall is how long, in real time, a run may make no progress at
// all before the watchdog says why virtual time stopped.
const DefaultStall = 20 * time.Second

// watchdog watches a run from outside its bubble, in real time. Virtual
// time passes only when every goroutine of the bubble waits on something
// of the bubble; one blocked on a real socket (a LISTEN, a server on a
// real port) stops it for good, and the run would hang. When nothing has
// moved for the stall, the watchdog cuts the database connections that
// are waiting for an answer, refuses every new one (a library that
// connects again to wait again would stop time again), and the run fails
// with what to change; if none is waiting, or the run still has not
// moved a stall after the cut, it panics with the reason and every
// goroutine's stack, rather than let the test hang.
type watchdog struct {
	stall    time.Duration
	progress atomic.Int64
	stuck    atomic.Pointer[string] // why the run was stopped, once it was
	// refusing is set before the watchdog cuts a stalled run's
	// connections: from then on no process gets a new one, so that none
	// connects again, between the cut and the reason, to wait again.
	refusing atomic.Bool

	mu    sync.Mutex
	procs []*process // the running processes
}

// moved records progress: a statement, a request, a step of the harness.
func (w *watchdog) moved() { w.progress.Add(1) }

// watching sets the process whose connections the watchdog cuts.
func (w *watchdog) watching(ps []*process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.procs = ps
}

// reason is why the watchdog stopped the run, "" when it did not.
func (w *watchdog) reason() string {
	if r := w.stuck.Load(); r != nil {
		return *r
	}
	return ""
}

// watch polls until done is closed.
func (w *watchdog) watch(done <-chan struct{}) {
	tick := time.NewTicker(w.stall / 20)
	defer tick.Stop()
	last, since := w.progress.Load(), time.Now()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if now := w.progress.Load(); now != last {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) < w.stall {
			continue
		}
		since = time.Now() // a cut is progress; a second stall is judged anew
		if why := w.reason(); why != "" {
			panic(fmt.Sprintf("running: %s; and the run did not end in %s of real time after its connections were cut. The goroutines:\n%s", why, w.stall, netStacks(stacks())))
		}
		w.refusing.Store(true)
		w.mu.Lock()
		ps := w.procs
		w.mu.Unlock()
		cut := -1
		for _, p := range ps {
			if p.waiting() > 0 {
				cut = p.gen
			}
		}
		if cut >= 0 {
			why := fmt.Sprintf("virtual time stopped: a goroutine of boot %d waited %s of real time on a database connection that had nothing to send it "+
				"(a LISTEN for notifications, a transaction left open, or a row lock that another process holds while it waits on virtual time). "+
				"Inside the bubble time passes only while every goroutine waits on the bubble, never on a real socket: run the library without "+
				"listening (poll-only; River: Config.PollOnly), end every transaction, and let no process wait on another's lock (take rows with "+
				"SKIP LOCKED, or give the sessions a lock_timeout so that the wait fails and the library polls again)",
				cut, w.stall)
			// The reason first: the run moves on at the cut, and what the
			// cut makes fail must not be taken for the reason.
			w.stuck.CompareAndSwap(nil, &why)
			for _, p := range ps {
				p.cutWaiting()
			}
			continue
		}
		all := stacks()
		if waits := mutexWaits(all); len(waits) > 0 {
			panic(fmt.Sprintf("running: virtual time stopped: nothing in the run moved for %s of real time while a goroutine of the bubble waits on a sync.Mutex "+
				"or sync.RWMutex. testing/synctest does not count a wait on a mutex as durable, so virtual time cannot pass while it lasts: if the mutex's "+
				"holder waits on virtual time (a timer, a sleep, a timeout), the run can never move. The design, or the library, holds a lock across such a "+
				"wait while another goroutine wants it (a Stop that closes what is still starting, say). The goroutines that wait on a mutex:\n%s\n\nEvery goroutine:\n%s",
				w.stall, strings.Join(waits, "\n\n"), all))
		}
		panic(fmt.Sprintf("running: virtual time stopped: nothing in the run moved for %s of real time, and no database connection the harness made waits for an answer, "+
			"so a goroutine waits on something outside the bubble: a server on a real port, a real socket, or a database connection the design opened "+
			"without the Process's dialer or connector, which the harness can neither see nor cut. A running design opens every connection through "+
			"its Process, reaches the receiver in memory and starts no server (see docs/verify.md). The goroutines:\n%s", w.stall, netStacks(all)))
	}
}

// stacks is every goroutine's stack.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// mutexWaits are the goroutines of the dump all that wait on a
// sync.Mutex or sync.RWMutex inside a bubble: testing/synctest does not
// count such a wait as durable, so virtual time cannot pass while it
// lasts.
func mutexWaits(all string) []string {
	var waits []string
	for _, g := range strings.Split(all, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "synctest bubble") && (strings.Contains(head, "[sync.Mutex.Lock") || strings.Contains(head, "[sync.RWMutex.")) {
			waits = append(waits, g)
		}
	}
	return waits
}

// netStacks is, of the goroutines' stacks all, those that wait on the
// network, or all when none does.
func netStacks(all string) string {
	var keep []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "internal/poll") || strings.Contains(g, "net.") {
			keep = append(keep, g)
		}
	}
	if len(keep) == 0 {
		return all
	}
	return strings.Join(keep, "\n\n")
}
