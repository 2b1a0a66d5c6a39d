// Package sessions keeps the harness's PostgreSQL sessions alive across
// the client connections its faults end.
//
// A commit-lost or commit-reply-lost fault ends the connection of the
// Outbox whose COMMIT it strikes, and an Outbox that reconnects costs the
// server a new session: a process to start, which on a small machine
// costs it more than hundreds of statements do. A Keeper is the dialer
// of the harness's connections (system.Options.Dial). Each connection it
// gives is a session of the server that outlives it:
// when the connection is closed, its session finishes what the client
// sent, rolls back the transaction the client left open, is reset with
// DISCARD ALL, and serves the next connection with the same startup
// parameters (the same worker's, on the same schema). What the client
// sees is what it would see of a new session; what the server sees of a
// lost connection is its transaction rolled back, before Close returns.
//
// The Keeper answers a client's startup itself, without asking for a
// password (it serves only its own process), and drops cancel requests:
// a statement a client gave up on runs to its end, bounded by the
// session's lock_timeout, before its session is reused.
package sessions

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxlab/handoff/system"
)

// drainWait bounds how long a session whose client left may take to
// finish the statements the client sent, and then to be reset; a session
// that takes longer is closed, not reused.
const drainWait = 10 * time.Second

// maxIdle is how many idle sessions a Keeper keeps for one set of
// startup parameters; more are closed.
const maxIdle = 2

// terminate is the Terminate message, which a client sends alone as it
// leaves.
var terminate = mustEncode(&pgproto3.Terminate{})

// The type bytes of the messages a scanner watches for, as pgproto3
// encodes them: the client's Query and Sync, each answered by one
// ReadyForQuery, and its Terminate.
var (
	queryType         = mustEncode(&pgproto3.Query{})[0]
	syncType          = mustEncode(&pgproto3.Sync{})[0]
	terminateType     = terminate[0]
	readyForQueryType = mustEncode(&pgproto3.ReadyForQuery{})[0]
)

// idle is the transaction status a ReadyForQuery gives of a session
// outside a transaction block.
const idle = 'I'

// declineEncryption is what a server answers an SSLRequest or a
// GSSENCRequest it declines: one byte, not a message, which pgproto3 has
// no type for.
const declineEncryption = 'N'

// Keeper keeps the sessions of one PostgreSQL server (see the package
// comment). Its zero value is not usable: see New.
type Keeper struct {
	server *pgconn.Config

	mu     sync.Mutex
	idle   map[string][]*session // by startup parameters
	bound  map[*conn]bool
	made   int
	reused int
	nextID uint32
	closed bool
}

// session is one server session, idle or serving a client.
type session struct {
	conn   net.Conn
	params map[string]string // what the server reported (ParameterStatus)
}

// New returns a Keeper of the server that serverURL names (a PostgreSQL
// URL; its schema parameter, if any, is ignored). It connects to nothing
// until a client does.
func New(serverURL string) (*Keeper, error) {
	server, err := system.WithSchema(serverURL, "")
	if err != nil {
		return nil, err
	}
	cfg, err := pgconn.ParseConfig(server)
	if err != nil {
		return nil, fmt.Errorf("sessions: %s is not a PostgreSQL URL: %w", system.Redact(serverURL), err)
	}
	return &Keeper{server: cfg, idle: map[string][]*session{}, bound: map[*conn]bool{}}, nil
}

// Dial is a connection to the Keeper's server, for system.Options.Dial
// (network and addr are not used): it makes no connection until the
// client sends its startup, and then one within ctx.
func (k *Keeper) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, net.ErrClosed
	}
	k.nextID++
	c := &conn{keeper: k, id: k.nextID, ctx: ctx}
	c.spoken = sync.NewCond(&c.smu)
	return c, nil
}

// Sessions reports how many server sessions the Keeper made, and how
// many times a connection got one that another had left.
func (k *Keeper) Sessions() (made, reused int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.made, k.reused
}

