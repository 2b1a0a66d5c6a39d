package crm_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// TestServerObserve: the observer hears every answer, by its result,
// creates (POST /tasks, and no other POST) apart; concurrent creates of
// one key are one created, the rest replayed or in flight.
func TestServerObserve(t *testing.T) {
	c, _ := openCRM(t, system.CRMOptions{})
	s, err := crm.NewServer(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	heard := map[crm.Result]int{}
	creates := 0
	s.Observe(func(r crm.Result, create bool, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		heard[r]++
		if create {
			creates++
		}
		if took < 0 {
			t.Errorf("a negative duration %v", took)
		}
	})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	want := map[crm.Result]int{}
	var wg sync.WaitGroup
	answers := make([]answer, 10)
	for i := range answers {
		wg.Go(func() { answers[i] = post(t, ts.URL, `"same"`, `{"x":1}`) })
	}
	wg.Wait()
	for _, a := range answers {
		switch {
		case a.status == http.StatusConflict:
			want[crm.ResultInFlight]++
		case a.header.Get("Idempotent-Replayed") == "true":
			want[crm.ResultReplayed]++
		default:
			want[crm.ResultCreated]++
		}
	}
	for _, tt := range []struct {
		method, path, body string
		h                  []string
		result             crm.Result
	}{
		{"POST", "/tasks", `{"x":2}`, []string{"Idempotency-Key", `"same"`, "Content-Type", "application/json"}, crm.ResultConflict},
		{"POST", "/tasks", `{"x":2}`, []string{"Idempotency-Key", `bare`, "Content-Type", "application/json"}, crm.ResultInvalid},
		{"POST", "/tasks", `{"x":2}`, []string{"Idempotency-Key", `"k2"`, "Content-Type", "text/plain"}, crm.ResultUnsupportedMedia},
		{"POST", "/tasks", `"` + strings.Repeat("x", crm.MaxBodyBytes) + `"`, []string{"Idempotency-Key", `"k3"`, "Content-Type", "application/json"}, crm.ResultTooLarge},
		{"GET", "/tasks/1", "", nil, crm.ResultRead},
		{"GET", "/contract", "", nil, crm.ResultRead},
		{"GET", "/tasks/99", "", nil, crm.ResultNotFound},
		{"DELETE", "/tasks", "", nil, crm.ResultMethodNotAllowed},
		{"POST", "/tasks/1", `{"x":3}`, []string{"Idempotency-Key", `"k4"`, "Content-Type", "application/json"}, crm.ResultMethodNotAllowed},
		{"POST", "/contract", "", nil, crm.ResultMethodNotAllowed},
	} {
		do(t, tt.method, ts.URL+tt.path, tt.body, tt.h...)
		want[tt.result]++
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, heard); diff != "" || want[crm.ResultCreated] != 1 {
		t.Errorf("the answers heard (-given +heard):\n%s", diff)
	}
	if creates != len(answers)+4 {
		t.Errorf("%d answers heard as creates, want %d", creates, len(answers)+4)
	}
}
