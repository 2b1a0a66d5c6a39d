package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/designs"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/model"
	"github.com/outboxlab/handoff/system"
)

// Transport is how the worker's requests reach the receiver. The same
// scenario gives the same output over either: the model does not know
// which one carries the requests. A fault of the receiver's database is
// the exception: the worker hears it as the receiver answers it (see
// faultEffect.overHTTP).
type Transport string

const (
	// InProcess calls the CRM in the harness's own process, through
	// package faults' faulty network.
	InProcess Transport = "in-process"
	// HTTP sends every request as the worker would to a real CRM: with
	// crm.Sender, through a faults.Proxy on loopback, to crm.Server
	// serving the CRM file. The network faults of faultTable are the
	// proxy's actions.
	HTTP Transport = "http"
)

// Transports are the transports, the default first.
var Transports = []Transport{InProcess, HTTP}

// ParseTransport returns the transport called s.
func ParseTransport(s string) (Transport, error) {
	for _, t := range Transports {
		if string(t) == s {
			return t, nil
		}
	}
	names := make([]string, len(Transports))
	for i, t := range Transports {
		names[i] = string(t)
	}
	return "", fmt.Errorf("handoff: unknown transport %q, want %s", s, strings.Join(names, " or "))
}

// CheckTransport returns an error when design d cannot run over t: a
// design whose shortcut is in the receiver runs in process only, since
// over HTTP the receiver is crm.Server in front of system's CRM.
func CheckTransport(d designs.Design, t Transport) error {
	if t == HTTP && d.OwnReceiver {
		return fmt.Errorf("handoff: design %s has a receiver of its own, and over http the receiver is crm.Server in front of the real CRM: it runs in process only", d.Name)
	}
	return nil
}

// readHeaderTimeout bounds how long the HTTP server waits for a
// request's header.
const readHeaderTimeout = 5 * time.Second

// httpCRM is the receiver side of the HTTP transport for one life of the
// CRM's process: crm.Server serving the CRM handle on a loopback
// listener, a faults.Proxy in front of it, and the worker's crm.Senders
// to the proxy. It is the Env's CRM: the harness observes the tasks through
// the handle, and Close shuts the server down before it closes the
// handle, so that a restart restarts the server too.
//
// The worker has two senders: one whose client keeps its connections
// alive, for the requests the proxy forwards, and one whose client never
// reuses a connection, for the faulty ones (see faults.Proxy.Through).
// The workers share them: no request of one depends on another's.
type httpCRM struct {
	designs.CRM
	server  *http.Server
	serving chan error // what Serve returned
	proxy   *faults.Proxy
	clients [2]*http.Client // keep-alive, fresh
	senders [2]*crm.Sender  // through each client
	stopped bool
}

// serveHTTP serves c, which must be system's CRM, over HTTP. On failure
// it leaves c open.
func serveHTTP(c designs.CRM) (*httpCRM, error) {
	handle, ok := c.(*system.CRM)
	if !ok {
		return nil, fmt.Errorf("%w: a receiver of type %T cannot be served over http, only system's CRM", ErrScenario, c)
	}
	if r := handle.Retention(); r > 0 && r < time.Second {
		return nil, fmt.Errorf("%w: retention %v: over http the receiver states its retention in whole seconds, at least 1", ErrScenario, r)
	}
	srv, err := crm.NewServer(handle, handle.Retention())
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	h := &httpCRM{CRM: c, server: &http.Server{Handler: srv, ReadHeaderTimeout: readHeaderTimeout}, serving: make(chan error, 1)}
	go func() { h.serving <- h.server.Serve(ln) }()
	if h.proxy, err = faults.NewProxy(ln.Addr().String()); err != nil {
		h.stop()
		return nil, fmt.Errorf("handoff: %w", err)
	}
	for i, keepAlive := range []bool{true, false} {
		h.clients[i] = &http.Client{
			Transport:     &http.Transport{DisableKeepAlives: !keepAlive},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		if h.senders[i], err = crm.NewSender(h.proxy.URL(), h.clients[i]); err != nil {
			h.stop()
			return nil, fmt.Errorf("handoff: %w", err)
		}
	}
	return h, nil
}

// stop closes the clients' connections, the proxy and the server, once;
// the CRM handle stays open. The server closes at once: the harness sends
// one request at a time, and every one has its answer by now.
func (h *httpCRM) stop() error {
	if h.stopped {
		return nil
	}
	h.stopped = true
	var err error
	for _, c := range h.clients {
		if c != nil {
			c.CloseIdleConnections()
		}
	}
	if h.proxy != nil {
		err = h.proxy.Close()
	}
	err = errors.Join(err, h.server.Close())
	if served := <-h.serving; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	if err != nil {
		return fmt.Errorf("handoff: stopping the http receiver: %w", err)
	}
	return nil
}

// Close stops serving, then closes the CRM handle.
func (h *httpCRM) Close() error { return errors.Join(h.stop(), h.CRM.Close()) }

// CreateTask sends the request over HTTP, forwarded by the proxy: the
// CRM handle is the server's, never the worker's.
func (h *httpCRM) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return h.through(faults.Action{}).CreateTask(ctx, key, payload)
}