// Close ends every session the Keeper holds, idle or not: the
// connections it gave must be closed first.
func (k *Keeper) Close() error {
	k.mu.Lock()
	k.closed = true
	bound := slices.Collect(maps.Keys(k.bound))
	k.mu.Unlock()
	for _, c := range bound {
		c.Close()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, list := range k.idle {
		for _, s := range list {
			s.end()
		}
		delete(k.idle, key)
	}
	return nil
}

// take returns an idle session for the startup parameters of a client,
// or makes one.
func (k *Keeper) take(ctx context.Context, params map[string]string) (*session, string, error) {
	key := startupKey(params)
	k.mu.Lock()
	if list := k.idle[key]; len(list) > 0 {
		s := list[len(list)-1]
		k.idle[key] = list[:len(list)-1]
		k.reused++
		k.mu.Unlock()
		return s, key, s.conn.SetDeadline(time.Time{})
	}
	k.mu.Unlock()
	s, err := k.dial(ctx, params)
	if err == nil {
		k.mu.Lock()
		k.made++
		k.mu.Unlock()
	}
	return s, key, err
}

// give takes back a session its client left: idle for the next client
// with the same parameters when it was reset (and the Keeper keeps fewer
// than maxIdle of them), ended otherwise.
func (k *Keeper) give(c *conn, key string, s *session, reusable bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.bound, c)
	if reusable && !k.closed && len(k.idle[key]) < maxIdle {
		k.idle[key] = append(k.idle[key], s)
		return
	}
	s.end()
}

// planMode is the plan_cache_mode of a session the Keeper makes, unless
// its client asks for another: a prepared statement is planned once, at
// its first run, not at each of its first five. The harness's tables hold
// a few rows, and its connections live a few dozen statements: planning
// the claim's query took the server longer than running it.
const planMode = "force_generic_plan"

