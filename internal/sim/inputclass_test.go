package sim

import (
	"slices"
	"strings"
	"testing"
)

// TestClassifyTitle: each edge of the spec's title rules is told apart, so
// that TestReach, which asks for every class, sees a generator that stops
// drawing one: white space at each end, kept controls and invisibles, and
// lengths counted in code points of more than one byte.
func TestClassifyTitle(t *testing.T) {
	long := func(r string, n int) string { return strings.Repeat(r, n) }
	tests := []struct {
		title string
		want  []InputClass
	}{
		{"", []InputClass{TitleEmpty}},
		{" \t", []InputClass{TitleOnlyASCIISpace}},
		{" \u3000", []InputClass{TitleOnlyOtherSpace}},
		{"bad \xff", []InputClass{TitleInvalidUTF8}},
		{" Call", []InputClass{TitleTrimASCIIStart}},
		{"Call\n", []InputClass{TitleTrimASCIIEnd}},
		{"\u00a0 Call", []InputClass{TitleTrimOtherStart}},
		{"Call \u2029", []InputClass{TitleTrimOtherEnd}},
		{"Call\u0085back", []InputClass{TitleInnerSpace}},
		{"Call\x00back", []InputClass{TitleNUL}},
		{"Call\x1bback", []InputClass{TitleControl}},
		{"Call\x7fback", []InputClass{TitleDEL}},
		{"Call\u009bback", []InputClass{TitleC1Control, TitleNonASCII}},
		{"Call\x1dback", []InputClass{TitleSeparator}},
		{"\u200bCall", []InputClass{TitleZeroWidthSpace, TitleInvisibleEnd, TitleNonASCII}},
		{"Call\ufeff", []InputClass{TitleByteOrderMark, TitleInvisibleEnd, TitleNonASCII}},
		{"😀", []InputClass{TitleNonASCII, TitleAstral}},
		{`"C:\"`, []InputClass{TitleJSONEscape}},
		{"a\u2028b", []InputClass{TitleInnerSpace, TitleHTMLOrLineSep}},
		{long("é", 160), []InputClass{TitleNonASCII, Title160}},
		{" " + long("é", 160), []InputClass{TitleTrimASCIIStart, TitleNonASCII, Title160, Title160Trimmed}},
		{long("é", 161), []InputClass{TitleNonASCII, Title161}},
		{long("a", 161), nil},
	}
	for _, tt := range tests {
		if got := classifyTitle(tt.title); !slices.Equal(got, tt.want) {
			t.Errorf("classifyTitle(%q) = %q, want %q", tt.title, got, tt.want)
		}
	}
}