// through is the receiver of one request the proxy does a with, sent in
// virtual time (see unhurried).
func (h *httpCRM) through(a faults.Action) system.Receiver {
	return unhurried{h.proxy.Through(a, h.senders[0], h.senders[1])}
}

// sendBound is the longest one request over HTTP may take in the
// simulation, in real time; a request that takes longer is a failure of
// the harness's machine, not an outcome.
const sendBound = 30 * time.Second

// unhurried sends without the deadline Outbox.Send gives the request. That
// deadline is the claim's send-by time on the virtual clock, less its
// virtual now, taken as real time: the simulation's send takes no virtual
// time, so whether it ends in time must not depend on how busy the machine
// is. sendBound still ends a request that hangs.
type unhurried struct{ next system.Receiver }

func (u unhurried) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendBound)
	defer cancel()
	return u.next.CreateTask(ctx, key, payload)
}

// inProcess calls the CRM in the harness's process without the deadline
// Outbox.Send gives the request, for unhurried's reason: the deadline is
// virtual time taken as real time. The CRM's statements then run under a
// context that is never done, for which neither database/sql nor the
// SQLite driver starts a goroutine to watch it: a statement that cannot be
// cancelled costs the harness no goroutine to cancel it.
type inProcess struct{ next system.Receiver }

func (p inProcess) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	return p.next.CreateTask(context.WithoutCancel(ctx), key, payload)
}

// carry returns the CRM handle c as the worker reaches it over t: c itself
// in process, c served over HTTP otherwise. A c served already stops
// serving first; its handle stays open either way.
func carry(c designs.CRM, t Transport) (designs.CRM, error) {
	if h, ok := c.(*httpCRM); ok {
		if err := h.stop(); err != nil {
			return nil, err
		}
		c = h.CRM
	}
	if t != HTTP {
		return c, nil
	}
	return serveHTTP(c)
}

// network is the receiver as a request with fault k reaches it, as req
// says what the fault does (a retry hint, a status, a spoiling): in
// process, the receiver behind faults' network; over HTTP, the fault
// proxy taking the fault's action.
func (e *Env) network(k faults.Kind, req model.Request) (system.Receiver, error) {
	h, ok := e.crm.(*httpCRM)
	hint := time.Duration(req.RetryAfter) * time.Millisecond
	switch {
	case !ok && k == faults.Throttled:
		return faults.Throttle(hint), nil
	case !ok:
		return inProcess{faults.Network(k, e.crm)}, nil
	}
	a := faultTable[k].proxy
	switch k {
	case faults.Throttled:
		if hint%time.Second != 0 {
			return nil, fmt.Errorf("%w: retry-after=%d: over http a Retry-After is whole seconds", ErrScenario, hint.Milliseconds())
		}
		a.RetryAfter = strconv.FormatInt(int64(hint/time.Second), 10)
	case faults.Answered:
		a.Status = req.Status
	case faults.Mangled:
		a.Spoil = faults.Spoiling(req.Mangle)
	}
	r := h.through(a)
	if k == faults.ForeignTask {
		// Another system's request goes first, through the same network.
		return faults.Network(k, r), nil
	}
	return r, nil
}