// dial makes a server session with a client's startup parameters.
func (k *Keeper) dial(ctx context.Context, params map[string]string) (*session, error) {
	cfg := k.server.Copy()
	cfg.RuntimeParams = map[string]string{"plan_cache_mode": planMode}
	for name, v := range params {
		if name != "user" && name != "database" {
			cfg.RuntimeParams[name] = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pc.SyncConn(ctx); err != nil {
		pc.Close(ctx)
		return nil, err
	}
	h, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, err
	}
	return &session{conn: h.Conn, params: h.ParameterStatuses}, nil
}

// end ends the session: Terminate, and its connection closed.
func (s *session) end() {
	s.conn.SetDeadline(time.Now().Add(time.Second))
	s.conn.Write(terminate)
	s.conn.Close()
}

// exec runs sql on the idle session and reads its answer up to
// ReadyForQuery, which must say idle.
func (s *session) exec(sql string) error {
	// Read by the message, with nothing read ahead: what follows the
	// answer is the next client's.
	server := pgproto3.NewFrontend(byteByByte{s.conn}, s.conn)
	server.Send(&pgproto3.Query{String: sql})
	if err := server.Flush(); err != nil {
		return err
	}
	var failed error
	for {
		msg, err := server.Receive()
		if err != nil {
			return err
		}
		switch msg := msg.(type) {
		case *pgproto3.ErrorResponse:
			failed = fmt.Errorf("sessions: %s failed: %s", sql, msg.Message)
		case *pgproto3.ParameterStatus:
			s.params[msg.Name] = msg.Value
		case *pgproto3.ReadyForQuery:
			if failed == nil && msg.TxStatus != idle {
				failed = fmt.Errorf("sessions: after %s the session is not idle", sql)
			}
			return failed
		}
	}
}

// byteByByte gives one byte a Read. A pgproto3 Frontend or Backend reads
// as much as one Read of its reader gives, into a buffer of its own; from
// a byteByByte it reads no more than the message it decodes.
type byteByByte struct{ r io.Reader }

func (b byteByByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return b.r.Read(p[:1])
}

// conn is a client's connection: before its startup, what the Keeper
// answers; after, a session's connection, whose messages it counts so
// that Close knows when the session has answered everything.
type conn struct {
	keeper *Keeper
	id     uint32

	ctx context.Context // the dial's, which the startup's connection to the server keeps to

	// smu guards the startup and what it makes; the session does not
	// change after it.
	smu      sync.Mutex
	spoken   *sync.Cond // on smu: the greeting grew, or the startup ended
	started  bool
	failed   error    // why the startup failed
	greeting []byte   // what the client reads before the session
	s        *session // nil until the startup, and for a cancel request
	key      string

	wmu  sync.Mutex // one write at a time
	sent scanner    // what the client sent

	rmu      sync.Mutex
	received scanner // what the server answered

	mu       sync.Mutex
	pending  int  // Sync and Query messages sent whose ReadyForQuery has not come
	tx       byte // the transaction status of the last ReadyForQuery
	unusable bool // the server's stream is not whole: a Terminate amid other messages, or a write that failed
	left     bool // the client sent Terminate
	closed   bool
	once     sync.Once
}

// Write takes the client's startup (see startup), then passes what the
// client sends to its session, counting its Sync and Query messages. A
// Terminate is not passed on: the client is leaving, and Close gives its
// session back.
func (c *conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.isClosed() {
		return 0, net.ErrClosed
	}
	c.smu.Lock()
	if !c.started {
		err := c.startup(b)
		if err != nil {
			c.started, c.failed = true, err
		}
		c.spoken.Broadcast()
		c.smu.Unlock()
		if err != nil {
			return 0, err
		}
		return len(b), nil
	}
	s := c.s
	c.smu.Unlock()
	if s == nil {
		return len(b), nil // a cancel request's connection
	}
	if bytes.Equal(b, terminate) && c.sent.atBoundary() {
		c.mu.Lock()
		c.left = true
		if c.pending <= 0 {
			s.conn.SetReadDeadline(time.Now()) // a read that waits ends: nothing is due
		}
		c.mu.Unlock()
		return len(b), nil
	}
	syncs := 0
	c.sent.feed(b, func(typ, _ byte) {
		switch typ {
		case queryType, syncType:
			syncs++
		case terminateType:
			c.mu.Lock()
			c.unusable = true
			c.mu.Unlock()
		}
	})
	c.mu.Lock()
	c.pending += syncs
	c.mu.Unlock()
	n, err := s.conn.Write(b)
	if err != nil {
		c.mu.Lock()
		c.unusable = true // the server got part of what was counted
		c.mu.Unlock()
	}
	return n, err
}

// startup reads the client's first message. An SSLRequest or a
// GSSENCRequest is declined; a cancel request is dropped; a
// StartupMessage takes a session for its parameters and has the client
// read a greeting as a server that trusts it would send: authenticated,
// the session's parameters, a key and ReadyForQuery. A session the
// server refused has the client read the server's error.
func (c *conn) startup(b []byte) error {
	r := bytes.NewReader(b)
	msg, err := pgproto3.NewBackend(byteByByte{r}, nil).ReceiveStartupMessage()
	if err == nil && r.Len() > 0 {
		err = fmt.Errorf("%d bytes follow it", r.Len())
	}
	if err != nil {
		return fmt.Errorf("sessions: a startup message in one write was expected, not %d bytes: %w", len(b), err)
	}
	var startup *pgproto3.StartupMessage
	switch msg := msg.(type) {
	case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
		c.greeting = append(c.greeting, declineEncryption)
		return nil
	case *pgproto3.CancelRequest:
		c.started = true
		return nil
	case *pgproto3.StartupMessage:
		startup = msg
	default:
		return fmt.Errorf("sessions: a startup message was expected, not %T", msg)
	}
	if v := startup.ProtocolVersion; v != pgproto3.ProtocolVersion30 {
		return fmt.Errorf("sessions: protocol version %d.%d is not 3.0", v>>16, v&0xffff)
	}
	c.started = true
	params := startup.Parameters
	if err := c.keeper.check(params); err != nil {
		c.greeting, err = fatal("28000", err.Error())
		return err
	}
	s, key, err := c.keeper.take(c.ctx, params)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		c.greeting, err = fatal(pe.Code, pe.Message)
		return err
	case err != nil:
		return err
	}
	c.keeper.mu.Lock()
	c.keeper.bound[c] = true
	c.keeper.mu.Unlock()
	c.s, c.key, c.tx = s, key, idle
	greeting := []pgproto3.Message{&pgproto3.AuthenticationOk{}}
	for _, name := range slices.Sorted(maps.Keys(s.params)) {
		greeting = append(greeting, &pgproto3.ParameterStatus{Name: name, Value: s.params[name]})
	}
	greeting = append(greeting,
		&pgproto3.BackendKeyData{ProcessID: c.id, SecretKey: binary.BigEndian.AppendUint32(nil, c.id)},
		&pgproto3.ReadyForQuery{TxStatus: idle})
	c.greeting, err = encode(greeting...)
	return err
}

