package system_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/system"
)

// TestCaseIDMessages checks what a refused case id's message says: the
// offending character as a character at its position in characters, the
// length in characters, and the case id quoted so that no character of it
// can break a line.
func TestCaseIDMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, caseID string
		want         string // the message after "system: invalid input: "
	}{
		{"empty", "", "case id is empty"},
		{"slash", "case/104", `case id "case/104" has '/' at character 5; use ASCII letters, digits and '-'`},
		{"accent counted in characters", "éa/", `case id "éa/" has 'é' at character 1; use ASCII letters, digits and '-'`},
		{"accent after ASCII", "casé", `case id "casé" has 'é' at character 4; use ASCII letters, digits and '-'`},
		{"after a wide character", "修-x/", `case id "修-x/" has '修' at character 1; use ASCII letters, digits and '-'`},
		{"line separator escaped", "a\u2028b", `case id "a\u2028b" has '\u2028' at character 2; use ASCII letters, digits and '-'`},
		{"newline escaped", "a\nb", `case id "a\nb" has '\n' at character 2; use ASCII letters, digits and '-'`},
		{"quote escaped", `a"b`, `case id "a\"b" has '"' at character 2; use ASCII letters, digits and '-'`},
		{"invalid UTF-8 named as a byte", "ab\xffc", `case id "ab\xffc" has the invalid UTF-8 byte 0xff at character 3; use ASCII letters, digits and '-'`},
		{"replacement character itself", "a\uFFFD", "case id \"a\uFFFD\" has '\uFFFD' at character 2; use ASCII letters, digits and '-'"},
		{"81 ASCII characters", strings.Repeat("a", 81), "case id is 81 characters, more than 80"},
		{"81 characters of two bytes", strings.Repeat("é", 81), "case id is 81 characters, more than 80"},
		{"80 characters of two bytes: length passes, character refused", strings.Repeat("é", 80),
			`case id "` + strings.Repeat("é", 80) + `" has 'é' at character 1; use ASCII letters, digits and '-'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := system.NewApproval(tt.caseID, "Call back")
			if !errors.Is(err, system.ErrInvalidInput) {
				t.Fatalf("got %v, want ErrInvalidInput", err)
			}
			if got := strings.TrimPrefix(err.Error(), system.ErrInvalidInput.Error()+": "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(err.Error(), "\n\r\u2028\u2029") {
				t.Errorf("the message breaks a line: %q", err.Error())
			}
		})
	}
}

// TestConflictMessageIsOneLine: a title with a line separator must not
// break the message of a key conflict across lines.
func TestConflictMessageIsOneLine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	app, err := system.Open(ctx, filepath.Join(t.TempDir(), "app.db"), system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.RecordApproval(ctx, "c-1", "one\u2028two\u2029three\u0085four\u009bfive\x7fsix\u202esix"); err != nil {
		t.Fatal(err)
	}
	_, err = app.RecordApproval(ctx, "c-1", "other")
	unprintable := func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) }
	if !errors.Is(err, system.ErrKeyConflict) || strings.ContainsFunc(err.Error(), unprintable) || !strings.Contains(err.Error(), `one\u2028two`) || !strings.Contains(err.Error(), `four\u009bfive`) {
		t.Errorf("got %q, want a key conflict on one line with the separators, controls and format characters escaped", err)
	}
}
