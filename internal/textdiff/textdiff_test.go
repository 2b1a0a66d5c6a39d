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

// observation is a value as the harness compares them: lists of structs.
type observation struct {
	Approvals []approval
	Outbox    []row
	Tasks     []approval
}

type approval struct{ Key, Payload string }

type row struct {
	Key      string
	Attempts int
	Fence    int64
}

// TestValues: Values writes the same bytes for the same values, one line
// per list element, keeps a change's neighbours and each list's header,
// tells nil from an empty list, and leaves out the rest.
func TestValues(t *testing.T) {
	rows := func(n int) []row {
		var rs []row
		for i := range n {
			rs = append(rs, row{Key: "k-" + string(rune('a'+i)), Attempts: 1, Fence: int64(i)})
		}
		return rs
	}
	changed := rows(8)
	changed[4].Attempts = 2
	tests := []struct {
		name      string
		want, got any
		diff      string
	}{
		{"equal", observation{Outbox: rows(2)}, observation{Outbox: rows(2)}, ""},
		{"nil and empty", observation{}, observation{Approvals: []approval{}},
			"-Approvals: nil\n+Approvals: []\n Outbox: nil\n Tasks: nil\n"},
		{"an approval added", observation{}, observation{Approvals: []approval{{"k-a", `{"title":"Call back"}`}}},
			"-Approvals: nil\n+Approvals:\n+  {Key: \"k-a\", Payload: \"{\\\"title\\\":\\\"Call back\\\"}\"}\n Outbox: nil\n Tasks: nil\n"},
		{"one row of eight changed", observation{Outbox: rows(8)}, observation{Outbox: changed},
			" Approvals: nil\n Outbox:\n   …\n   {Key: \"k-c\", Attempts: 1, Fence: 2}\n   {Key: \"k-d\", Attempts: 1, Fence: 3}\n" +
				"-  {Key: \"k-e\", Attempts: 1, Fence: 4}\n+  {Key: \"k-e\", Attempts: 2, Fence: 4}\n" +
				"   {Key: \"k-f\", Attempts: 1, Fence: 5}\n   {Key: \"k-g\", Attempts: 1, Fence: 6}\n   …\n Tasks: nil\n"},
		{"a list", []approval{{"k-a", "p"}}, []approval{{"k-a", "p"}, {"k-b", "q"}},
			" []textdiff.approval:\n   {Key: \"k-a\", Payload: \"p\"}\n+  {Key: \"k-b\", Payload: \"q\"}\n"},
	}
	for _, tt := range tests {
		if got := Values(tt.want, tt.got, 2); got != tt.diff {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.diff)
		}
	}
}
