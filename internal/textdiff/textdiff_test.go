package textdiff

import "testing"

func TestLines(t *testing.T) {
	tests := []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb", "a\nb", ""},
		{"one line changed", "a\nb\nc", "a\nB\nc", " a\n-b\n+B\n c\n"},
		{"a line added", "a\nc", "a\nb\nc", " a\n+b\n c\n"},
		{"a line removed", "a\nb\nc", "a\nc", " a\n-b\n c\n"},
		{"from nothing", "", "a", "+a\n"},
		{"to nothing", "a", "", "-a\n"},
		{"every line", "a\nb", "c\nd", "-a\n-b\n+c\n+d\n"},
	}
	for _, tt := range tests {
		if got := Lines(tt.want, tt.got); got != tt.diff {
			t.Errorf("%s: got\n%q\nwant\n%q", tt.name, got, tt.diff)
		}
	}
}
