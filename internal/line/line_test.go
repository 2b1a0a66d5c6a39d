package line

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	for _, l := range []Line{
		New("restart"),
		New("deliver", "fault", "lost-reply"),
		New("approve", "case", "case-104", "title", "Call about the plan"),
		New("approve", "case", "", "title", "  tab\there \"quoted\" \\ ü\u2028 "),
		New("approve", "title", "bad \xff byte", "case", "a=b#c"),
		New("approve", "at", "1m30.5s", "title", "修理計画について電話する 🔧"),
	} {
		got, err := Parse(l.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", l, err)
		}
		if diff := cmp.Diff(l, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", l, diff)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{``, `empty directive`},
		{`approve case`, `want key=value, got "case"`},
		{`approve =x`, `want key=value, got "=x"`},
		{`approve title="unclosed`, `value of title is not a closed Go string: "unclosed`},
		{`approve title="a"b`, `want a space after the value of title, got "b"`},
		{`approve case=a case=b`, `case given twice`},
	} {
		if _, err := Parse(tt.text); err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q): got %v, want %s", tt.text, err, tt.want)
		}
	}
}

func TestOnly(t *testing.T) {
	l := New("key", "case", "case-1", "fault", "offline")
	if err := l.Only("case", "fault"); err != nil {
		t.Errorf("Only(case, fault): %v", err)
	}
	if err := l.Only("case"); err == nil || err.Error() != `key takes no argument "fault" (it takes case)` {
		t.Errorf("Only(case): got %v", err)
	}
	if err := New("crash", "at", "1s").Only(); err == nil || err.Error() != `crash takes no argument "at" (it takes none)` {
		t.Errorf("Only(): got %v", err)
	}
}