// Read reads the greeting, then what the session answers, counting its
// ReadyForQuery messages. A cancel request's connection reads its end,
// and so does a client that sent Terminate once the session has
// answered everything, as the server would end the session.
//
// pgx may read on another goroutine while it writes its startup: such a
// read waits for the Keeper's answer.
func (c *conn) Read(b []byte) (int, error) {
	c.smu.Lock()
	for len(c.greeting) == 0 && !c.started && !c.isClosed() {
		c.spoken.Wait()
	}
	if len(c.greeting) > 0 {
		n := copy(b, c.greeting)
		c.greeting = c.greeting[n:]
		c.smu.Unlock()
		return n, nil
	}
	s, failed := c.s, c.failed
	c.smu.Unlock()
	switch {
	case failed != nil:
		return 0, failed
	case s == nil && c.isClosed():
		return 0, net.ErrClosed
	case s == nil:
		return 0, io.EOF
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.mu.Lock()
	closed, ended := c.closed, c.left && c.pending <= 0 && c.received.atBoundary()
	c.mu.Unlock()
	switch {
	case closed:
		return 0, net.ErrClosed
	case ended:
		return 0, io.EOF
	}
	n, err := s.conn.Read(b)
	c.count(b[:n])
	return n, err
}

// count counts the ReadyForQuery messages in what the session answered.
func (c *conn) count(b []byte) {
	c.received.feed(b, func(typ, first byte) {
		if typ == readyForQueryType {
			c.mu.Lock()
			c.pending--
			c.tx = first
			c.mu.Unlock()
		}
	})
}

// Close gives the session back: once the session has answered
// everything the client sent, it is rolled back if the client left a
// transaction open and reset, and waits idle for the next client; a
// session that cannot be made so is ended.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		pending := c.pending
		c.mu.Unlock()
		c.smu.Lock()
		s := c.s
		c.spoken.Broadcast() // a read that waits for the startup ends
		c.smu.Unlock()
		if s == nil {
			return
		}
		// A read that waits for the session stops: at once when nothing
		// is due, or once what is due is late.
		wait := time.Now()
		if pending > 0 {
			wait = wait.Add(drainWait)
		}
		s.conn.SetReadDeadline(wait)
		c.rmu.Lock()
		defer c.rmu.Unlock()
		c.keeper.give(c, c.key, s, c.drain() == nil && c.reset() == nil)
	})
	return nil
}

// drain reads and counts what the session still owes the client.
func (c *conn) drain() error {
	s := c.s
	s.conn.SetReadDeadline(time.Now().Add(drainWait))
	defer s.conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 4096)
	for {
		c.mu.Lock()
		done, unusable := c.pending <= 0, c.unusable
		c.mu.Unlock()
		switch {
		case unusable:
			return errors.New("sessions: the session's stream is not whole (a Terminate amid other messages, or a write that failed)")
		case done && c.received.atBoundary():
			return nil
		}
		n, err := s.conn.Read(buf)
		c.count(buf[:n])
		if err != nil {
			return err
		}
	}
}

