package system_test

import (
	"testing"

	"github.com/outboxlab/handoff/system"
)

// TestOneLine escapes what %q escapes, in JSON's form, and nothing else.
func TestOneLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain text, ü, 🙂, \"quoted\" \\", "plain text, ü, 🙂, \"quoted\" \\"},
		{"a\nb\tc\rd", `a\u000ab\u0009c\u000dd`},
		{"a\u2028b\u2029c\u0085d", `a\u2028b\u2029c\u0085d`},
		{"\u200e\u202e\u2066", `\u200e\u202e\u2066`},
		{"a\u3000b", `a\u3000b`},
		{"\U000e0001", `\udb40\udc01`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		if got := system.OneLine(tt.in); got != tt.want {
			t.Errorf("system.OneLine(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
