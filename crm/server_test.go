package crm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// openCRM opens a CRM file in a fresh folder; the second result is its path.
func openCRM(t *testing.T, opts system.CRMOptions) (*system.CRM, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crm.db")
	c, err := system.OpenCRMWith(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

// serve starts a Server of c on a real socket.
func serve(t *testing.T, c *system.CRM, retention time.Duration) *httptest.Server {
	t.Helper()
	s, err := crm.NewServer(c, retention)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// answer is a response read in full.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends method to url with headers h (name, value pairs) and body.
func do(t *testing.T, method, url, body string, h ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Add(h[i], h[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// post is POST /tasks with key as the header's raw value.
func post(t *testing.T, base, key, body string) answer {
	t.Helper()
	return do(t, http.MethodPost, base+"/tasks", body, "Idempotency-Key", key, "Content-Type", "application/json")
}

func tasks(t *testing.T, c *system.CRM) []system.Task {
	t.Helper()
	ts, err := c.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestServerCreateAndReplay(t *testing.T) {
	c, path := openCRM(t, system.CRMOptions{})
	ts := serve(t, c, time.Hour)
	const payload = `{"case_id": "case-104", "title": "Call <back>"}`
	first := post(t, ts.URL, `"harbor:create-followup:v1:case-104"`, payload)
	if first.status != http.StatusCreated || first.header.Get("Location") != "/tasks/1" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	want := `{"id":1,"key":"harbor:create-followup:v1:case-104","payload":{"case_id":"case-104","title":"Call <back>"}}` + "\n"
	if string(first.body) != want {
		t.Fatalf("body %q, want %q", first.body, want)
	}
	if got := first.header.Get("Idempotency-Retention"); got != "3600" {
		t.Errorf("Idempotency-Retention %q", got)
	}
	again := post(t, ts.URL, `"harbor:create-followup:v1:case-104"`, payload)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) || again.header.Get("Location") != "/tasks/1" {
		t.Fatalf("replay: %d %v %q", again.status, again.header, again.body)
	}
	// A new server on the same file: the key still replays, byte for byte.
	c2, err := system.OpenCRMWith(t.Context(), path, system.CRMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ts2 := serve(t, c2, time.Hour)
	after := post(t, ts2.URL, `"harbor:create-followup:v1:case-104"`, payload)
	if after.status != http.StatusCreated || after.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(after.body, first.body) {
		t.Fatalf("after a restart: %d %v %q", after.status, after.header, after.body)
	}
	// Another payload under the key: 422, nothing changes.
	conflict := post(t, ts2.URL, `"harbor:create-followup:v1:case-104"`, `{"case_id":"case-104"}`)
	if conflict.status != http.StatusUnprocessableEntity || conflict.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("conflict: %d %v %s", conflict.status, conflict.header, conflict.body)
	}
	if got := tasks(t, c2); len(got) != 1 || got[0].Payload != payload {
		t.Fatalf("tasks %+v", got)
	}
}

func TestServerRefusals(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{})
	ts := serve(t, c, 0)
	long := strings.Repeat("k", crm.MaxKeyLength)
	tests := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		allow                    string
	}{
		{"no key", "POST", "/tasks", `{}`, []string{"Content-Type", "application/json"}, 400, ""},
		{"unquoted key", "POST", "/tasks", `{}`, []string{"Idempotency-Key", "abc", "Content-Type", "application/json"}, 400, ""},
		{"bad escape", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a\b"`, "Content-Type", "application/json"}, 400, ""},
		{"empty key", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `""`, "Content-Type", "application/json"}, 400, ""},
		{"key too long", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"` + long + `k"`, "Content-Type", "application/json"}, 400, ""},
		{"key with parameters", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a";x=1`, "Content-Type", "application/json"}, 400, ""},
		{"two keys", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a"`, "Idempotency-Key", `"b"`, "Content-Type", "application/json"}, 400, ""},
		{"malformed JSON", "POST", "/tasks", `{"a":`, []string{"Idempotency-Key", `"a"`, "Content-Type", "application/json"}, 400, ""},
		{"empty body", "POST", "/tasks", ``, []string{"Idempotency-Key", `"a"`, "Content-Type", "application/json"}, 400, ""},
		{"invalid UTF-8", "POST", "/tasks", "\"\xff\"", []string{"Idempotency-Key", `"a"`, "Content-Type", "application/json"}, 400, ""},
		{"not JSON", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a"`, "Content-Type", "text/plain"}, 415, ""},
		{"another JSON media type", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a"`, "Content-Type", "application/problem+json"}, 415, ""},
		{"JSON as text", "POST", "/tasks", `{}`, []string{"Idempotency-Key", `"a"`, "Content-Type", "text/json"}, 415, ""},
		{"too large", "POST", "/tasks", `"` + strings.Repeat("x", crm.MaxBodyBytes) + `"`, []string{"Idempotency-Key", `"a"`, "Content-Type", "application/json"}, 413, ""},
		{"unknown path", "GET", "/nothing", ``, nil, 404, ""},
		{"unknown task", "GET", "/tasks/7", ``, nil, 404, ""},
		{"task id not a number", "GET", "/tasks/x", ``, nil, 404, ""},
		{"no key to look up", "GET", "/tasks", ``, nil, 400, ""},
		{"delete tasks", "DELETE", "/tasks", ``, nil, 405, "GET, POST"},
		{"post a task", "POST", "/tasks/1", `{}`, nil, 405, "GET"},
		{"put the contract", "PUT", "/contract", `{}`, nil, 405, "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, tt.method, ts.URL+tt.path, tt.body, tt.header...)
			if got.status != tt.status || got.header.Get("Allow") != tt.allow {
				t.Fatalf("%d Allow %q, want %d %q: %s", got.status, got.header.Get("Allow"), tt.status, tt.allow, got.body)
			}
			var p struct {
				Status int `json:"status"`
			}
			if got.header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(got.body, &p) != nil || p.Status != tt.status {
				t.Errorf("not a problem+json of %d: %v %s", tt.status, got.header, got.body)
			}
			if got.header.Get("Idempotency-Retention") != "0" {
				t.Errorf("Idempotency-Retention %q", got.header.Get("Idempotency-Retention"))
			}
		})
	}
	if got := tasks(t, c); len(got) != 0 {
		t.Fatalf("a refusal stored %+v", got)
	}
	// The key a 400 named is not remembered: it still creates.
	if got := post(t, ts.URL, `"a"`, `{}`); got.status != http.StatusCreated {
		t.Fatalf("after refusals: %d %s", got.status, got.body)
	}
}

func TestServerReads(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: 2 * time.Hour})
	ts := serve(t, c, time.Hour)
	created := post(t, ts.URL, `"k:\"1\""`, `{"n":1}`)
	if created.status != http.StatusCreated {
		t.Fatalf("%d %s", created.status, created.body)
	}
	if got := do(t, "GET", ts.URL+"/tasks/1", ""); got.status != 200 || !bytes.Equal(got.body, created.body) {
		t.Errorf("GET /tasks/1: %d %s", got.status, got.body)
	}
	want := `{"tasks":[{"id":1,"key":"k:\"1\"","payload":{"n":1}}]}` + "\n"
	if got := do(t, "GET", ts.URL+`/tasks?key=k:"1"`, ""); got.status != 200 || string(got.body) != want {
		t.Errorf("GET /tasks?key: %d %s", got.status, got.body)
	}
	if got := do(t, "GET", ts.URL+"/tasks?key=other", ""); got.status != 200 || string(got.body) != `{"tasks":[]}`+"\n" {
		t.Errorf("GET /tasks?key=other: %d %s", got.status, got.body)
	}
	got := do(t, "GET", ts.URL+"/contract", "")
	var contract crm.Contract
	if got.status != 200 || json.Unmarshal(got.body, &contract) != nil || contract.RetentionSeconds != 3600 || contract.MaxBodyBytes != crm.MaxBodyBytes {
		t.Errorf("GET /contract: %d %s", got.status, got.body)
	}
}

func TestNewServerRefuses(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: time.Hour})
	for _, r := range []time.Duration{-time.Second, time.Millisecond, 0, 2 * time.Hour} {
		if _, err := crm.NewServer(c, r); err == nil {
			t.Errorf("NewServer with retention %v on a CRM that keeps keys an hour: no error", r)
		}
	}
	if _, err := crm.NewServer(nil, 0); err == nil {
		t.Error("NewServer(nil): no error")
	}
}

func TestServerOneKeyConcurrently(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{})
	ts := serve(t, c, 0)
	const n = 20
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = post(t, ts.URL, `"same"`, `{"x":1}`) })
	}
	wg.Wait()
	created := 0
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && a.header.Get("Idempotent-Replayed") == "":
			created++
		case a.status == http.StatusCreated, a.status == http.StatusConflict:
		default:
			t.Errorf("answer %d: %s", a.status, a.body)
		}
	}
	if created != 1 {
		t.Errorf("%d answers say created, want 1", created)
	}
	if got := tasks(t, c); len(got) != 1 {
		t.Fatalf("%d tasks, want 1", len(got))
	}
}

