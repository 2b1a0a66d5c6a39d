package crm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/outboxlab/handoff/system"
)

// MaxBodyBytes is the largest payload POST /tasks takes.
const MaxBodyBytes = 64 << 10

// BusyRetryAfter is the Retry-After, whole seconds, of the 503 sent when
// the CRM database is busy.
const BusyRetryAfter = time.Second

// Contract is what GET /contract answers: the terms a sender needs.
type Contract struct {
	// RetentionSeconds is how long the server remembers a key after it
	// first stored it, in whole seconds; 0 means forever.
	RetentionSeconds int64 `json:"idempotency_retention_seconds"`
	MaxKeyLength     int   `json:"max_key_length"`
	MaxBodyBytes     int   `json:"max_body_bytes"`
	// Identity is the CRM database's identity: an app database remembers
	// it on its first delivery and refuses another CRM after.
	Identity string `json:"identity"`
}

// Server is the HTTP receiver of the spec: an http.Handler that creates tasks
// in a system.CRM, once per Idempotency-Key.
//
// The CRM is the truth of which key holds which task: every POST goes
// through CRM.Create, which is atomic and idempotent and says whether the
// task was there already. A response is a function of the task's id, key
// and payload alone, so a replay, before or after a restart, answers the
// bytes the first create did. The payload stored is the request body as
// sent, so that the same SHA-256 fingerprint and the same payload are one
// thing. A create and GET /tasks/{id} look their task up by its key or
// id; GET /tasks?key=KEY, a diagnostic, scans the tasks in the database
// (the tasks table has no index on the key).
type Server struct {
	crm       *system.CRM
	retention time.Duration
	header    string // the Idempotency-Retention value

	mu       sync.Mutex
	inFlight map[string]bool

	// observe, when set, hears every answer (see Observe).
	observe func(r Result, create bool, took time.Duration)
}

// Result names how the server answered a request, for a count of its
// answers (see Observe).
type Result string

// The results of the server's answers.
const (
	ResultCreated          Result = "created"                // 201: a new task
	ResultReplayed         Result = "replayed"               // 201 with Idempotent-Replayed: the key's task again
	ResultConflict         Result = "conflict"               // 422: the key is held with another payload
	ResultInFlight         Result = "in_flight"              // 409: the key's first request is still being processed
	ResultInvalid          Result = "invalid"                // 400: a bad key, body or query
	ResultTooLarge         Result = "too_large"              // 413: the body is over MaxBodyBytes
	ResultUnsupportedMedia Result = "unsupported_media_type" // 415
	ResultBusy             Result = "busy"                   // 503: the CRM database is busy
	ResultFailed           Result = "failed"                 // 500: the CRM database failed
	ResultRead             Result = "read"                   // 200: a task, the tasks of a key, the contract
	ResultNotFound         Result = "not_found"              // 404
	ResultMethodNotAllowed Result = "method_not_allowed"     // 405
)

// Results lists every Result.
var Results = []Result{ResultCreated, ResultReplayed, ResultConflict, ResultInFlight, ResultInvalid, ResultTooLarge,
	ResultUnsupportedMedia, ResultBusy, ResultFailed, ResultRead, ResultNotFound, ResultMethodNotAllowed}

// resultOf is the Result of an answer with status; replayed says the
// answer carried Idempotent-Replayed.
func resultOf(status int, replayed bool) Result {
	switch status {
	case http.StatusCreated:
		if replayed {
			return ResultReplayed
		}
		return ResultCreated
	case http.StatusOK:
		return ResultRead
	case http.StatusUnprocessableEntity:
		return ResultConflict
	case http.StatusConflict:
		return ResultInFlight
	case http.StatusRequestEntityTooLarge:
		return ResultTooLarge
	case http.StatusUnsupportedMediaType:
		return ResultUnsupportedMedia
	case http.StatusServiceUnavailable:
		return ResultBusy
	case http.StatusNotFound:
		return ResultNotFound
	case http.StatusMethodNotAllowed:
		return ResultMethodNotAllowed
	case http.StatusBadRequest:
		return ResultInvalid
	}
	return ResultFailed
}

