package running

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sqlwrap"
	"github.com/outboxlab/handoff/system"
)

// ErrCrashed is what a process's connections, dials and requests fail
// with once it crashed: nothing it does after reaches the database or
// the receiver.
var ErrCrashed = errors.New("running: the process crashed")

// errStalled is what a dial, and a read, fail with once the watchdog
// stops the run (see watchdog): a library that connects again to wait
// again would stop virtual time again.
var errStalled = errors.New("running: the run was stopped, virtual time stood still: no new connection")

// errReset is what a connection fails with once the harness cut it.
var errReset = errors.New("running: the connection was reset")

// process is one boot of a running design: every connection it made, so
// that a crash cuts them all at once, and its generation's receiver.
type process struct {
	watch    *watchdog
	gen      int
	replica  int // which of the schedule's processes, from 1
	backend  string
	database string
	receiver *Receiver

	crashed  chan struct{} // closed at the crash
	stopping chan struct{} // closed when the harness stops the process
	stopOnce sync.Once

	// sqlite are the process's connections to SQLite.
	sqlite *sqlwrap.Conns

	mu      sync.Mutex
	dead    bool
	conns   map[*netConn]struct{} // the process's connections to PostgreSQL
	loseOne bool                  // the next commit's reply on PostgreSQL is lost
}

// newProcess is boot gen of the schedule's replica-th process, whose
// requests reach rec.
func newProcess(watch *watchdog, gen, replica int, rec *Receiver) *process {
	return &process{watch: watch, gen: gen, replica: replica, receiver: rec,
		sqlite: &sqlwrap.Conns{Called: watch.moved}, conns: map[*netConn]struct{}{},
		crashed: make(chan struct{}), stopping: make(chan struct{})}
}

var _ designs.Process = (*process)(nil)

func (p *process) Backend() string     { return p.backend }
func (p *process) Replica() int        { return p.replica }
func (p *process) ReceiverURL() string { return ReceiverURL }

// HTTPClient is a client whose requests reach the harness's receiver
// over HTTP, in memory, as the named worker's ("" for none). It follows
// no redirects and has no timeout of its own: the caller's context, or
// a Timeout set on it, bounds a request.
func (p *process) HTTPClient(worker string) *http.Client {
	return &http.Client{
		Transport:     httpReceiver{p: p, worker: worker},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
func (p *process) Database() string { return p.database }

// Receiver is the harness's receiver as this process reaches it: a
// request of a process that crashed never leaves.
func (p *process) Receiver() system.Receiver { return generationReceiver{p: p} }

// ReceiverFor is Receiver for the named worker's requests.
func (p *process) ReceiverFor(worker string) system.Receiver {
	return generationReceiver{p: p, worker: worker}
}

type generationReceiver struct {
	p      *process
	worker string
}

func (g generationReceiver) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return g.p.receiver.create(ctx, g.p, g.worker, key, payload)
}

// stop says the harness is stopping the process: a request it holds
// goes on at once.
func (p *process) stop() { p.stopOnce.Do(func() { close(p.stopping) }) }

// alive reports whether the process has not crashed.
func (p *process) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.dead
}

// track adds c to the process's connections, or refuses it when the
// process crashed.
func (p *process) track(c *netConn) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return ErrCrashed
	}
	p.conns[c] = struct{}{}
	return nil
}

func (p *process) untrack(c *netConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// crash cuts every connection of the process, refuses its new ones, and
// drops its requests from now on. It wakes what waits for the crash (a
// request held by the receiver) only once nothing of the process can
// reach a database any more: a process killed at once writes nothing
// after, and a worker woken first could record the answer of a send
// that the crash cut short.
func (p *process) crash() {
	p.mu.Lock()
	first := !p.dead
	p.dead = true
	conns := p.conns
	p.conns = map[*netConn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.cut(ErrCrashed)
	}
	p.sqlite.Refuse(ErrCrashed)
	if first {
		close(p.crashed)
	}
}

// reset cuts every connection of the process to PostgreSQL, which
// lives on: its next statements need new ones. It returns how many it
// cut. (A SQLite file has no connection to lose but in a crash.)
func (p *process) reset() int {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[*netConn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.cut(errReset)
	}
	return len(conns)
}

// loseCommitReply has the next commit of the process on PostgreSQL
// carried out and its reply lost.
func (p *process) loseCommitReply() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loseOne = true
}

// takeCommit reports whether this commit's reply on PostgreSQL is to be
// lost.
func (p *process) takeCommit() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	lose := p.loseOne
	p.loseOne = false
	return lose
}

// Dial connects to PostgreSQL over TCP, a connection the harness can cut.
func (p *process) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if !p.alive() {
		return nil, ErrCrashed
	}
	if p.watch.refusing.Load() {
		return nil, errStalled
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &netConn{Conn: conn, p: p}
	if err := p.track(c); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// netConn is a connection to PostgreSQL that the harness can cut, and
// whose COMMIT's reply it can lose.
type netConn struct {
	net.Conn
	p       *process
	failed  atomic.Pointer[error]
	reading atomic.Bool // a read waits for the server
}

// cutWaiting closes, from outside the bubble, every connection of the
// process whose read waits for the server.
func (p *process) cutWaiting() {
	p.eachWaiting(func(c *netConn) { c.Conn.Close() })
}

// waiting counts the process's connections that wait for an answer.
func (p *process) waiting() int {
	n := 0
	p.eachWaiting(func(*netConn) { n++ })
	return n
}

// eachWaiting calls f for every connection of the process whose read
// waits for the server.
func (p *process) eachWaiting(f func(*netConn)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if c.reading.Load() {
			f(c)
		}
	}
}

// cut closes the socket: what reads and writes then fail with is what a
// socket closed under them fails with, but after a crash, when they fail
// with ErrCrashed.
func (c *netConn) cut(err error) {
	if err == ErrCrashed {
		c.failed.CompareAndSwap(nil, &err)
	}
	c.Conn.Close()
}

func (c *netConn) fail() error {
	if err := c.failed.Load(); err != nil {
		return *err
	}
	return nil
}

func (c *netConn) Write(b []byte) (int, error) {
	if err := c.fail(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(b)
	c.p.watch.moved()
	if err == nil && faults.IsCommitQuery(b) && c.p.takeCommit() {
		c.p.untrack(c)
		c.cut(nil)
	}
	return n, err
}

func (c *netConn) Read(b []byte) (int, error) {
	if err := c.fail(); err != nil {
		return 0, err
	}
	c.reading.Store(true)
	if c.p.watch.refusing.Load() {
		// The watchdog stopped the run: it cuts the reads it sees
		// waiting, and a read it could not see yet fails here.
		c.reading.Store(false)
		return 0, errStalled
	}
	n, err := c.Conn.Read(b)
	c.reading.Store(false)
	c.p.watch.moved()
	if ferr := c.fail(); ferr != nil {
		return 0, ferr
	}
	return n, err
}

func (c *netConn) Close() error {
	c.p.untrack(c)
	return c.Conn.Close()
}

// WrapSQLite wraps the connector of a database/sql handle on SQLite: its
// connections are the process's, cut at a crash.
func (p *process) WrapSQLite(c driver.Connector) driver.Connector {
	return sqlConnector{Connector: p.sqlite.Wrap(c), p: p}
}

type sqlConnector struct {
	driver.Connector
	p *process
}

// Process names the boot the connections belong to
// (system.ProcessConnector): its handles commit together, never with
// another process's.
func (s sqlConnector) Process() string {
	return fmt.Sprintf("replica %d boot %d", s.p.replica, s.p.gen)
}

var _ system.ProcessConnector = sqlConnector{}