// TestServerKeyInFlight holds a create inside the CRM's transaction (its
// clock waits there) and sends the same key again meanwhile: the second
// request is answered 409 at once, as a problem, and writes nothing; once
// the first is answered, the key replays.
func TestServerKeyInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	c, _ := openCRM(t, system.CRMOptions{Now: func() time.Time {
		if hold.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return time.Now()
	}})
	ts := serve(t, c, 0)
	hold.Store(true)
	first := make(chan answer, 1)
	go func() { first <- post(t, ts.URL, `"k"`, `{"n":1}`) }()
	<-entered
	// Without the server's guard the second request would wait for the
	// first's transaction, which waits for this test: the client gives up.
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/tasks", strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", `"k"`)
	req.Header.Set("Content-Type", "application/json")
	second, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	close(release)
	if err != nil {
		t.Fatalf("the same key while the first is in flight: %v; want 409 at once", err)
	}
	second.Body.Close()
	if second.StatusCode != http.StatusConflict || second.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("the same key while the first is in flight: %s %v; want 409, a problem", second.Status, second.Header)
	}
	if a := <-first; a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the first: %d %v %s; want 201, new", a.status, a.header, a.body)
	}
	if again := post(t, ts.URL, `"k"`, `{"n":1}`); again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same key once the first was answered: %d %v %s; want 201, replayed", again.status, again.header, again.body)
	}
	if got := tasks(t, c); len(got) != 1 {
		t.Errorf("%d tasks, want 1", len(got))
	}
}

