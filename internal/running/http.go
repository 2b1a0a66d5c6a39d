package running

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/outboxlab/handoff/crm"
)

// ReceiverURL is the base URL of the harness's receiver over HTTP: a
// process's HTTPClient reaches it in memory, whatever the host says.
const ReceiverURL = "http://receiver.handoff.invalid"

// httpReceiver is the harness's receiver as an http.RoundTripper: the
// spec's HTTP receiver (POST /tasks with Idempotency-Key, its status
// classes and Retry-After, GET /contract), served in memory, with the
// schedule's faults acting on the exchange: a reply lost after the
// receiver acted is a connection reset, a late reply comes after the
// client's deadline, an outage refuses the connection.
//
// One difference from crm.Server, on purpose: a POST without
// Idempotency-Key creates a task every time, as a receiver whose key is
// optional does (most production ones), so that a sender that drops the
// key shows the duplicates it makes.
type httpReceiver struct {
	p      *process
	worker string
}

// errConnection is what a request fails with when no full answer came:
// the client cannot tell whether the receiver acted.
var errConnection = errors.New("running: connection reset by peer before a full answer")

func (h httpReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	path := strings.TrimSuffix(req.URL.Path, "/")
	switch {
	case path == "/contract" && req.Method == http.MethodGet:
		return h.json(req, http.StatusOK, nil, crm.Contract{MaxKeyLength: 255, MaxBodyBytes: crm.MaxBodyBytes, Identity: "running"})
	case path != "/tasks":
		return h.problem(req, http.StatusNotFound, "no such resource: "+req.URL.Path)
	case req.Method != http.MethodPost:
		return h.problem(req, http.StatusMethodNotAllowed, "allowed: POST", "Allow", "POST")
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, crm.MaxBodyBytes+1))
		if err != nil {
			return nil, fmt.Errorf("running: reading the request body: %w", err)
		}
		body = b
	}
	values := req.Header.Values("Idempotency-Key")
	key, keyless := strings.Join(values, ", "), len(values) == 0
	bad := malformedRequest{}
	if len(values) > 1 {
		bad = malformedRequest{http.StatusBadRequest, fmt.Sprintf("want one Idempotency-Key header, got %d", len(values))}
	}
	if len(values) == 1 {
		if k, err := crm.ParseIdempotencyKey(values[0]); err != nil {
			bad = malformedRequest{http.StatusBadRequest, err.Error()}
		} else {
			key = k
		}
	}
	switch {
	case bad.status != 0:
	case len(body) > crm.MaxBodyBytes:
		bad = malformedRequest{http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", crm.MaxBodyBytes)}
	case !utf8.Valid(body) || !json.Valid(body):
		bad = malformedRequest{http.StatusBadRequest, "the body is not well-formed JSON"}
	}
	rep := h.p.receiver.handle(req.Context(), h.p, h.worker, key, string(body), keyless, bad)
	switch rep.answer {
	case Down:
		return nil, fmt.Errorf("running: dial receiver: connection refused: %w", rep.err)
	case LostReply:
		return nil, errConnection
	case LateReply:
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("running: the answer came after a minute: %w", errConnection)
	case Throttled503, Throttled429:
		after := strconv.Itoa(int((rep.wait + time.Second - 1) / time.Second))
		return h.problem(req, rep.answer.Status, "retry later", "Retry-After", after)
	case InFlight:
		return h.problem(req, http.StatusConflict, "a request with this Idempotency-Key is still being processed; retry later")
	case FailedAfterActing:
		return h.problem(req, http.StatusInternalServerError, "the CRM failed")
	case Refused:
		if bad.status != 0 {
			return h.problem(req, bad.status, bad.detail)
		}
		return h.problem(req, http.StatusBadRequest, "refused: the CRM's validation rejects this task")
	case KeyConflict:
		return h.problem(req, http.StatusUnprocessableEntity, "this Idempotency-Key was used with another payload; nothing changed")
	}
	header := []string{"Location", "/tasks/" + strconv.FormatInt(rep.task.ID, 10)}
	if rep.replayed {
		header = append(header, "Idempotent-Replayed", "true")
	}
	return h.json(req, http.StatusCreated, header, struct {
		ID      int64           `json:"id"`
		Key     string          `json:"key"`
		Payload json.RawMessage `json:"payload"`
	}{rep.task.ID, rep.task.Key, json.RawMessage(rep.task.Payload)})
}

// problem answers status with a problem+json body, and header's pairs.
func (h httpReceiver) problem(req *http.Request, status int, detail string, header ...string) (*http.Response, error) {
	resp, err := h.json(req, status, header, map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail})
	resp.Header.Set("Content-Type", "application/problem+json")
	return resp, err
}

// json answers status with v as JSON, and header's pairs.
func (h httpReceiver) json(req *http.Request, status int, header []string, v any) (*http.Response, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	resp := &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Retention": {"0"}},
		Body:   io.NopCloser(&b), ContentLength: int64(b.Len()), Request: req,
	}
	for i := 0; i+1 < len(header); i += 2 {
		resp.Header.Set(header[i], header[i+1])
	}
	return resp, nil
}
