package faults_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/system"
)

// The key and payload every request of these tests carries.
const (
	key     = "harbor:create-followup:v1:case-104"
	payload = `{"case_id":"case-104","title":"Call back"}`
)

// wire is a real CRM file served by crm.Server on a loopback socket, a
// Proxy in front of it, and two crm.Senders to the proxy: sender's client
// keeps one connection alive and reuses it, fresh's never reuses one.
type wire struct {
	crm    *system.CRM
	proxy  *faults.Proxy
	client *http.Client
	sender *crm.Sender
	fresh  *crm.Sender
	// posts counts the requests that reach the server, conns the
	// connections it accepts.
	posts, conns atomic.Int64
	server       *httptest.Server
}

func newWire(t testing.TB) *wire {
	t.Helper()
	return newWireWith(t, system.ProcessSafe)
}

// newWireWith is newWire with the CRM file committing with durability d.
func newWireWith(t testing.TB, d system.Durability) *wire {
	t.Helper()
	c, err := system.OpenCRMWith(t.Context(), filepath.Join(t.TempDir(), "crm.db"), system.CRMOptions{Durability: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := crm.NewServer(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{crm: c}
	w.server = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.posts.Add(1)
		}
		srv.ServeHTTP(rw, r)
	}))
	w.server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	w.server.Start()
	t.Cleanup(w.server.Close)
	if w.proxy, err = faults.NewProxy(w.server.Listener.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.proxy.Close() })
	// One connection at most: a request waits for it to be back in the
	// pool, so that every request after the first reuses it.
	w.client = &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(w.client.CloseIdleConnections)
	if w.sender, err = crm.NewSender(w.proxy.URL(), w.client); err != nil {
		t.Fatal(err)
	}
	if w.fresh, err = crm.NewSender(w.proxy.URL(), &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}); err != nil {
		t.Fatal(err)
	}
	return w
}

