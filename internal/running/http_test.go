package running

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/outboxlab/handoff/crm"
	"github.com/outboxlab/handoff/system"
)

// TestHTTPReceiver: the receiver over HTTP answers as the spec's HTTP
// receiver does, each drawn answer as its status class, and crm.Sender
// maps each to the outcome the spec's table says.
func TestHTTPReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Schedule{Answers: []AnswerRule{{N: 2, Answer: LostReply}, {N: 4, Answer: Throttled503, Wait: 1500 * time.Millisecond},
			{N: 5, Answer: Throttled429, Wait: 3 * time.Second}, {N: 6, Answer: InFlight}, {N: 7, Answer: FailedAfterActing}, {N: 8, Answer: Refused},
			{N: 9, Answer: KeyConflict}, {N: 10, Answer: LateReply}}}
		rec := newReceiver(s, time.Now())
		rec.approved("case-1", k1, p1)
		p := newProcess(&watchdog{}, 1, 1, rec)
		client := p.HTTPClient("w")
		sender, err := crm.NewSender(ReceiverURL, client)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i, tc := range []struct {
			want   error // nil: the task
			hint   time.Duration
			detail string
		}{
			{nil, 0, "created"},
			{system.ErrTransient, 0, "lost reply"},
			{nil, 0, "replayed"},
			{system.ErrTransient, 2 * time.Second, "503"},
			{system.ErrTransient, 3 * time.Second, "429"},
			{system.ErrTransient, 0, "409"},
			{system.ErrTransient, 0, "500"},
			{system.ErrRejected, 0, "400"},
			{system.ErrKeyConflict, 0, "422"},
			{system.ErrTransient, 0, "slow"},
		} {
			send, cancel := context.WithTimeout(ctx, 10*time.Second)
			id, err := sender.CreateTask(send, k1, p1)
			cancel()
			var hint *system.RetryHint
			switch {
			case tc.want == nil && (err != nil || id != 1):
				t.Errorf("request %d (%s): %d, %v; want task 1", i+1, tc.detail, id, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("request %d (%s): %v, want %v", i+1, tc.detail, err, tc.want)
			case tc.hint > 0 && (!errors.As(err, &hint) || hint.After != tc.hint):
				t.Errorf("request %d (%s): %v, want a retry hint of %s", i+1, tc.detail, err, tc.hint)
			}
		}
		if got := len(rec.snapshot().tasks); got != 1 {
			t.Errorf("%d tasks after ten requests for one key, want 1", got)
		}
		post := func(key, body string) *http.Response {
			req, _ := http.NewRequest(http.MethodPost, ReceiverURL+"/tasks", strings.NewReader(body))
			if key != "" {
				req.Header.Set("Idempotency-Key", key)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		if resp := post(`"`+k1+`"`, p1); resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || resp.Header.Get("Location") != "/tasks/1" {
			t.Errorf("a replay: %s %v, want 201 replayed at /tasks/1", resp.Status, resp.Header)
		}
		if resp := post("", p1); resp.StatusCode != http.StatusCreated || len(rec.snapshot().tasks) != 2 || rec.snapshot().tasks[1].Key != k1 {
			t.Errorf("no Idempotency-Key: %s, tasks %v; want a second task for %s", resp.Status, rec.snapshot().tasks, k1)
		}
		for _, tc := range []struct {
			key, body string
			status    int
		}{
			{"not-a-structured-string", p1, http.StatusBadRequest},
			{`"` + k1 + `"`, "{not json", http.StatusBadRequest},
			{`"` + k1 + `"`, `"` + strings.Repeat("x", crm.MaxBodyBytes) + `"`, http.StatusRequestEntityTooLarge},
		} {
			if resp := post(tc.key, tc.body); resp.StatusCode != tc.status {
				t.Errorf("key %.20q, body %.20q: %s, want %d", tc.key, tc.body, resp.Status, tc.status)
			}
		}
		if q := rec.Requests(); !q[len(q)-1].refusal() || q[len(q)-1].Case != "case-1" || q[len(q)-1].Key != k1 {
			t.Errorf("a malformed request is not recorded as case-1's, refused for good: %+v", q[len(q)-1])
		}
		tasks := len(rec.snapshot().tasks)
		req, _ := http.NewRequest(http.MethodPost, ReceiverURL+"/tasks", strings.NewReader(p1))
		req.Header.Add("Idempotency-Key", `"`+k1+`"`)
		req.Header.Add("Idempotency-Key", `"`+k2+`"`)
		if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest || len(rec.snapshot().tasks) != tasks {
			t.Errorf("two Idempotency-Key headers: %v %v, %d tasks; want 400 and no task", resp, err, len(rec.snapshot().tasks))
		}
		for path, status := range map[string]int{"/contract": http.StatusOK, "/other": http.StatusNotFound, "/tasks": http.StatusMethodNotAllowed} {
			resp, err := client.Get(ReceiverURL + path)
			if err != nil || resp.StatusCode != status {
				t.Errorf("GET %s: %v %v, want %d", path, resp, err, status)
			}
		}
		if resp, err := client.Get(ReceiverURL + "/tasks"); err != nil || resp.Header.Get("Allow") != "POST" {
			t.Errorf("GET /tasks: %v %v, want Allow: POST", resp, err)
		}
		if r, err := sender.Contract(ctx); err != nil || r != 0 {
			t.Errorf("the contract: %v %v, want a retention of 0 (forever)", r, err)
		}
	})
}

