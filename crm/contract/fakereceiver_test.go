package contract_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outboxlab/handoff/crm"
)

// flaw is one way a receiver breaks the spec's contract, as real ones do.
type flaw int

const (
	keepsContract flaw = iota
	// taskPerRequest ignores the key: every POST creates a task.
	taskPerRequest
	// ignoresPayload answers a known key with its task whatever payload
	// the request carries.
	ignoresPayload
	// foldsPayload compares a known key's payload with the request's
	// without regard to letter case.
	foldsPayload
	// answersBeforeCommit creates the task, answers 201, and only then
	// stores the key, under the request's context: when the client hangs
	// up first the key is lost, and a replay makes a second task.
	answersBeforeCommit
	// omitsRetention states no Idempotency-Retention header on its
	// answers to POST.
	omitsRetention
	// contractDisagrees states one retention in the header and another at
	// GET /contract.
	contractDisagrees
	// checkThenCreate looks the key up and creates the task in two steps,
	// with no guard for a key in flight.
	checkThenCreate
	// acceptsRawKey takes an unquoted Idempotency-Key as the key.
	acceptsRawKey
	// createsWithoutKey creates a task for a POST without a key.
	createsWithoutKey
	// unmarkedReplay replays a stored answer without Idempotent-Replayed.
	unmarkedReplay
	// reformatsReplay replays the stored task as JSON written anew: the
	// same values, not the same bytes.
	reformatsReplay
	// keepsRefused reads the key leniently (quotes or none) and creates
	// the task before it finds the key malformed and answers 400.
	keepsRefused
)

// commitDelay is how long answersBeforeCommit takes to store a key after
// its answer, and how long checkThenCreate takes between its two steps.
const commitDelay = 100 * time.Millisecond

// fakeReceiver is a small in-memory receiver that keeps the spec's contract
// but for its flaw.
type fakeReceiver struct {
	flaw flaw

	mu       sync.Mutex
	tasks    []fakeTask
	keys     map[string]int // key to index in tasks
	inFlight map[string]bool
}

// fakeTask is a task of fakeReceiver.
type fakeTask struct {
	key, payload string
	body         []byte // the answer to its create
}

// newFakeReceiver returns a receiver with flaw f.
func newFakeReceiver(f flaw) *fakeReceiver {
	return &fakeReceiver{flaw: f, keys: map[string]int{}, inFlight: map[string]bool{}}
}

// ServeHTTP routes POST and GET /tasks, GET /tasks/{id} and GET /contract.
func (f *fakeReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.flaw != omitsRetention || r.Method != http.MethodPost {
		w.Header().Set("Idempotency-Retention", "3600")
	}
	switch {
	case r.URL.Path == "/contract" && r.Method == http.MethodGet:
		seconds := 3600
		if f.flaw == contractDisagrees {
			seconds = 0
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"idempotency_retention_seconds":%d}`, seconds)
	case r.URL.Path == "/tasks" && r.Method == http.MethodPost:
		f.create(w, r)
	case r.URL.Path == "/tasks" && r.Method == http.MethodGet:
		f.mu.Lock()
		var found []json.RawMessage
		for _, t := range f.tasks {
			if t.key == r.URL.Query().Get("key") {
				found = append(found, t.body)
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"tasks": append([]json.RawMessage{}, found...)})
	case strings.HasPrefix(r.URL.Path, "/tasks/") && r.Method == http.MethodGet:
		id, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/tasks/"))
		f.mu.Lock()
		defer f.mu.Unlock()
		if id < 1 || id > len(f.tasks) {
			fakeProblem(w, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.tasks[id-1].body)
	default:
		fakeProblem(w, http.StatusNotFound)
	}
}

// fakeProblem answers status with a problem+json body.
func fakeProblem(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d}`, status)
}

// create is POST /tasks.
func (f *fakeReceiver) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	raw := r.Header.Get("Idempotency-Key")
	key, keyErr := crm.ParseIdempotencyKey(raw)
	switch {
	case f.flaw == acceptsRawKey && raw != "" && !strings.Contains(raw, `"`):
		key, keyErr = raw, nil
	case f.flaw == createsWithoutKey && raw == "":
		key, keyErr = "", nil
	}
	if f.flaw == keepsRefused && keyErr != nil && raw != "" {
		f.mu.Lock()
		f.store(strings.Trim(raw, `"`), body)
		f.mu.Unlock()
	}
	if err != nil || keyErr != nil || !json.Valid(body) {
		fakeProblem(w, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	if f.inFlight[key] && f.flaw != checkThenCreate {
		f.mu.Unlock()
		fakeProblem(w, http.StatusConflict)
		return
	}
	if i, ok := f.keys[key]; ok && key != "" && f.flaw != taskPerRequest {
		t := f.tasks[i]
		f.mu.Unlock()
		same := t.payload == string(body) || f.flaw == foldsPayload && strings.EqualFold(t.payload, string(body))
		if !same && f.flaw != ignoresPayload {
			fakeProblem(w, http.StatusUnprocessableEntity)
			return
		}
		if f.flaw != unmarkedReplay {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		if f.flaw == reformatsReplay {
			var v any
			_ = json.Unmarshal(t.body, &v)
			t.body, _ = json.MarshalIndent(v, "", "  ")
		}
		fakeCreated(w, i+1, t.body)
		return
	}
	if f.flaw == checkThenCreate {
		f.mu.Unlock()
		time.Sleep(commitDelay)
		f.mu.Lock()
	}
	i := len(f.tasks)
	f.tasks = append(f.tasks, newFakeTask(i+1, key, body))
	if f.flaw != answersBeforeCommit {
		f.keys[key] = i
		f.mu.Unlock()
		fakeCreated(w, i+1, f.tasks[i].body)
		return
	}
	f.inFlight[key] = true
	body = f.tasks[i].body
	f.mu.Unlock()
	fakeCreated(w, i+1, body)
	http.NewResponseController(w).Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(commitDelay):
		f.mu.Lock()
		f.keys[key] = i
		f.mu.Unlock()
	}
	f.mu.Lock()
	delete(f.inFlight, key)
	f.mu.Unlock()
}

// store creates the task of key and remembers the key.
func (f *fakeReceiver) store(key string, body []byte) {
	f.keys[key] = len(f.tasks)
	f.tasks = append(f.tasks, newFakeTask(len(f.tasks)+1, key, body))
}

// newFakeTask is task id, for key and payload, with the answer to its
// create.
func newFakeTask(id int, key string, payload []byte) fakeTask {
	answer, _ := json.Marshal(map[string]any{"id": id, "key": key, "payload": json.RawMessage(payload)})
	return fakeTask{key: key, payload: string(payload), body: append(answer, '\n')}
}

// fakeCreated answers 201 with task id's body.
func fakeCreated(w http.ResponseWriter, id int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/tasks/"+strconv.Itoa(id))
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}
