package crm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// checkOK fails the test unless every clause of r passed.
func checkOK(t *testing.T, r crm.Report) {
	t.Helper()
	if !r.OK() {
		for _, res := range r.Results {
			t.Errorf("%s: %s: %s", res.Clause, res.Verdict, res.Evidence)
		}
	}
}

// TestCheckReceiverAgainstServer runs the check against Server on a real
// socket and a real CRM file, twice: every clause passes both times (the
// second run's keys are new), every task the runs left is under a key of
// the checker's, and an expected retention other than the stated one
// fails the retention clause alone.
func TestCheckReceiverAgainstServer(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{Retention: time.Hour})
	ts := serve(t, c, time.Hour)
	hour, twoHours := time.Hour, 2*time.Hour
	first, err := crm.CheckReceiver(t.Context(), ts.URL, crm.CheckOptions{Retention: &hour})
	if err != nil {
		t.Fatal(err)
	}
	checkOK(t, first)
	var got []crm.Clause
	for _, res := range first.Results {
		got = append(got, res.Clause)
	}
	if !slices.Equal(got, crm.Clauses()) {
		t.Errorf("clauses reported %v, want %v", got, crm.Clauses())
	}
	if first.Retention == nil || *first.Retention != time.Hour {
		t.Errorf("the report's retention: got %v, want 1h", first.Retention)
	}
	second, err := crm.CheckReceiver(t.Context(), ts.URL, crm.CheckOptions{Retention: &twoHours})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := second.Failed(), []crm.Clause{crm.ClauseRetention}; !slices.Equal(got, want) {
		t.Errorf("expecting 2h of a receiver that states 1h: failed %v, want %v", got, want)
	}
	if first.RunID == second.RunID || first.KeyPrefix == second.KeyPrefix {
		t.Errorf("two runs share run id %q / key prefix %q", first.RunID, first.KeyPrefix)
	}
	for _, task := range tasks(t, c) {
		if !strings.HasPrefix(task.Key, first.KeyPrefix) && !strings.HasPrefix(task.Key, second.KeyPrefix) {
			t.Errorf("task %d has key %q, not one of the runs' (%s…, %s…)", task.ID, task.Key, first.KeyPrefix, second.KeyPrefix)
		}
	}
	if !strings.HasPrefix(first.KeyPrefix, "handoff-check:") || !strings.Contains(first.KeyPrefix, first.RunID) {
		t.Errorf("key prefix %q does not say whose keys they are", first.KeyPrefix)
	}
}

func TestCheckReceiverRefusesURLs(t *testing.T) {
	for _, u := range []string{"ftp://crm.example", "crm.example:8080", "http://", "http://user@crm.example", "http://crm.example?x=1", "::"} {
		if _, err := crm.CheckReceiver(t.Context(), u, crm.CheckOptions{}); !errors.Is(err, crm.ErrBadURL) {
			t.Errorf("CheckReceiver(%q): got %v, want ErrBadURL", u, err)
		}
	}
}

// TestCheckReceiverNeedsAnAnswer: where nothing listens, no clause is
// judged: the check says nothing answers.
func TestCheckReceiverNeedsAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	if r, err := crm.CheckReceiver(t.Context(), url, crm.CheckOptions{Timeout: time.Second}); !errors.Is(err, crm.ErrUnreachable) || len(r.Results) != 0 {
		t.Errorf("CheckReceiver(%s), nothing listening: got %d clauses, %v; want ErrUnreachable and none", url, len(r.Results), err)
	}
}

func TestClauseNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range crm.Clauses() {
		name := c.String()
		if seen[name] || strings.HasPrefix(name, "clause(") {
			t.Errorf("clause %d: name %q repeated or missing", int(c), name)
		}
		seen[name] = true
	}
	if len(seen) != 10 {
		t.Errorf("%d clauses, want 10", len(seen))
	}
}

// flaw is one way a receiver breaks SPEC's contract, as real ones do.
type flaw int

const (
	keepsContract flaw = iota
	// taskPerRequest ignores the key: every POST creates a task.
	taskPerRequest
	// ignoresPayload answers a known key with its task whatever payload
	// the request carries.
	ignoresPayload
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

// fakeReceiver is a small in-memory receiver that keeps SPEC's contract
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
		if t.payload != string(body) && f.flaw != ignoresPayload {
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

// TestCheckReceiverCatchesFlaws runs the check against receivers that
// each break the contract in one way: each fails exactly the clauses its
// flaw breaks and passes every other.
func TestCheckReceiverCatchesFlaws(t *testing.T) {
	tests := []struct {
		name  string
		flaw  flaw
		fails []crm.Clause
	}{
		{"keeps the contract", keepsContract, nil},
		{"a task per request", taskPerRequest, []crm.Clause{crm.ClauseReplay, crm.ClauseReplayNewConnection, crm.ClauseOtherPayload, crm.ClauseConcurrent, crm.ClauseReplayAfterCut}},
		{"ignores the payload on replay", ignoresPayload, []crm.Clause{crm.ClauseOtherPayload}},
		{"answers 201 before it commits", answersBeforeCommit, []crm.Clause{crm.ClauseReplayAfterCut}},
		{"omits the retention header", omitsRetention, []crm.Clause{crm.ClauseRetention}},
		{"GET /contract disagrees with the header", contractDisagrees, []crm.Clause{crm.ClauseRetention}},
		{"checks, then creates", checkThenCreate, []crm.Clause{crm.ClauseConcurrent}},
		{"takes an unquoted key", acceptsRawKey, []crm.Clause{crm.ClauseMalformedKey}},
		{"creates without a key", createsWithoutKey, []crm.Clause{crm.ClauseMissingKey}},
		{"replays unmarked", unmarkedReplay, []crm.Clause{crm.ClauseReplay, crm.ClauseReplayNewConnection}},
		{"replays other bytes of the same JSON", reformatsReplay, []crm.Clause{crm.ClauseReplay, crm.ClauseReplayNewConnection, crm.ClauseOtherPayload, crm.ClauseConcurrent}},
		{"keeps a refused request", keepsRefused, []crm.Clause{crm.ClauseMalformedKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(newFakeReceiver(tt.flaw))
			defer ts.Close()
			report, err := crm.CheckReceiver(t.Context(), ts.URL, crm.CheckOptions{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			verdicts := map[crm.Clause]crm.Verdict{}
			for _, res := range report.Results {
				verdicts[res.Clause] = res.Verdict
			}
			want := map[crm.Clause]crm.Verdict{}
			for _, c := range crm.Clauses() {
				want[c] = crm.Pass
				if slices.Contains(tt.fails, c) {
					want[c] = crm.Fail
				}
			}
			if diff := cmp.Diff(want, verdicts); diff != "" {
				for _, res := range report.Results {
					t.Logf("%s: %s: %s", res.Clause, res.Verdict, res.Evidence)
				}
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if report.OK() != (len(tt.fails) == 0) {
				t.Errorf("OK() is %v with failures %v", report.OK(), report.Failed())
			}
		})
	}
}

// TestCheckReceiverInterrupted: a cancelled context ends the check with
// the context's error.
func TestCheckReceiverInterrupted(t *testing.T) {
	ts := httptest.NewServer(newFakeReceiver(keepsContract))
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := crm.CheckReceiver(ctx, ts.URL, crm.CheckOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
