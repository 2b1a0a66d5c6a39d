package crm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// fuzzRetention is the retention the fuzzed server states.
const fuzzRetention = time.Hour

// fuzzTasksPerFile is how many tasks a CRM file of FuzzServer takes before
// it starts a new one, so that reading its tasks stays cheap.
const fuzzTasksPerFile = 100

// fuzzEnv is the server FuzzServer drives, on a real CRM file, and what
// it created there: the model that predicts each answer.
type fuzzEnv struct {
	dir    string
	files  int
	crm    *system.CRM
	server *crm.Server
	// created is the first answer to each key the server created a task
	// for, in this file.
	created map[string]fuzzTask
}

// fuzzTask is what the model knows of a task.
type fuzzTask struct {
	id      int64
	payload string
	answer  []byte
}

// reset starts a new CRM file and server, removes the one before, and
// forgets the model.
func (e *fuzzEnv) reset(t testing.TB) {
	t.Helper()
	if e.crm != nil {
		e.crm.Close()
		old, _ := filepath.Glob(e.path() + "*") // the pattern is well-formed
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.files++
	c, err := system.OpenCRMWith(t.Context(), e.path(), system.CRMOptions{Durability: system.ProcessSafe})
	if err != nil {
		t.Fatal(err)
	}
	s, err := crm.NewServer(c, fuzzRetention)
	if err != nil {
		t.Fatal(err)
	}
	e.crm, e.server, e.created = c, s, map[string]fuzzTask{}
}

// path is the CRM file in use.
func (e *fuzzEnv) path() string { return filepath.Join(e.dir, fmt.Sprintf("crm-%d.db", e.files)) }

// taskCount is how many tasks the CRM file holds.
func (e *fuzzEnv) taskCount(t *testing.T) int {
	t.Helper()
	ts, err := e.crm.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// fuzzRequest is one request as net/http would hand it to a handler.
type fuzzRequest struct {
	method, target string
	url            *url.URL
	keys           []string // Idempotency-Key values, white space trimmed
	contentType    string   // "" for none
	declared       int64    // Content-Length; -1 unknown (chunked)
	delivered      []byte   // the body the handler can read
	short          bool     // the body ends before Content-Length
}

// newFuzzRequest builds the request the fuzzer's values describe, or
// returns false for one net/http would refuse before any handler saw it:
// a method that is not a token, a target that is not a request URI, a
// header value with control characters. Like net/http it trims header
// values, reads no more than Content-Length, and fails the body's read
// with io.ErrUnexpectedEOF when the connection ends before it.
func newFuzzRequest(method, target, keys, contentType string, declared int64, body []byte, pad uint16) (fuzzRequest, bool) {
	u, err := url.ParseRequestURI(target)
	if method == "" || strings.IndexFunc(method, func(r rune) bool { return !isTokenChar(r) }) >= 0 || err != nil {
		return fuzzRequest{}, false
	}
	r := fuzzRequest{method: method, target: target, url: u, contentType: strings.Trim(contentType, " \t"), declared: -1}
	if keys != "" {
		for _, k := range strings.Split(keys, "\n") {
			r.keys = append(r.keys, strings.Trim(k, " \t"))
		}
	}
	for _, v := range append(slices.Clone(r.keys), contentType) {
		if strings.IndexFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) >= 0 {
			return fuzzRequest{}, false
		}
	}
	full := append(slices.Clone(body), bytes.Repeat([]byte(" "), int(pad))...)
	r.delivered = full
	if declared >= 0 {
		r.declared = declared
		switch {
		case declared < int64(len(full)):
			r.delivered = full[:declared]
		case declared > int64(len(full)):
			r.short = true
		}
	}
	return r, true
}

// isTokenChar says whether r may appear in an HTTP token (RFC 9110 §5.6.2).
func isTokenChar(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// request is r as an *http.Request, its body read for the first time.
func (r fuzzRequest) request() *http.Request {
	h := http.Header{}
	for _, k := range r.keys {
		h.Add("Idempotency-Key", k)
	}
	if r.contentType != "" {
		h.Set("Content-Type", r.contentType)
	}
	if r.declared >= 0 {
		h.Set("Content-Length", strconv.FormatInt(r.declared, 10))
	}
	var body io.Reader = bytes.NewReader(r.delivered)
	if r.short {
		body = io.MultiReader(body, failingReader{io.ErrUnexpectedEOF})
	}
	req := &http.Request{
		Method: r.method, URL: r.url, RequestURI: r.target, Host: "crm.test",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(body), ContentLength: r.declared,
	}
	if r.declared == 0 {
		req.Body = http.NoBody
	}
	return req.WithContext(context.Background())
}

// failingReader fails every read with err.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// sfString is a structured-field string (RFC 8941 §3.3.3) with the spaces
// around it that RFC 8941 §4.2 discards.
var sfString = regexp.MustCompile(`^ *"((?:[ !#-\[\]-~]|\\["\\])*)" *$`)

// refusals are the statuses the spec lists for what is wrong with a POST
// /tasks: 400 for a missing or malformed key or body, 415 for a body that
// is not declared JSON, 413 for one larger than crm.MaxBodyBytes. Where
// several things are wrong, the answer may name any of them.
func (r fuzzRequest) refusals() []int {
	var refused []int
	if len(r.keys) != 1 || !sfString.MatchString(r.keys[0]) || !within(len(r.key()), 1, crm.MaxKeyLength) {
		refused = append(refused, http.StatusBadRequest)
	}
	if mt, _, err := mime.ParseMediaType(r.contentType); err != nil || mt != "application/json" {
		refused = append(refused, http.StatusUnsupportedMediaType)
	}
	if r.declared > crm.MaxBodyBytes || len(r.delivered) > crm.MaxBodyBytes {
		refused = append(refused, http.StatusRequestEntityTooLarge)
	}
	if r.short || !utf8.Valid(r.delivered) || !json.Valid(r.delivered) {
		refused = append(refused, http.StatusBadRequest)
	}
	return refused
}

// within says whether lo ≤ n ≤ hi.
func within(n, lo, hi int) bool { return n >= lo && n <= hi }

// key is the Idempotency-Key of r, decoded; r must have one that is a
// structured-field string.
func (r fuzzRequest) key() string {
	m := sfString.FindStringSubmatch(r.keys[0])
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[1])
}

// FuzzServer sends the server any method, target, Idempotency-Key values,
// Content-Type, Content-Length and body (pad adds that many spaces, so
// that the size limit is in reach), through ServeHTTP against a real CRM
// file. The server must never panic or answer 5xx; it answers only the
// statuses the spec lists for the class of the request, as a problem+json for
// a 4xx, with Idempotency-Retention on every answer; a 4xx (and every
// answer but a new task's 201) leaves the task count as it was. A POST
// that passes validation is predicted exactly: 201 for a new key (one more
// task, then replayed byte for byte with Idempotent-Replayed), the first
// answer again for a known key and the same body, 422 for another body.
func FuzzServer(f *testing.F) {
	env := &fuzzEnv{dir: f.TempDir()}
	env.reset(f)
	f.Fuzz(func(t *testing.T, method, target, keys, contentType string, declared int64, body []byte, pad uint16) {
		r, ok := newFuzzRequest(method, target, keys, contentType, declared, body, pad)
		if !ok {
			return
		}
		if len(env.created) >= fuzzTasksPerFile {
			env.reset(t)
		}
		before := env.taskCount(t)
		got := serveFuzz(t, env.server, r)
		wantTasks := before
		switch p := r.url.Path; {
		case p == "/tasks" && r.method == http.MethodPost:
			if refused := r.refusals(); len(refused) > 0 {
				if !slices.Contains(refused, got.Code) {
					t.Fatalf("%s: got %d, want one of %v: %s", r.describe(), got.Code, refused, got.Body)
				}
				break
			}
			wantTasks += env.checkCreate(t, r, got)
		case p == "/tasks" && r.method == http.MethodGet:
			env.checkLookup(t, r, got)
		case strings.HasPrefix(p, "/tasks/") && r.method == http.MethodGet:
			id, err := strconv.ParseInt(strings.TrimPrefix(p, "/tasks/"), 10, 64)
			want := http.StatusNotFound
			if err == nil && "/tasks/"+strconv.FormatInt(id, 10) == p && id >= 1 && id <= int64(before) {
				want = http.StatusOK
			}
			wantStatus(t, r, got, want)
		case p == "/contract" && r.method == http.MethodGet:
			wantStatus(t, r, got, http.StatusOK)
		case p == "/tasks" || strings.HasPrefix(p, "/tasks/") || p == "/contract":
			wantStatus(t, r, got, http.StatusMethodNotAllowed)
			if got.Header().Get("Allow") == "" {
				t.Fatalf("%s: 405 without Allow", r.describe())
			}
		default:
			wantStatus(t, r, got, http.StatusNotFound)
		}
		if after := env.taskCount(t); after != wantTasks {
			t.Fatalf("%s → %d: %d tasks, want %d", r.describe(), got.Code, after, wantTasks)
		}
	})
}

// serveFuzz serves r and checks what every answer must be: no 5xx, the
// retention stated, a 4xx as problem+json of its status.
func serveFuzz(t *testing.T, s *crm.Server, r fuzzRequest) *httptest.ResponseRecorder {
	t.Helper()
	got := httptest.NewRecorder()
	s.ServeHTTP(got, r.request())
	if got.Code >= 500 || got.Code < 200 {
		t.Fatalf("%s: got %d: %s", r.describe(), got.Code, got.Body)
	}
	if v := got.Header().Values("Idempotency-Retention"); !slices.Equal(v, []string{strconv.Itoa(int(fuzzRetention / time.Second))}) {
		t.Fatalf("%s: Idempotency-Retention %q", r.describe(), v)
	}
	if got.Code >= 400 {
		var p struct {
			Status int `json:"status"`
		}
		if got.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(got.Body.Bytes(), &p) != nil || p.Status != got.Code {
			t.Fatalf("%s: %d is not a problem+json of its status: %v %s", r.describe(), got.Code, got.Header(), got.Body)
		}
	}
	return got
}

// wantStatus fails the test unless got answered want.
func wantStatus(t *testing.T, r fuzzRequest, got *httptest.ResponseRecorder, want int) {
	t.Helper()
	if got.Code != want {
		t.Fatalf("%s: got %d, want %d: %s", r.describe(), got.Code, want, got.Body)
	}
}

// describe is r in a line, for a failure.
func (r fuzzRequest) describe() string {
	return fmt.Sprintf("%s %q keys %q type %q length %d body %d bytes (short %v)", r.method, r.target, r.keys, r.contentType, r.declared, len(r.delivered), r.short)
}

// checkCreate checks the answer to a valid POST against the model, and
// returns how many tasks it added.
func (e *fuzzEnv) checkCreate(t *testing.T, r fuzzRequest, got *httptest.ResponseRecorder) int {
	t.Helper()
	key, payload := r.key(), string(r.delivered)
	prev, known := e.created[key]
	switch {
	case known && prev.payload != payload:
		wantStatus(t, r, got, http.StatusUnprocessableEntity)
		return 0
	case known:
		wantStatus(t, r, got, http.StatusCreated)
		if !bytes.Equal(got.Body.Bytes(), prev.answer) || got.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: a replay answered %v %q, want %q replayed", r.describe(), got.Header(), got.Body, prev.answer)
		}
		return 0
	}
	wantStatus(t, r, got, http.StatusCreated)
	var task struct {
		ID      int64           `json:"id"`
		Key     string          `json:"key"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(got.Body.Bytes(), &task); err != nil || task.Key != key || !jsonEqual(task.Payload, r.delivered) ||
		got.Header().Get("Location") != "/tasks/"+strconv.FormatInt(task.ID, 10) || got.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s: 201 %v %s is not the new task for %q", r.describe(), got.Header(), got.Body, key)
	}
	e.created[key] = fuzzTask{id: task.ID, payload: payload, answer: got.Body.Bytes()}
	again := serveFuzz(t, e.server, r)
	if again.Code != http.StatusCreated || !bytes.Equal(again.Body.Bytes(), got.Body.Bytes()) || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%s: the replay answered %d %v %q, want %q replayed", r.describe(), again.Code, again.Header(), again.Body, got.Body)
	}
	return 1
}

// jsonEqual says whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// checkLookup checks GET /tasks?key= against the model.
func (e *fuzzEnv) checkLookup(t *testing.T, r fuzzRequest, got *httptest.ResponseRecorder) {
	t.Helper()
	q, _ := url.ParseQuery(r.url.RawQuery) // as Request.URL.Query, the pairs that parse
	if len(q["key"]) != 1 || q["key"][0] == "" {
		wantStatus(t, r, got, http.StatusBadRequest)
		return
	}
	wantStatus(t, r, got, http.StatusOK)
	var list struct {
		Tasks []struct {
			ID int64 `json:"id"`
		} `json:"tasks"`
	}
	var want []int64
	if prev, ok := e.created[q["key"][0]]; ok {
		want = append(want, prev.id)
	}
	var ids []int64
	if err := json.Unmarshal(got.Body.Bytes(), &list); err == nil {
		for _, task := range list.Tasks {
			ids = append(ids, task.ID)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("%s: listed %v (%s), want %v", r.describe(), ids, got.Body, want)
	}
}