// tasks is how many tasks the CRM holds.
func (w *wire) tasks(t *testing.T) int {
	t.Helper()
	ts, err := w.crm.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestProxyActions sends one request with each action, on a connection
// the client already used, then one more forwarded: what the sender
// hears, how many copies reached the server and the tasks the CRM holds
// are exactly the action's.
func TestProxyActions(t *testing.T) {
	tests := []struct {
		name   string
		action faults.Action
		wantID int64
		want   error         // the sender's outcome
		hint   time.Duration // a Retry-After the sender must hear; 0 for none
		posts  int64         // requests that reached the server
		tasks  int
	}{
		{"forward", faults.Action{}, 1, nil, 0, 1, 1},
		{"refuse", faults.Action{Verb: faults.Refuse}, 0, system.ErrTransient, 0, 0, 0},
		{"cut reply", faults.Action{Verb: faults.CutReply}, 0, system.ErrTransient, 0, 1, 1},
		{"duplicate", faults.Action{Verb: faults.Duplicate}, 1, nil, 0, 2, 1},
		{"delay", faults.Action{Verb: faults.Delay, Delay: 30 * time.Millisecond}, 1, nil, 0, 1, 1},
		{"truncate", faults.Action{Verb: faults.Truncate, Keep: 40}, 0, system.ErrTransient, 0, 1, 1},
		{"truncate all but the last byte", faults.Action{Verb: faults.Truncate, Keep: 1 << 20}, 0, system.ErrTransient, 0, 1, 1},
		{"throttle", faults.Action{Verb: faults.Respond, Status: http.StatusTooManyRequests, RetryAfter: "3"}, 0, system.ErrTransient, 3 * time.Second, 0, 0},
		{"refuse for good", faults.Action{Verb: faults.Respond, Status: http.StatusForbidden}, 0, system.ErrRejected, 0, 0, 0},
		{"in flight elsewhere", faults.Action{Verb: faults.Respond, Status: http.StatusConflict}, 0, system.ErrTransient, 0, 0, 0},
		{"a redirect", faults.Action{Verb: faults.Respond, Status: http.StatusTemporaryRedirect}, 0, system.ErrRejected, 0, 0, 0},
		{"a gateway's own 504", faults.Action{Verb: faults.Respond, Status: http.StatusGatewayTimeout}, 0, system.ErrTransient, 0, 0, 0},
		{"a conflict said by a hop", faults.Action{Verb: faults.Respond, Status: http.StatusUnprocessableEntity}, 0, system.ErrKeyConflict, 0, 0, 0},
		{"a body cut short", faults.Action{Verb: faults.Spoil, Spoil: faults.CutBody}, 0, system.ErrTransient, 0, 1, 1},
		{"a 502 after the receiver acted", faults.Action{Verb: faults.Spoil, Spoil: faults.GatewayError}, 0, system.ErrTransient, 0, 1, 1},
		{"a 201 that is not JSON", faults.Action{Verb: faults.Spoil, Spoil: faults.NotJSON}, 0, system.ErrRejected, 0, 1, 1},
		{"a 201 without a task id", faults.Action{Verb: faults.Spoil, Spoil: faults.NoTaskID}, 0, system.ErrRejected, 0, 1, 1},
		{"a 201 task of another key", faults.Action{Verb: faults.Spoil, Spoil: faults.OtherKey}, 0, system.ErrRejected, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire(t)
			ctx := t.Context()
			if _, err := w.sender.Contract(ctx); err != nil { // the client's connection is now one to reuse
				t.Fatal(err)
			}
			start := time.Now()
			id, err := w.proxy.Through(tt.action, w.sender, w.fresh).CreateTask(ctx, key, payload)
			if id != tt.wantID || !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("got %d, %v; want %d, %v", id, err, tt.wantID, tt.want)
			}
			var hint *system.RetryHint
			if got := errors.As(err, &hint); got != (tt.hint > 0) || got && hint.After != tt.hint {
				t.Errorf("got retry hint %v in %v, want %v", hint, err, tt.hint)
			}
			if got := w.posts.Load(); got != tt.posts {
				t.Errorf("the server got %d requests, want %d", got, tt.posts)
			}
			if got := w.tasks(t); got != tt.tasks {
				t.Errorf("the CRM holds %d tasks, want %d", got, tt.tasks)
			}
			if tt.action.Verb == faults.Delay && time.Since(start) < tt.action.Delay {
				t.Errorf("answered after %v, before the delay of %v", time.Since(start), tt.action.Delay)
			}
			// The action was for one request: the next is forwarded, and
			// finds the task if the CRM made one.
			id, err = w.sender.CreateTask(ctx, key, payload)
			if err != nil || id != 1 {
				t.Errorf("the request after: got %d, %v; want task 1", id, err)
			}
		})
	}
}

// TestTransportRetryHidesALostReply shows why Through sends a faulty
// request with a client that never reuses a connection: on a connection
// the client reused, net/http sends a request with an Idempotency-Key
// again by itself when the connection closes before any answer, and the
// sender hears the replay of the lost reply's task. On a fresh connection
// it hears the loss.
func TestTransportRetryHidesALostReply(t *testing.T) {
	w := newWire(t)
	ctx := t.Context()
	if _, err := w.sender.Contract(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.proxy.Next(faults.Action{Verb: faults.CutReply}); err != nil {
		t.Fatal(err)
	}
	id, err := w.sender.CreateTask(ctx, key, payload)
	if err != nil || id != 1 || w.posts.Load() != 2 {
		t.Fatalf("reused connection: got %d, %v after %d requests at the server; want task 1 after 2 (the transport's own retry)", id, err, w.posts.Load())
	}
	_, err = w.proxy.Through(faults.Action{Verb: faults.CutReply}, w.sender, w.fresh).CreateTask(ctx, key, payload)
	if !errors.Is(err, system.ErrTransient) || w.posts.Load() != 3 {
		t.Fatalf("through: got %v after %d requests at the server; want a transient failure after 3", err, w.posts.Load())
	}
}

// TestProxyKeepsConnectionsAlive sends three requests: the client reuses
// its connection to the proxy, and the proxy its connection to the server.
func TestProxyKeepsConnectionsAlive(t *testing.T) {
	w := newWire(t)
	var reused []bool
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
	})
	for range 3 {
		if _, err := w.sender.CreateTask(ctx, key, payload); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(reused) != "[false true true]" || w.conns.Load() != 1 {
		t.Errorf("client connections reused %v, server connections %d; want [false true true] and 1", reused, w.conns.Load())
	}
}

