package system_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/system"
)

func TestNewApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, caseID, title string
		wantPayload         string // empty: invalid input
	}{
		{"plain", "case-104", "Call about the approved repair plan", `{"case_id":"case-104","title":"Call about the approved repair plan"}`},
		{"trimmed", "case-104", " \t Call back \n", `{"case_id":"case-104","title":"Call back"}`},
		{"non-ASCII as itself", "c", "Rappeler — réparation 修理", `{"case_id":"c","title":"Rappeler — réparation 修理"}`},
		{"line separator as itself", "c", "a\u2028b", "{\"case_id\":\"c\",\"title\":\"a\u2028b\"}"},
		{"no HTML escaping", "c", "<b> & </b>", `{"case_id":"c","title":"<b> & </b>"}`},
		{"quotes and backslash", "c", `say "hi" \ bye`, `{"case_id":"c","title":"say \"hi\" \\ bye"}`},
		{"control characters", "c", "a\tb\nc\x01d", `{"case_id":"c","title":"a\tb\nc\u0001d"}`},
		{"every short escape", "c", "a\bb\fc\rd\te\nf", `{"case_id":"c","title":"a\bb\fc\rd\te\nf"}`},
		{"lower-case hex, DEL and C1 as themselves", "c", "a\x1fb\x7fc\u0085d", "{\"case_id\":\"c\",\"title\":\"a\\u001fb\x7fc\u0085d\"}"},
		{"80-character case id", strings.Repeat("a", 80), "t", `{"case_id":"` + strings.Repeat("a", 80) + `","title":"t"}`},
		{"160 characters of two bytes", "c", strings.Repeat("é", 160), `{"case_id":"c","title":"` + strings.Repeat("é", 160) + `"}`},
		{"empty case", "", "t", ""},
		{"slash in case", "case/104", "t", ""},
		{"non-ASCII case", "café", "t", ""},
		{"space in case", "case 104", "t", ""},
		{"81-character case id", strings.Repeat("a", 81), "t", ""},
		{"empty title", "c", "", ""},
		{"blank title", "c", " \t\n ", ""},
		{"161 characters", "c", strings.Repeat("x", 161), ""},
		{"invalid UTF-8", "c", "bad \xff", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := system.NewApproval(tt.caseID, tt.title)
			if tt.wantPayload == "" {
				if !errors.Is(err, system.ErrInvalidInput) {
					t.Fatalf("got %v, want ErrInvalidInput", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Payload != tt.wantPayload {
				t.Errorf("payload: got %s, want %s", a.Payload, tt.wantPayload)
			}
			if want := system.KeyPrefix + tt.caseID; a.Key != want {
				t.Errorf("key: got %s, want %s", a.Key, want)
			}
		})
	}
}
