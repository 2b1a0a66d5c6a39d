package crm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outboxlab/handoff/system"
)

// maxAnswerBytes is the most of an answer's body the sender reads.
const maxAnswerBytes = 1 << 20

// contractTimeout bounds the GET /contract that Retention makes.
const contractTimeout = 5 * time.Second

// Sender is the system.Receiver that delivers over HTTP to a receiver
// that keeps the spec's contract (such as Server): POST {base}/tasks with the
// key as Idempotency-Key and the payload as the body. It maps answers as
// the spec's table says; an answer the table does not name (a 3xx, another
// 4xx, another 2xx) is refused for good, ErrRejected, so that a person
// looks rather than a retry guessing.
//
// The request carries Idempotency-Key, so net/http's transport may itself
// send it again, once, when a reused connection closes before any answer:
// safe, since the receiver replays the key.
type Sender struct {
	base   *url.URL
	client *http.Client

	mu        sync.Mutex
	retention time.Duration
	known     bool // retention was read
}

// ErrBadURL is matched (errors.Is) by the error NewSender and
// ParseReceiverURL return for a receiver URL that is not http or https,
// has no host, or has a user, query or fragment.
var ErrBadURL = errors.New("crm: bad receiver URL")

// urlError is a refused receiver URL: its message says why, and it is
// ErrBadURL.
type urlError string

func (e urlError) Error() string        { return string(e) }
func (e urlError) Is(target error) bool { return target == ErrBadURL }

// ParseReceiverURL parses the base URL of a receiver, as NewSender takes
// it: http or https, with a host and no user, query or fragment; a path
// prefix is kept. Any other URL is refused with an error matching
// ErrBadURL. It is exported so that the receiver contract's checker
// (crm/contract) takes exactly the URLs a Sender does.
func ParseReceiverURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, urlError(fmt.Sprintf("crm: the receiver URL %q: %v", raw, err))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, urlError(fmt.Sprintf("crm: the receiver URL %q is not http or https", raw))
	case u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, urlError(fmt.Sprintf("crm: the receiver URL %q must have a host and no user, query or fragment", raw))
	}
	return u, nil
}

// NewSender returns a Sender to the receiver at baseURL, an http or https
// URL (a path prefix is kept); any other is refused with ErrBadURL. client nil means a client that follows no
// redirects; the time a send may take comes from its context (DeliverOne
// gives the send timeout).
func NewSender(baseURL string, client *http.Client) (*Sender, error) {
	u, err := ParseReceiverURL(baseURL)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Sender{base: u, client: client}, nil
}

// CreateTask implements system.Receiver.
func (s *Sender) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	header, err := FormatIdempotencyKey(key)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", system.ErrRejected, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base.JoinPath("tasks").String(), strings.NewReader(payload))
	if err != nil {
		return 0, fmt.Errorf("%w: building the request: %v", system.ErrRejected, err)
	}
	req.Header.Set("Idempotency-Key", header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", system.ErrTransient, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return 0, fmt.Errorf("%w: reading the answer (%s): %v", system.ErrTransient, resp.Status, err)
	}
	id, err := answer(resp, body, key, time.Now())
	if err == nil && resp.Header.Get("Idempotent-Replayed") == "true" {
		system.NoteReplay(ctx)
	}
	return id, err
}

// answer maps a full answer to a create of key to its outcome.
func answer(resp *http.Response, body []byte, key string, now time.Time) (int64, error) {
	code := resp.StatusCode
	says := fmt.Sprintf("%s: %s", resp.Status, detail(body))
	switch {
	case code == http.StatusOK || code == http.StatusCreated:
		return task(body, key)
	case code == http.StatusConflict:
		return 0, fmt.Errorf("%w: the key is in flight at the receiver: %s", system.ErrTransient, says)
	case code == http.StatusUnprocessableEntity:
		return 0, fmt.Errorf("%w: %s", system.ErrKeyConflict, says)
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		err := fmt.Errorf("%w: %s", system.ErrTransient, says)
		if after, ok := RetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return 0, &system.RetryHint{After: after, Err: err}
		}
		return 0, err
	case code >= 500:
		return 0, fmt.Errorf("%w: %s", system.ErrTransient, says)
	}
	return 0, fmt.Errorf("%w: %s", system.ErrRejected, says)
}

// task reads the task of a 200 or 201 answer: its id, for key.
func task(body []byte, key string) (int64, error) {
	var t struct {
		ID      *int64          `json:"id"`
		Key     *string         `json:"key"`
		Payload json.RawMessage `json:"payload"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&t); err != nil || dec.More() || t.ID == nil || *t.ID <= 0 || t.Key == nil || t.Payload == nil {
		return 0, fmt.Errorf("%w: contract breach: a 2xx answer that is not a task: %s", system.ErrRejected, detail(body))
	}
	if *t.Key != key {
		return 0, fmt.Errorf("%w: contract breach: task %d answers key %q, not %q", system.ErrRejected, *t.ID, *t.Key, key)
	}
	return *t.ID, nil
}

// RetryAfter reads a Retry-After value, delay seconds or an HTTP date, as
// the time to wait from now; false when v is neither. It is exported so
// that the receiver contract's checker (crm/contract) waits as a Sender
// does.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return time.Duration(min(n, int64(time.Duration(1<<62)/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// detail is a short excerpt of an answer's body for an error.
func detail(body []byte) string {
	const most = 200
	s := strings.TrimSpace(string(body))
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strconv.Quote(s)
}

// Retention implements system.Retainer: the retention the receiver states
// at GET /contract. The first read that succeeds is kept for good. While
// none has, Retention returns 0 — to the outbox, "forever" — and tries
// again at its next call: call Contract at start-up to fail fast instead.
func (s *Sender) Retention() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), contractTimeout)
	defer cancel()
	r, _ := s.Contract(ctx) // on failure r is 0, as documented
	return r
}

// Contract reads the receiver's retention at GET /contract, once: after
// a read succeeds, it answers from memory.
func (s *Sender) Contract(ctx context.Context) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known {
		return s.retention, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base.JoinPath("contract").String(), nil)
	if err != nil {
		return 0, fmt.Errorf("crm: reading the contract: %w", err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("crm: reading the contract: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("crm: reading the contract: %s", resp.Status)
	}
	var c struct {
		RetentionSeconds *int64 `json:"idempotency_retention_seconds"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&c); err != nil || c.RetentionSeconds == nil || *c.RetentionSeconds < 0 || *c.RetentionSeconds > int64(time.Duration(1<<62)/time.Second) {
		return 0, fmt.Errorf("crm: reading the contract: no idempotency_retention_seconds within 0 and 2^62 ns")
	}
	s.retention, s.known = time.Duration(*c.RetentionSeconds)*time.Second, true
	return s.retention, nil
}
