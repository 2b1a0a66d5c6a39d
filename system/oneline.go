package system

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// OneLine is s with every character that is not printable (as
// strconv.IsPrint says: control and format characters, U+0085, the line
// and paragraph separators, every space but ' ') escaped as %q escapes
// it, \u2028 say, so that text read from a database (a payload, a key, a
// title) prints on one line of a terminal or a log and shows what is
// there. Below U+0080 too it writes \u00XX, as JSON does (%q writes \t,
// \x7f), so that a JSON payload printed through it is still JSON, and the
// same value; an invalid UTF-8 byte shows as \xff.
func OneLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		}
		i += size
	}
	return b.String()
}