// TestServerAfterTheCRMForgetsAKey: once the CRM has forgotten a key (its
// retention passed), the same key and payload make a new task, and the
// server answers it as new, not with the response it still holds for the
// forgotten task.
func TestServerAfterTheCRMForgetsAKey(t *testing.T) {
	var ahead atomic.Int64 // how far the CRM's clock runs ahead of the wall clock
	c, _ := openCRM(t, system.CRMOptions{Retention: time.Minute, Now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }})
	ts := serve(t, c, time.Minute)
	if first := post(t, ts.URL, `"k"`, `{"n":1}`); first.status != http.StatusCreated || first.header.Get("Location") != "/tasks/1" {
		t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
	}
	ahead.Store(int64(time.Minute))
	again := post(t, ts.URL, `"k"`, `{"n":1}`)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "" || again.header.Get("Location") != "/tasks/2" {
		t.Fatalf("after the CRM forgot the key: %d %v %s; want 201 task 2, not replayed", again.status, again.header, again.body)
	}
}

func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"a\\"`, `"`, `""`, `abc`, `"a\b"`, ` "x" `, `"x";p`, `"é"`, "\"a\x7fb\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := crm.ParseIdempotencyKey(v)
		if err != nil {
			return
		}
		if key == "" || len(key) > crm.MaxKeyLength {
			t.Fatalf("%q parsed to %q", v, key)
		}
		enc, err := crm.FormatIdempotencyKey(key)
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not format: %v", v, key, err)
		}
		back, err := crm.ParseIdempotencyKey(enc)
		if err != nil || back != key {
			t.Fatalf("%q → %q → %q → %q, %v", v, key, enc, back, err)
		}
	})
}

// lossy is a receiver whose first answer is lost after the receiver
// acted.
type lossy struct {
	system.Receiver
	lost atomic.Bool
}