// Observe has fn hear every answer the server gives from now on: its
// Result, whether it answered a create (POST /tasks), and how long it
// took from the request's headers to the answer. Call it before serving.
func (s *Server) Observe(fn func(r Result, create bool, took time.Duration)) { s.observe = fn }

// observed is a ResponseWriter that notes the status it answers.
type observed struct {
	http.ResponseWriter
	status int
}

func (o *observed) WriteHeader(status int) {
	if o.status == 0 {
		o.status = status
	}
	o.ResponseWriter.WriteHeader(status)
}

func (o *observed) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	return o.ResponseWriter.Write(b)
}

// unwrapped is the ResponseWriter the server was given for w: a
// MaxBytesReader asks it to close the connection after a body too large.
func unwrapped(w http.ResponseWriter) http.ResponseWriter {
	if o, ok := w.(*observed); ok {
		return o.ResponseWriter
	}
	return w
}

// NewServer returns the server of c. retention is what it states in
// Idempotency-Retention and at GET /contract, in whole seconds (rounded
// down, so never longer than it is); 0 means forever. It refuses a nil
// CRM, a negative retention, one shorter than a second (it would be stated
// as 0, forever), and one longer than c itself remembers keys: a sender
// would then retry after the key is forgotten and make a second task.
func NewServer(c *system.CRM, retention time.Duration) (*Server, error) {
	switch crm := c; {
	case crm == nil:
		return nil, errors.New("crm: NewServer needs a CRM")
	case retention < 0:
		return nil, fmt.Errorf("crm: retention is %v, want 0 (forever) or more", retention)
	case retention > 0 && retention < time.Second:
		return nil, fmt.Errorf("crm: retention is %v, want 0 (forever) or at least a second", retention)
	case crm.Retention() > 0 && (retention == 0 || retention > crm.Retention()):
		return nil, fmt.Errorf("crm: retention %v is longer than the CRM's (%v)", retention, crm.Retention())
	}
	return &Server{
		crm:       c,
		retention: retention,
		header:    strconv.FormatInt(int64(retention/time.Second), 10),
		inFlight:  map[string]bool{},
	}, nil
}

// ServeHTTP routes: POST /tasks, GET /tasks?key=KEY, GET /tasks/{id},
// GET /contract. Every response carries Idempotency-Retention.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.observe != nil {
		start := time.Now()
		o := &observed{ResponseWriter: w}
		defer func() {
			s.observe(resultOf(o.status, o.Header().Get("Idempotent-Replayed") == "true"), r.Method == http.MethodPost && r.URL.Path == "/tasks", time.Since(start))
		}()
		w = o
	}
	s.serve(w, r)
}

// serve is ServeHTTP without the observer.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Idempotency-Retention", s.header)
	switch p := r.URL.Path; {
	case p == "/tasks":
		switch r.Method {
		case http.MethodPost:
			s.create(w, r)
		case http.MethodGet:
			s.byKey(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
	case strings.HasPrefix(p, "/tasks/"):
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		s.byID(w, r, strings.TrimPrefix(p, "/tasks/"))
	case p == "/contract":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		id, err := s.crm.Identity(r.Context())
		if err != nil {
			crmFailed(w, err)
			return
		}
		writeJSON(w, http.StatusOK, Contract{
			RetentionSeconds: int64(s.retention / time.Second),
			MaxKeyLength:     MaxKeyLength,
			MaxBodyBytes:     MaxBodyBytes,
			Identity:         id,
		})
	default:
		problem(w, http.StatusNotFound, "no such resource: "+p)
	}
}

// create is POST /tasks.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) != 1 {
		problem(w, http.StatusBadRequest, fmt.Sprintf("want one Idempotency-Key header, got %d", len(values)))
		return
	}
	key, err := ParseIdempotencyKey(values[0])
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		problem(w, http.StatusUnsupportedMediaType, "the body must be application/json")
		return
	}
	if r.ContentLength > MaxBodyBytes {
		problem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(unwrapped(w), r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		problem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes))
		return
	case err != nil:
		problem(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	case !utf8.Valid(body) || !json.Valid(body):
		problem(w, http.StatusBadRequest, "the body is not well-formed JSON")
		return
	}
	if !s.begin(key) {
		problem(w, http.StatusConflict, "a request with this Idempotency-Key is still being processed; retry later")
		return
	}
	defer s.end(key)
	s.createTask(r.Context(), w, key, body)
}

