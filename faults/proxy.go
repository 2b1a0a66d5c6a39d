package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outboxlab/handoff/system"
)

// ErrProxyAction is returned by Proxy.Next for an action it cannot take:
// an unknown verb, a negative delay or byte count, a status outside
// 100–599.
var ErrProxyAction = errors.New("faults: invalid proxy action")

// maxProxyBody is the largest request body the Proxy forwards; a larger
// one is answered 413 and its connection closed.
const maxProxyBody = 1 << 20

// dialTimeout bounds the Proxy's connection to its upstream.
const dialTimeout = 5 * time.Second

// Verb is what a Proxy does with one request.
type Verb int

// The verbs of a Proxy. Every one that forwards reads the upstream's whole
// answer before the client hears anything: by then the receiver has acted,
// so what the client hears never races what the receiver did.
const (
	// Forward sends the request upstream and its answer back.
	Forward Verb = iota
	// Refuse resets the client's connection (TCP RST) without forwarding:
	// the receiver never sees the request, the client sees a connection
	// that failed before any answer, as when the receiver is offline.
	Refuse
	// CutReply forwards the request, reads the whole answer and closes
	// the client's connection without a byte of it: the receiver acted
	// and the reply was lost.
	CutReply
	// Duplicate sends the request upstream twice, the second copy after
	// the first's answer, and answers the client with the first answer:
	// a request delivered twice by a retrying hop.
	Duplicate
	// Delay waits Action.Delay, then forwards. A client that gives up
	// before then has a request the receiver still acts on.
	Delay
	// Truncate forwards, then passes the first Action.Keep bytes of the
	// answer (fewer than all of it) and closes the connection.
	Truncate
	// Respond answers Action.Status itself, with Action.RetryAfter, and
	// forwards nothing: a gateway that throttles or refuses.
	Respond
	// Spoil forwards, then answers the client with the upstream's answer
	// spoiled as Action.Spoil says: the receiver acted, and what the
	// client hears is not what it answered.
	Spoil
)

// A Spoiling is how Spoil spoils an answer.
type Spoiling string

// The spoilings of Spoil.
const (
	// CutBody passes the answer's status line, its headers and half its
	// body, and closes: the body ends before its length says.
	CutBody Spoiling = "cut-body"
	// GatewayError answers 502 Bad Gateway, as a gateway whose upstream
	// failed after it acted.
	GatewayError Spoiling = "gateway-error"
	// NotJSON answers 201 with an HTML body.
	NotJSON Spoiling = "not-json"
	// NoTaskID answers 201 with the task's key and payload but no id.
	NoTaskID Spoiling = "no-task-id"
	// OtherKey answers 201 with a task of another key.
	OtherKey Spoiling = "other-key"
)

// Action is what a Proxy does with the next request: a Verb and what it
// needs. The zero Action forwards.
type Action struct {
	Verb Verb
	// Delay is how long Delay waits before forwarding.
	Delay time.Duration
	// Keep is how many bytes of the answer Truncate passes; at most all
	// but the last.
	Keep int
	// Status is the status Respond answers with, RetryAfter its
	// Retry-After header ("" for none).
	Status     int
	RetryAfter string
	// Spoil is how Spoil spoils the answer.
	Spoil Spoiling
}

// check returns an ErrProxyAction error if a cannot be taken.
func (a Action) check() error {
	switch {
	case a.Verb < Forward || a.Verb > Spoil:
		return fmt.Errorf("%w: unknown verb %d", ErrProxyAction, a.Verb)
	case a.Delay < 0 || a.Keep < 0:
		return fmt.Errorf("%w: delay %v and keep %d must not be negative", ErrProxyAction, a.Delay, a.Keep)
	case a.Verb == Respond && (a.Status < 100 || a.Status > 599):
		return fmt.Errorf("%w: status %d is not an HTTP status", ErrProxyAction, a.Status)
	case a.Verb == Spoil && !slices.Contains([]Spoiling{CutBody, GatewayError, NotJSON, NoTaskID, OtherKey}, a.Spoil):
		return fmt.Errorf("%w: unknown spoiling %q", ErrProxyAction, a.Spoil)
	}
	return nil
}

