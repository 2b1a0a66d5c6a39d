package trial

import (
	"strings"
	"testing"
)

// TestLineTracker: the tracker copies what it is written, keeps the first
// and the last complete line whatever the writes cut them into, and
// counts the delivery log lines only.
func TestLineTracker(t *testing.T) {
	var copied strings.Builder
	lt := newLineTracker(&copied)
	if lt.last() != "(nothing)" {
		t.Errorf("no line yet: last is %q", lt.last())
	}
	out := "time=1 level=INFO msg=\"worker started\" worker=w:1\n" +
		"time=2 level=INFO msg=delivery worker=w:1 result=sent\n" +
		"time=3 level=WARN msg=delivery worker=w:1 result=pending\n" +
		"time=4 level=INFO msg=\"worker stopped\" worker=w:1\n" +
		"time=5 partial"
	for _, part := range []string{out[:10], out[10:70], out[70:71], out[71:]} {
		if _, err := lt.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	first, deliveries, _ := lt.state()
	if copied.String() != out || first != `time=1 level=INFO msg="worker started" worker=w:1` || deliveries != 2 || lt.count() != 2 ||
		lt.last() != `time=4 level=INFO msg="worker stopped" worker=w:1` {
		t.Errorf("got copy %q, first %q, %d deliveries, last %q", copied.String(), first, deliveries, lt.last())
	}
}

// TestLogLineKind names log lines as the summary counts them.
func TestLogLineKind(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tt := range []struct{ line, want string }{
		{"time=2 level=INFO msg=delivery worker=w:1 key=k result=sent attempt=1", "delivery result=sent"},
		{`time=1 level=INFO msg="worker started" worker=w:1 released_leases=0`, "worker started"},
		{`{"time":"x","level":"INFO","msg":"delivery"}`, `{"time":"x","level":"INFO","msg":"delivery"}`},
		{long, long[:60] + "…"},
	} {
		if got := logLineKind(tt.line); got != tt.want {
			t.Errorf("logLineKind(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