// reset readies the session for the next client: the transaction the
// client left open rolled back, and DISCARD ALL (prepared statements,
// temporary tables, advisory locks, SET values).
func (c *conn) reset() error {
	s := c.s
	s.conn.SetDeadline(time.Now().Add(drainWait))
	defer s.conn.SetDeadline(time.Time{})
	c.mu.Lock()
	tx := c.tx
	c.mu.Unlock()
	if tx != idle {
		if err := s.exec("ROLLBACK"); err != nil {
			return err
		}
	}
	return s.exec("DISCARD ALL")
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// The addresses of a conn are loopback ones, and its deadlines its
// session's.
func (c *conn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(c.id)} }
func (c *conn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (c *conn) SetDeadline(t time.Time) error {
	return c.onSession(func(s *session) error { return s.conn.SetDeadline(t) })
}

func (c *conn) SetReadDeadline(t time.Time) error {
	return c.onSession(func(s *session) error { return s.conn.SetReadDeadline(t) })
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	return c.onSession(func(s *session) error { return s.conn.SetWriteDeadline(t) })
}

// onSession calls set on the conn's session, unless it has none or was
// closed: a closed conn's session may serve another client already.
func (c *conn) onSession(set func(*session) error) error {
	c.smu.Lock()
	s := c.s
	c.smu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil || c.closed {
		return nil
	}
	return set(s)
}

// check refuses a client that asks for another user or database than
// the Keeper's server URL names.
func (k *Keeper) check(params map[string]string) error {
	if u := params["user"]; u != k.server.User {
		return fmt.Errorf("this keeper connects as %q, not %q", k.server.User, u)
	}
	if d := params["database"]; d != "" && d != k.server.Database {
		return fmt.Errorf("this keeper connects to database %q, not %q", k.server.Database, d)
	}
	return nil
}

// scanner follows a stream of the protocol's regular messages, in pieces
// of any size, as they pass through: it reads each message's header (its
// type and length) and the first byte of its body, and decodes nothing.
// pgproto3 reads whole messages from a reader, and the Keeper passes on
// each piece as it comes, messages of megabytes among them.
type scanner struct {
	head  [5]byte
	n     int // bytes of head read
	left  int // bytes of the body still to come
	first byte
	begun bool // the body's first byte was read
}

// feed reads p, calling done with the type and the first body byte (0
// when none) of each message that p completes.
func (s *scanner) feed(p []byte, done func(typ, first byte)) {
	for len(p) > 0 {
		if s.n < len(s.head) {
			m := copy(s.head[s.n:], p)
			s.n += m
			p = p[m:]
			if s.n == len(s.head) {
				s.left = int(binary.BigEndian.Uint32(s.head[1:])) - 4
				s.first, s.begun = 0, false
				if s.left <= 0 {
					done(s.head[0], 0)
					s.n = 0
				}
			}
			continue
		}
		if !s.begun {
			s.first, s.begun = p[0], true
		}
		m := min(len(p), s.left)
		s.left -= m
		p = p[m:]
		if s.left == 0 {
			done(s.head[0], s.first)
			s.n = 0
		}
	}
}

// atBoundary reports whether the stream ended with a whole message.
func (s *scanner) atBoundary() bool { return s.n == 0 }

// startupKey is the startup parameters, in one string: the sessions of
// clients with the same key are alike.
func startupKey(params map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(params)) {
		b.WriteString(name + "\x00" + params[name] + "\x00")
	}
	return b.String()
}

// encode is msgs as the protocol sends them, one after another.
func encode(msgs ...pgproto3.Message) ([]byte, error) {
	var b []byte
	for _, msg := range msgs {
		var err error
		if b, err = msg.Encode(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// mustEncode is msg as the protocol sends it, for a message whose
// encoding cannot fail: pgproto3 fails only on a message too long for
// its length field.
func mustEncode(msg pgproto3.Message) []byte {
	b, err := msg.Encode(nil)
	if err != nil {
		panic(err)
	}
	return b
}

// fatal is a FATAL ErrorResponse of SQLSTATE code.
func fatal(code, text string) ([]byte, error) {
	return encode(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: text})
}