func (l *lossy) CreateTask(ctx context.Context, key, payload string) (int64, error) {
	id, err := l.Receiver.CreateTask(ctx, key, payload)
	if err == nil && l.lost.CompareAndSwap(false, true) {
		return 0, fmt.Errorf("%w: the reply was lost", system.ErrTransient)
	}
	return id, err
}

// TestSenderSaysAReplay: over HTTP, the send after a lost reply gets the
// task back with Idempotent-Replayed, and the row's history says the
// send was a replay.
func TestSenderSaysAReplay(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{})
	ts := serve(t, c, 0)
	s, err := crm.NewSender(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{NoBackoff: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	key, err := app.RecordApproval(t.Context(), "case-1", "Call back")
	if err != nil {
		t.Fatal(err)
	}
	r := &lossy{Receiver: s}
	for range 2 {
		if _, err := app.DeliverOne(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	events, err := app.History(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if last := events[len(events)-1]; last.Action != system.EventSent || !strings.Contains(last.Reason, "a replay") {
		t.Errorf("the last event: %+v, want the send recorded as a replay", last)
	}
}

// TestIdempotencyKeyEdges: only spaces may stand around the quoted
// string (RFC 8941 §4.2 discards leading and trailing SP, and nothing
// else); a key of printable ASCII is quoted with " and \ escaped, and a
// key with any other byte (a control character, DEL, non-ASCII), or an
// empty one, cannot be sent. want "" is ErrBadKey.
func TestIdempotencyKeyEdges(t *testing.T) {
	for _, tt := range []struct {
		name     string
		code     func(string) (string, error)
		in, want string
	}{
		{"parse", crm.ParseIdempotencyKey, `"x"`, "x"},
		{"parse", crm.ParseIdempotencyKey, `  "x"  `, "x"},
		{"parse", crm.ParseIdempotencyKey, "\t\"x\"", ""},
		{"parse", crm.ParseIdempotencyKey, "\"x\"\t", ""},
		{"parse", crm.ParseIdempotencyKey, "\u00a0\"x\"", ""},
		{"parse", crm.ParseIdempotencyKey, "\"x\"\n", ""},
		{"format", crm.FormatIdempotencyKey, "k", `"k"`},
		{"format", crm.FormatIdempotencyKey, ` ~`, `" ~"`},
		{"format", crm.FormatIdempotencyKey, `a"b\c`, `"a\"b\\c"`},
		{"format", crm.FormatIdempotencyKey, "", ""},
		{"format", crm.FormatIdempotencyKey, "a\x7fb", ""},
		{"format", crm.FormatIdempotencyKey, "a\x1fb", ""},
		{"format", crm.FormatIdempotencyKey, "caf\u00e9", ""},
	} {
		got, err := tt.code(tt.in)
		if tt.want == "" && !errors.Is(err, crm.ErrBadKey) || tt.want != "" && (err != nil || got != tt.want) {
			t.Errorf("%s %q = %q, %v; want %q", tt.name, tt.in, got, err, tt.want)
		}
	}
}

// TestServerStatesWholeSeconds: a retention that is not whole seconds is
// stated rounded down, never longer than the server keeps keys.
func TestServerStatesWholeSeconds(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: time.Hour})
	ts := serve(t, c, 1999*time.Millisecond)
	if got := do(t, "GET", ts.URL+"/contract", "").header.Get("Idempotency-Retention"); got != "1" {
		t.Errorf("Idempotency-Retention %q for 1.999 s, want 1", got)
	}
}

// TestServerTakesTheLargestBody: a body of exactly MaxBodyBytes is taken;
// one byte more is 413.
func TestServerTakesTheLargestBody(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{})
	ts := serve(t, c, 0)
	largest := `"` + strings.Repeat("x", crm.MaxBodyBytes-2) + `"`
	if got := post(t, ts.URL, `"largest"`, largest); got.status != http.StatusCreated {
		t.Errorf("a body of %d bytes: %d %s; want 201", len(largest), got.status, got.body)
	}
	if got := post(t, ts.URL, `"over"`, largest+" "); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: %d; want 413", len(largest)+1, got.status)
	}
}
