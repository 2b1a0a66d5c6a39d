package contract

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/outboxlab/handoff/crm"
)

// userAgent is the User-Agent of Check's requests.
const userAgent = "handoff-check-receiver"

// maxAnswerBytes is the most of an answer's body the check reads: a task,
// a problem or the contract is far smaller.
const maxAnswerBytes = 1 << 20

// reply is an answer read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
	reused bool // it came over a connection used before
}

// retentionSeen is what one answer said of the retention.
type retentionSeen struct {
	request string   // "POST /tasks → 201"
	values  []string // its Idempotency-Retention headers
}

// newClient returns a client that talks to the receiver directly (no
// proxy), follows no redirect, records the retention every answer states,
// and keeps its connections alive or not.
func (c *checker) newClient(keepAlive bool) *http.Client {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: c.opts.Timeout}).DialContext,
		TLSHandshakeTimeout: c.opts.Timeout,
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 1,
	}
	c.mu.Lock()
	c.transports = append(c.transports, t)
	c.mu.Unlock()
	return &http.Client{
		Transport:     recorder{t, c},
		Timeout:       c.opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// closeIdle closes the connections the run left open.
func (c *checker) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
}

// recorder is a RoundTripper that records each answer's retention.
type recorder struct {
	next http.RoundTripper
	c    *checker
}

// RoundTrip implements http.RoundTripper.
func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.c.mu.Lock()
		r.c.answers = append(r.c.answers, retentionSeen{
			request: fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode),
			values:  resp.Header.Values("Idempotency-Retention"),
		})
		r.c.mu.Unlock()
	}
	return resp, err
}

// reachable asks GET /contract and accepts any HTTP answer: a receiver
// need not serve it, but something must answer before a clause can fail.
func (c *checker) reachable(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath("contract").String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("contract: the check was interrupted: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, c.base, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	return resp.Body.Close()
}

// request is POST /tasks with keyHeader as the raw Idempotency-Key (none
// when empty) and payload as the body.
func (c *checker) request(ctx context.Context, keyHeader, payload string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath("tasks").String(), strings.NewReader(payload))
	if err != nil {
		return nil, err
	}
	if keyHeader != "" {
		req.Header.Set("Idempotency-Key", keyHeader)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	return req, nil
}

// post sends POST /tasks with client and reads the answer.
func (c *checker) post(ctx context.Context, client *http.Client, keyHeader, payload string) (reply, error) {
	req, err := c.request(ctx, keyHeader, payload)
	if err != nil {
		return reply{}, err
	}
	return do(client, req)
}

// do sends req with client and reads the answer in full.
func do(client *http.Client, req *http.Request) (reply, error) {
	var r reply
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { r.reused = info.Reused }}
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	if r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes)); err != nil {
		return reply{}, fmt.Errorf("reading the answer (%d): %w", r.status, err)
	}
	return r, nil
}

// replay posts key and payload with client until the answer is not one
// that says "later": a 409 (in flight) it tries again after retryPause, a
// 429 or 503 after its Retry-After (at most a second), all within the
// timeout.
func (c *checker) replay(ctx context.Context, client *http.Client, key, payload string) (reply, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	for {
		r, err := c.post(ctx, client, quoted(key), payload)
		if err != nil || time.Now().After(deadline) {
			return r, err
		}
		pause := retryPause
		switch r.status {
		case http.StatusConflict:
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			if after, ok := crm.RetryAfter(r.header.Get("Retry-After"), time.Now()); ok {
				pause = min(max(after, retryPause), time.Second)
			}
		default:
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// lookup is GET /tasks?key=KEY: the ids of the tasks it lists, each of
// which must be for key.
func (c *checker) lookup(ctx context.Context, key string) ([]int64, error) {
	u := c.base.JoinPath("tasks")
	u.RawQuery = url.Values{"key": {key}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	r, err := do(c.client, req)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET /tasks?key= → %d, want 200", r.status)
	}
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || list.Tasks == nil {
		return nil, fmt.Errorf("GET /tasks?key= → 200, but not {\"tasks\":[…]}: %s", excerpt(r.body))
	}
	ids := []int64{}
	for _, raw := range list.Tasks {
		id, err := parseTask(raw, key, "")
		if err != nil {
			return nil, fmt.Errorf("GET /tasks?key= lists a task that is not for the key: %v", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// sendAndCut sends POST /tasks for key and payload over a connection of
// its own and closes it without reading the answer: at once, or, with
// answered, once the answer begins to arrive (the receiver has acted and
// answered, and the answer is lost).
func (c *checker) sendAndCut(ctx context.Context, key, payload string, answered bool) error {
	req, err := c.request(ctx, quoted(key), payload)
	if err != nil {
		return err
	}
	d := &net.Dialer{Timeout: c.opts.Timeout}
	addr := c.base.Host
	if c.base.Port() == "" {
		addr = net.JoinHostPort(c.base.Hostname(), map[string]string{"http": "80", "https": "443"}[c.base.Scheme])
	}
	var conn net.Conn
	if c.base.Scheme == "https" {
		td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: c.base.Hostname()}}
		conn, err = td.DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(c.opts.Timeout)); err != nil {
		return err
	}
	if err := req.Write(conn); err != nil || !answered {
		return err
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("no answer began: %w", err)
	}
	return nil
}