// Proxy is a TCP proxy on loopback between HTTP/1.1 clients and one
// upstream server, the faulty network of a handoff over HTTP. It reads
// each request whole (net/http's ReadRequest on the client's connection)
// and sends it upstream on a connection of its own, one per client
// connection; both sides keep their connections alive between requests.
//
// What happens to a request is up to the caller, never to chance: Next
// sets the Action the next request the Proxy reads gets; every later one
// is forwarded until Next is called again. The caller sets it when the
// request it means is the only one under way.
type Proxy struct {
	ln       net.Listener
	upstream string
	done     chan struct{}
	wg       sync.WaitGroup

	mu     sync.Mutex
	next   Action
	conns  map[net.Conn]bool
	closed bool
}

// NewProxy listens on a free port of 127.0.0.1 and forwards to the HTTP
// server at upstream (host:port).
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faults: proxy: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	return p, nil
}

// URL is the proxy's base URL: http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Next sets what the next request the Proxy reads gets; Action{} forwards
// it. It refuses an Action it cannot take (ErrProxyAction).
func (p *Proxy) Next(a Action) error {
	if err := a.check(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = a
	return nil
}

// take returns the action of the request just read and forwards the
// ones after it.
func (p *Proxy) take() Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.next
	p.next = Action{}
	return a
}

// Close stops listening, closes every connection and waits until every
// request under way has ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// accept serves every connection until the listener closes.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c, true) {
			c.Close()
			return
		}
		p.wg.Go(func() {
			defer p.track(c, false)
			p.serve(c)
		})
	}
}

// track adds c to the open connections (or removes and closes it); false
// when the Proxy is closed.
func (p *Proxy) track(c net.Conn, open bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !open {
		delete(p.conns, c)
		c.Close()
		return true
	}
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

// serve takes the requests of one client connection in turn until it
// closes or an action ends it.
func (p *Proxy) serve(client net.Conn) {
	up := &upstreamConn{p: p}
	defer up.close()
	br := bufio.NewReader(client)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return // the client closed, or sent something that is not HTTP
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxProxyBody+1))
		if err != nil {
			return
		}
		if len(body) > maxProxyBody {
			writeAnswer(client, req, http.StatusRequestEntityTooLarge, "", true)
			return
		}
		if !p.handle(client, req, body, up) {
			return
		}
	}
}

// handle does the next action with one request; false when the client's
// connection must close.
func (p *Proxy) handle(client net.Conn, req *http.Request, body []byte, up *upstreamConn) bool {
	a := p.take()
	switch a.Verb {
	case Refuse:
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close sends RST: best effort, a FIN fails the request too
		}
		return false
	case Respond:
		return writeAnswer(client, req, a.Status, a.RetryAfter, req.Close)
	case Delay:
		select {
		case <-time.After(a.Delay):
		case <-p.done:
			return false
		}
	}
	answer, keepAlive, err := up.roundTrip(req, body)
	if err != nil {
		writeAnswer(client, req, http.StatusBadGateway, "", true)
		return false
	}
	switch a.Verb {
	case CutReply:
		return false
	case Duplicate:
		if _, keepAlive, err = up.roundTrip(req, body); err != nil { // the copy's answer goes nowhere
			keepAlive = false
		}
	case Truncate:
		_, _ = client.Write(answer[:min(a.Keep, len(answer)-1)])
		return false
	case Spoil:
		spoil(client, req, body, answer, a.Spoil)
		return false
	}
	if _, err := client.Write(answer); err != nil {
		return false
	}
	return keepAlive && !req.Close
}

// spoil answers the client with answer, the upstream's answer to req
// (whose body was body), spoiled as s says, and closes the exchange.
func spoil(client net.Conn, req *http.Request, body, answer []byte, s Spoiling) {
	key := strings.Trim(req.Header.Get("Idempotency-Key"), ` "`)
	var status int
	var contentType string
	var spoiled []byte
	switch s {
	case CutBody:
		head, rest, _ := bytes.Cut(answer, []byte("\r\n\r\n"))
		_, _ = client.Write(append(append(head, "\r\n\r\n"...), rest[:len(rest)/2]...))
		return
	case GatewayError:
		writeAnswer(client, req, http.StatusBadGateway, "", true)
		return
	case NotJSON:
		status, contentType, spoiled = http.StatusCreated, "text/html", []byte("<html><body>Created</body></html>")
	case NoTaskID:
		status, contentType = http.StatusCreated, "application/json"
		spoiled, _ = json.Marshal(map[string]any{"key": key, "payload": json.RawMessage(body)})
	case OtherKey:
		status, contentType = http.StatusCreated, "application/json"
		spoiled, _ = json.Marshal(map[string]any{"id": 1, "key": key + ":other", "payload": json.RawMessage(body)})
	}
	resp := &http.Response{StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req, Close: true,
		Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(bytes.NewReader(spoiled)), ContentLength: int64(len(spoiled))}
	var b bytes.Buffer
	_ = resp.Write(&b) // into a buffer: no error
	_, _ = client.Write(b.Bytes())
}

