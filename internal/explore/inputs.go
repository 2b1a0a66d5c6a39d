package explore

import (
	"strings"

	"github.com/outboxlab/handoff/internal/sim"
	"pgregory.net/rapid"
)

// The characters of the spec's "Recording an approval" that the generators
// combine into titles: white space (exactly Go's unicode.IsSpace, split
// into ASCII and the rest), the other control characters (NUL, the rest
// of C0 but U+001C-001F, DEL, and C1 but U+0085, each set as often), and
// the invisible characters that are kept and counted (U+001C-001F, U+200B
// and U+FEFF, each set as often).
var (
	exoticSpace = []rune{
		0x85, 0xA0, 0x1680,
		0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
		0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
	}
	controls = [][]rune{
		{0x00},
		{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B},
		{0x7F},
		{0x80, 0x81, 0x8D, 0x9B, 0x9F},
	}
)

// The case ids the generators draw. The valid ones are few, case-1 and
// case-2 by far the most often, so that keys collide: repeated approvals,
// conflicts, several rows at once. Between them they hold every allowed
// character class, and the longest allowed id. The invalid ones break one
// rule each; "K" with the Kelvin sign (U+212A) fools a case-folding
// pattern, a trailing newline a pattern whose $ matches before it.
var (
	longestCase  = "Case-" + strings.Repeat("0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJKLMNOPQRSTU", 2)[:75]
	validCases   = []string{"case-1", "case-2", "CASE-1", "7", "-", longestCase}
	invalidCases = []string{"", longestCase + "x", "café", "case_1", "case 1", "case/104", "case-1\n", "\u212Aase-1"}
	// caseWeights are the weights of validCases, of invalidCases and of a
	// missing case, in one choice: one in seven is invalid or missing.
	caseWeights = []int{24, 20, 4, 2, 2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}
)

// The bodies of the titles the generators draw: plain ones (the first
// shrinks to "Call back"; the second is it in other letter case, another
// action under the same key), ones a careless JSON encoder escapes (quotes,
// backslash, HTML, U+2028 and U+2029), and invalid UTF-8 (a stray byte, a
// truncated sequence, an encoded surrogate, an overlong encoding).
var (
	plainBodies = []string{"Call back", "call back", "Rappeler le client — réparation", "修理の件で電話する", "Call\u00a0back\u3000now"}
	jsonBodies  = []string{`Quote "plan" \ <b>&`, "Line\u2028separated", "</script>\u2029", `C:\temp "x"`}
	badBodies   = []string{"bad \xff byte", "truncated \xc3", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong"}
	// wideRunes are the multi-byte characters a 160 or 161 code point
	// title repeats: 2, 3 and 4 bytes (the last is two UTF-16 units).
	wideRunes = []string{"é", "修", "😀"}
)

// The kinds of title body, in the order a shrinking run prefers them.
const (
	bodyPlain = iota
	bodyJSON
	bodyControl
	bodyInvisible
	bodyLong
	bodyInvalidUTF8
	bodySpaceOnly
	bodyEmpty
	bodyMissing
)

// bodyWeights are how often each kind of body is drawn in an edge title:
// each often enough that a default exploration draws every class of
// InputClasses.
var bodyWeights = []int{bodyPlain: 4, bodyJSON: 3, bodyControl: 2, bodyInvisible: 3, bodyLong: 3,
	bodyInvalidUTF8: 1, bodySpaceOnly: 2, bodyEmpty: 1, bodyMissing: 1}

// drawCase draws a case id, or ok false for a missing one.
func drawCase(t *rapid.T) (id string, ok bool) {
	i := pick(t, "case", caseWeights...)
	if i == len(validCases)+len(invalidCases) {
		return "", false
	}
	return append(validCases[:len(validCases):len(validCases)], invalidCases...)[i], true
}

// drawTitle draws a title, or ok false for a missing one. Three in four
// are plain, without white space around them, so that equal titles still
// repeat (and a plain title costs a shrinking run few draws); the others
// are edges built from drawn parts: an optional run of leading white
// space, a body, an optional run of trailing white space, so that every
// edge character meets trimming.
func drawTitle(t *rapid.T) (title string, ok bool) {
	if pick(t, "title", 3, 1) == 0 {
		return plainBodies[pickOf(t, "plain", len(plainBodies))], true
	}
	var body string
	switch pick(t, "body", bodyWeights...) {
	case bodyPlain:
		body = plainBodies[pickOf(t, "plain", len(plainBodies))]
	case bodyJSON:
		body = jsonBodies[pickOf(t, "json", len(jsonBodies))]
	case bodyControl:
		set := controls[pickOf(t, "control set", len(controls))]
		body = "Call" + string(set[pickOf(t, "control", len(set))]) + "back"
	case bodyInvisible:
		set := sim.KeptInvisibles[pickOf(t, "invisible set", len(sim.KeptInvisibles))]
		c := string(set[pickOf(t, "invisible", len(set))])
		body = [...]string{c + "Call back", "Call back" + c, c}[pickOf(t, "where", 3)]
	case bodyLong:
		body = strings.Repeat(wideRunes[pickOf(t, "wide", len(wideRunes))], 160+pickOf(t, "over", 2))
	case bodyInvalidUTF8:
		body = badBodies[pickOf(t, "bad", len(badBodies))]
	case bodySpaceOnly:
		return drawSpace(t, "only") + drawSpaceRun(t, "trailing"), true
	case bodyEmpty:
		return "", true
	case bodyMissing:
		return "", false
	}
	return drawSpaceRun(t, "leading") + body + drawSpaceRun(t, "trailing"), true
}

// drawSpaceRun draws nothing three times in four, else a run of white
// space.
func drawSpaceRun(t *rapid.T, label string) string {
	if pick(t, label, 3, 1) == 0 {
		return ""
	}
	return drawSpace(t, label)
}

// drawSpace draws one to three white space characters, each ASCII or not
// as often.
func drawSpace(t *rapid.T, label string) string {
	var b strings.Builder
	for range 1 + pickOf(t, label+" length", 3) {
		if pick(t, label+" ascii", 1, 1) == 0 {
			b.WriteRune(sim.ASCIISpace[pickOf(t, label+" char", len(sim.ASCIISpace))])
		} else {
			b.WriteRune(exoticSpace[pickOf(t, label+" char", len(exoticSpace))])
		}
	}
	return b.String()
}
