package model

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// KeyPrefix is the namespace, action and version of every action key.
const KeyPrefix = "harbor:create-followup:v1:"

var caseIDPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,80}$`)

// Action derives the action key and canonical payload of an approval of
// caseID with title. ok is false when the spec calls the input invalid.
func Action(caseID, title string) (a Approval, ok bool) {
	if !caseIDPattern.MatchString(caseID) || !utf8.ValidString(title) {
		return Approval{}, false
	}
	trimmed := strings.TrimFunc(title, unicode.IsSpace)
	if n := len([]rune(trimmed)); n < 1 || n > 160 {
		return Approval{}, false
	}
	return Approval{
		Key:     KeyPrefix + caseID,
		Payload: `{"case_id":` + jsonString(caseID) + `,"title":` + jsonString(trimmed) + `}`,
	}, true
}

// jsonString quotes s as JSON with the fewest escapes: quote, backslash and
// the control characters below U+0020, nothing else.
func jsonString(s string) string {
	short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if e, ok := short[r]; ok {
			b.WriteString(e)
		} else if r < 0x20 {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
