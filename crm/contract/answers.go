package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// taskBodyJSON is the body of a 201: the task created for a key.
type taskBodyJSON struct {
	ID      *int64          `json:"id"`
	Key     *string         `json:"key"`
	Payload json.RawMessage `json:"payload"`
}

// taskOf returns the id of the task a 201 answer r holds, for key and
// payload.
func taskOf(r reply, key, payload string) (int64, error) {
	if r.status != http.StatusCreated {
		return 0, fmt.Errorf("%s, want 201", describe(r, key))
	}
	t, err := parseTask(r.body, key, payload)
	if err != nil {
		return 0, fmt.Errorf("201, but %v", err)
	}
	return t, nil
}

// parseTask returns the id of the task body holds; it must be for key,
// and for payload unless payload is empty.
func parseTask(body []byte, key, payload string) (int64, error) {
	var t taskBodyJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&t); err != nil || dec.More() || t.ID == nil || *t.ID <= 0 || t.Key == nil || t.Payload == nil {
		return 0, fmt.Errorf("the body is not a task {\"id\":N,\"key\":…,\"payload\":…}: %s", excerpt(body))
	}
	if *t.Key != key {
		return 0, fmt.Errorf("task %d names key %q, not %q", *t.ID, *t.Key, key)
	}
	if payload != "" && !sameJSON(t.Payload, []byte(payload)) {
		return 0, fmt.Errorf("task %d holds payload %s, not the one sent", *t.ID, excerpt(t.Payload))
	}
	return *t.ID, nil
}

// sameJSON says whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// describe is an answer in a few words: "201 task 4 (replayed)", "422
// problem+json", "500".
func describe(r reply, key string) string {
	s := strconv.Itoa(r.status)
	if r.status == http.StatusOK || r.status == http.StatusCreated {
		if id, err := parseTask(r.body, key, ""); err == nil {
			s += " task " + strconv.FormatInt(id, 10)
		}
	}
	if isProblem(r) {
		s += " problem+json"
	}
	if replayed(r) {
		s += " (replayed)"
	}
	return s
}

// replayed says whether r is marked Idempotent-Replayed: true.
func replayed(r reply) bool { return r.header.Get("Idempotent-Replayed") == "true" }

// isProblem says whether r carries an RFC 9457 problem+json body.
func isProblem(r reply) bool {
	var p map[string]any
	return strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") && json.Unmarshal(r.body, &p) == nil
}

// excerpt is a short, quoted excerpt of an answer's body for the
// evidence: enough to recognise it, short enough for a line of the report.
func excerpt(body []byte) string {
	const most = 200
	s := strings.TrimSpace(string(body))
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strconv.Quote(s)
}