// createTask creates the task of key, whose request nobody else is
// processing, and answers: a new task, a replay or a conflict.
func (s *Server) createTask(ctx context.Context, w http.ResponseWriter, key string, body []byte) {
	id, replayed, err := s.crm.Create(ctx, key, string(body))
	switch {
	case errors.Is(err, system.ErrKeyConflict):
		problem(w, http.StatusUnprocessableEntity, "this Idempotency-Key was used with another payload; nothing changed")
		return
	case err != nil:
		crmFailed(w, err)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeTask(w, id, taskBody(system.Task{ID: id, Key: key, Payload: string(body)}))
}

// byKey is GET /tasks?key=KEY: every task the CRM holds for the key, oldest
// first (more than one if the key was forgotten and used again).
func (s *Server) byKey(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if len(q["key"]) != 1 || q.Get("key") == "" {
		problem(w, http.StatusBadRequest, "want one query parameter key")
		return
	}
	tasks, err := s.crm.TasksOfKey(r.Context(), q.Get("key"))
	if err != nil {
		crmFailed(w, err)
		return
	}
	found := []json.RawMessage{}
	for _, t := range tasks {
		found = append(found, bytes.TrimSuffix(taskBody(t), []byte("\n")))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": found})
}

// byID is GET /tasks/{id}.
func (s *Server) byID(w http.ResponseWriter, r *http.Request, idText string) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != idText {
		problem(w, http.StatusNotFound, "no task "+idText)
		return
	}
	t, err := s.crm.Task(r.Context(), id)
	switch {
	case errors.Is(err, system.ErrNotFound):
		problem(w, http.StatusNotFound, "no task "+idText)
	case err != nil:
		crmFailed(w, err)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(taskBody(t))
	}
}

// begin marks key in flight; false if it already was.
func (s *Server) begin(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[key] {
		return false
	}
	s.inFlight[key] = true
	return true
}

// end clears the in-flight mark of key.
func (s *Server) end(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, key)
}

// taskBody is the body that answers a create of t:
// {"id":N,"key":"...","payload":{...}} and a newline, the payload compact.
// It depends on t alone, so a response rebuilt after a restart is the one
// first sent, byte for byte.
func taskBody(t system.Task) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// The payload is JSON the server validated before storing it.
	_ = enc.Encode(struct {
		ID      int64           `json:"id"`
		Key     string          `json:"key"`
		Payload json.RawMessage `json:"payload"`
	}{t.ID, t.Key, json.RawMessage(t.Payload)})
	return b.Bytes()
}

// writeTask answers 201 Created with the task's body.
func writeTask(w http.ResponseWriter, id int64, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/tasks/"+strconv.FormatInt(id, 10))
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

// crmFailed answers a failure of the CRM database: 503 with Retry-After
// when it is busy, 500 otherwise.
func crmFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, system.ErrBusy) {
		w.Header().Set("Retry-After", strconv.Itoa(int(BusyRetryAfter/time.Second)))
		problem(w, http.StatusServiceUnavailable, "the CRM database is busy; retry later")
		return
	}
	problem(w, http.StatusInternalServerError, "the CRM failed: "+err.Error())
}

// methodNotAllowed answers 405 with the methods allowed.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	problem(w, http.StatusMethodNotAllowed, "allowed: "+allow)
}

// problem answers status with an RFC 9457 problem+json body.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":   "about:blank",
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