// writeAnswer answers req with status and a problem+json body of the
// proxy's own, closing the exchange if last; false when the connection
// must close.
func writeAnswer(client net.Conn, req *http.Request, status int, retryAfter string, last bool) bool {
	body, _ := json.Marshal(map[string]any{ // a map of strings and an int always marshals
		"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": "answered by the fault proxy",
	})
	resp := &http.Response{
		StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req, Close: last,
		Header:        http.Header{"Content-Type": {"application/problem+json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
	if retryAfter != "" {
		resp.Header.Set("Retry-After", retryAfter)
	}
	var b bytes.Buffer
	_ = resp.Write(&b) // into a buffer: no error
	_, err := client.Write(b.Bytes())
	return err == nil && !last
}

// upstreamConn is a client connection's connection to the upstream,
// dialled at its first request and again after the upstream closed it.
// The Proxy tracks it with its clients' connections, so that Close ends a
// request waiting on the upstream.
type upstreamConn struct {
	p    *Proxy
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
}

// roundTrip sends req with body upstream (again, for a duplicate) and
// reads the whole answer. It returns the answer as the client is to get
// it and whether the upstream keeps the connection open.
func (u *upstreamConn) roundTrip(req *http.Request, body []byte) ([]byte, bool, error) {
	if u.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
		defer cancel()
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.p.upstream)
		if err != nil {
			return nil, false, err
		}
		if !u.p.track(conn, true) {
			conn.Close()
			return nil, false, net.ErrClosed
		}
		u.conn, u.br, u.bw = conn, bufio.NewReader(conn), bufio.NewWriter(conn)
	}
	req.Body, req.ContentLength, req.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	err := req.Write(u.bw)
	if err == nil {
		err = u.bw.Flush()
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(u.br, req)
	}
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
	}
	if err != nil {
		u.close()
		return nil, false, err
	}
	resp.Body, resp.ContentLength, resp.TransferEncoding = io.NopCloser(bytes.NewReader(answer)), int64(len(answer)), nil
	var b bytes.Buffer
	_ = resp.Write(&b) // into a buffer: no error
	if resp.Close {
		u.close()
	}
	return b.Bytes(), !resp.Close, nil
}

// close closes the connection, if one is open.
func (u *upstreamConn) close() {
	if u.conn != nil {
		u.p.track(u.conn, false)
		u.conn, u.br, u.bw = nil, nil, nil
	}
}

// Through returns a Receiver that has the Proxy do a with the next
// request and sends it: with keepAlive, a receiver whose HTTP client
// reuses its connections to the Proxy, when a forwards, and with fresh,
// one whose client never reuses a connection, for any other action.
//
// Go's http.Transport sends a request that carries an Idempotency-Key
// again, once, by itself, when a connection it reused closes before any
// answer: a Refuse or CutReply on a reused connection would reach the
// client as the answer to that second copy, which the Proxy forwards, and
// the fault would vanish. Closing the idle connections first is not
// enough: the transport puts a connection back in its pool only after the
// caller has read the last answer, so the next request can still find
// it. A request on a connection that was never used is never sent again,
// so what the client hears is a function of a alone.
func (p *Proxy) Through(a Action, keepAlive, fresh system.Receiver) system.Receiver {
	if a.Verb == Forward {
		return through{p, a, keepAlive}
	}
	return through{p, a, fresh}
}

type through struct {
	p    *Proxy
	a    Action
	next system.Receiver
}

func (t through) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	if err := t.p.Next(t.a); err != nil {
		return 0, err
	}
	defer t.p.Next(Action{}) // a request that never reached the Proxy leaves no action behind
	return t.next.CreateTask(ctx, key, payload)
}