// TestProxyFindsPipelinedRequests writes two requests in one write on a
// raw connection: the proxy finds where the first ends, and the second
// gets the action set for the next request after the first.
func TestProxyFindsPipelinedRequests(t *testing.T) {
	w := newWire(t)
	if err := w.proxy.Next(faults.Action{Verb: faults.Respond, Status: http.StatusTeapot}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(w.proxy.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	one := fmt.Sprintf("POST /tasks HTTP/1.1\r\nHost: crm\r\nIdempotency-Key: %q\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(payload), payload)
	if _, err := io.WriteString(conn, one+one); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for i, want := range []int{http.StatusTeapot, http.StatusCreated} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("answer %d: %s %s, want %d", i+1, resp.Status, body, want)
		}
	}
	if w.posts.Load() != 1 {
		t.Errorf("the server got %d requests, want 1", w.posts.Load())
	}
}

// TestProxyDelayPastTheTimeout delays a request past the client's
// timeout: the client hears a transient failure, and the receiver still
// acts on the request after it gave up (when the CRM acts is not asserted:
// on a loaded machine the client may give up late). The client's timeout
// leaves a loaded machine a fifth of a second to get the request to the
// proxy: one that gave up before it arrived would leave nothing to act on.
func TestProxyDelayPastTheTimeout(t *testing.T) {
	t.Parallel()
	w := newWire(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := w.proxy.Through(faults.Action{Verb: faults.Delay, Delay: time.Second}, w.sender, w.fresh).CreateTask(ctx, key, payload)
	if !errors.Is(err, system.ErrTransient) {
		t.Fatalf("got %v, want a transient failure", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.tasks(t) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := w.tasks(t); n != 1 {
		t.Errorf("the CRM holds %d tasks after the delay, want 1", n)
	}
}

// TestProxyBadGatewayAndTooLarge: a request the upstream cannot take is
// answered by the proxy, 502 when the server is down (the sender hears a
// transient failure), 413 when the body is over a MiB.
func TestProxyBadGatewayAndTooLarge(t *testing.T) {
	w := newWire(t)
	resp, err := w.client.Post(w.proxy.URL()+"/tasks", "application/json", strings.NewReader(strings.Repeat("x", 1<<20+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || w.posts.Load() != 0 {
		t.Errorf("a body over a MiB: %s after %d requests at the server, want 413 after none", resp.Status, w.posts.Load())
	}
	w.server.Close()
	if _, err := w.sender.CreateTask(t.Context(), key, payload); !errors.Is(err, system.ErrTransient) || !strings.Contains(err.Error(), "502") {
		t.Errorf("server down: got %v, want a transient 502", err)
	}
}

func TestProxyRefusesBadActions(t *testing.T) {
	w := newWire(t)
	for _, a := range []faults.Action{
		{Verb: faults.Spoil + 1}, {Verb: faults.Spoil, Spoil: "mangled"}, {Verb: -1}, {Verb: faults.Delay, Delay: -time.Second}, {Verb: faults.Truncate, Keep: -1},
		{Verb: faults.Respond}, {Verb: faults.Respond, Status: 600},
	} {
		if err := w.proxy.Next(a); !errors.Is(err, faults.ErrProxyAction) {
			t.Errorf("Next(%+v): got %v, want ErrProxyAction", a, err)
		}
	}
}