// TestLastingFaultOfAKeylessRequest: a request without Idempotency-Key
// is its case's by its payload, so its key's lasting fault acts on it;
// a key down for good still pauses a held worker first.
func TestLastingFaultOfAKeylessRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Schedule{Keys: []KeyRule{{Case: "case-1", Fault: RefuseKey400}, {Case: "case-2", Fault: DownKey}},
			Answers: []AnswerRule{{N: 2, Answer: Paused, Wait: time.Minute}}}
		rec := newReceiver(s, time.Now())
		p := newProcess(&watchdog{}, 1, 1, rec)
		req, _ := http.NewRequest(http.MethodPost, ReceiverURL+"/tasks", strings.NewReader(p1))
		resp, err := p.HTTPClient("").Do(req)
		if err != nil || resp.StatusCode != http.StatusBadRequest || len(rec.snapshot().tasks) != 0 {
			t.Errorf("a keyless request of a key refused for good: %v %v, %d tasks; want 400 and none", resp, err, len(rec.snapshot().tasks))
		}
		start := time.Now()
		if _, err := rec.create(context.Background(), p, "", k2, p2); !errors.Is(err, system.ErrTransient) || time.Since(start) != time.Minute {
			t.Errorf("a held request of a key down for good: %v after %v, want a transient failure after the hold of 1m", err, time.Since(start))
		}
	})
}

// TestHTTPMalformedRequest: a malformed request meets the receiver as
// any other does before it is refused: in an outage, for a key down for
// good, or from a crashed process it gets no answer and is no refusal
// for good that H7 or H8 could lean on; a drawn pause holds it; once it
// reaches the receiver it is case-1's refusal for good.
func TestHTTPMalformedRequest(t *testing.T) {
	outage := Schedule{Events: []Event{{Kind: Outage, At: 0, For: time.Minute}}}
	for _, tt := range []struct {
		name     string
		s        Schedule
		crash    bool
		wait     time.Duration // before the request
		held     time.Duration // how long it waits for its answer
		answered bool
		check    func(Request) bool
	}{
		{"in an outage", outage, false, 0, 0, false, func(q Request) bool { return !q.Reached && q.Answer == Down && !q.neverLeft }},
		{"for a key down for good", Schedule{Keys: []KeyRule{{Case: "case-1", Fault: DownKey}}}, false, 0, 0, false,
			func(q Request) bool { return !q.Reached && q.Answer == Down && !q.neverLeft }},
		{"from a crashed process", Schedule{}, true, 0, 0, false, func(q Request) bool { return !q.Reached && q.neverLeft }},
		{"held by a pause", Schedule{Answers: []AnswerRule{{N: 1, Answer: Paused, Wait: 40 * time.Second}}}, false, 0, 40 * time.Second, true,
			func(q Request) bool { return q.refusal() && q.Case == "case-1" }},
		{"after the outage", outage, false, 2 * time.Minute, 0, true, func(q Request) bool { return q.refusal() && q.Case == "case-1" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newReceiver(tt.s, time.Now())
				rec.approved("case-1", k1, p1)
				p := newProcess(&watchdog{}, 1, 1, rec)
				if tt.crash {
					p.crash()
				}
				time.Sleep(tt.wait)
				req, _ := http.NewRequest(http.MethodPost, ReceiverURL+"/tasks", strings.NewReader("{not json"))
				req.Header.Set("Idempotency-Key", `"`+k1+`"`)
				start := time.Now()
				resp, err := p.HTTPClient("w").Do(req)
				if err == nil {
					resp.Body.Close()
				}
				if answered := err == nil && resp.StatusCode == http.StatusBadRequest; answered != tt.answered || time.Since(start) != tt.held {
					t.Errorf("%s: %v, %v after %v; want a 400 %v after %v", tt.name, resp, err, time.Since(start), tt.answered, tt.held)
				}
				if q := rec.Requests(); len(q) != 1 || !tt.check(q[0]) {
					t.Errorf("%s: recorded %+v", tt.name, q)
				}
			})
		})
	}
}

// TestKeylessThenKeyed: a request without an Idempotency-Key creates a
// task no replay finds; the same key's keyed request after it creates a
// second task, which the next keyed request replays.
func TestKeylessThenKeyed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newReceiver(Schedule{}, time.Now())
		rec.approved("case-1", k1, p1)
		client := newProcess(&watchdog{}, 1, 1, rec).HTTPClient("w")
		post := func(key string) *http.Response {
			req, _ := http.NewRequest(http.MethodPost, ReceiverURL+"/tasks", strings.NewReader(p1))
			if key != "" {
				req.Header.Set("Idempotency-Key", `"`+key+`"`)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		for i, tc := range []struct {
			key      string
			location string
			replayed bool
		}{{"", "/tasks/1", false}, {k1, "/tasks/2", false}, {k1, "/tasks/2", true}} {
			resp := post(tc.key)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Location") != tc.location || (resp.Header.Get("Idempotent-Replayed") == "true") != tc.replayed {
				t.Errorf("request %d (key %q): %s at %s, replayed %q; want 201 at %s, replayed %v", i+1, tc.key, resp.Status, resp.Header.Get("Location"), resp.Header.Get("Idempotent-Replayed"), tc.location, tc.replayed)
			}
		}
	})
}
