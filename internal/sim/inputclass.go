package sim

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ASCIISpace is the ASCII white space that approvals trim, and
// KeptInvisibles the invisible characters they keep and count, in sets of
// one class each (U+001C-001F, U+200B, U+FEFF): what the spec's
// "Recording an approval" names, and the generators draw.
var (
	ASCIISpace     = []rune{'\t', '\n', '\v', '\f', '\r', ' '}
	KeptInvisibles = [][]rune{{0x1C, 0x1D, 0x1E, 0x1F}, {0x200B}, {0xFEFF}}
)

// InputClass names one class of edge input of the spec's "Recording an
// approval" that an approval step can carry.
type InputClass string

// The classes of case id.
const (
	CaseMissing  InputClass = "case: missing"
	CaseEmpty    InputClass = "case: empty"
	CaseLongest  InputClass = "case: 80 characters"
	CaseTooLong  InputClass = "case: 81 characters"
	CaseUpper    InputClass = "case: valid, with an upper-case letter"
	CaseLower    InputClass = "case: valid, with a lower-case letter"
	CaseDigit    InputClass = "case: valid, with a digit"
	CaseDash     InputClass = "case: valid, with '-'"
	CaseNonASCII InputClass = "case: non-ASCII"
	CaseUnderbar InputClass = "case: '_'"
	CaseSpace    InputClass = "case: space"
	CaseOther    InputClass = "case: another ASCII character"
)

// The classes of title.
const (
	TitleMissing        InputClass = "title: missing"
	TitleEmpty          InputClass = "title: empty"
	TitleOnlyASCIISpace InputClass = "title: only ASCII white space"
	TitleOnlyOtherSpace InputClass = "title: only white space, some not ASCII"
	TitleTrimASCIIStart InputClass = "title: ASCII white space trimmed at the start"
	TitleTrimASCIIEnd   InputClass = "title: ASCII white space trimmed at the end"
	TitleTrimOtherStart InputClass = "title: non-ASCII white space trimmed at the start"
	TitleTrimOtherEnd   InputClass = "title: non-ASCII white space trimmed at the end"
	TitleInnerSpace     InputClass = "title: white space kept inside"
	TitleNUL            InputClass = "title: NUL"
	TitleControl        InputClass = "title: another C0 control character"
	TitleDEL            InputClass = "title: DEL"
	TitleC1Control      InputClass = "title: C1 control character"
	TitleSeparator      InputClass = "title: U+001C-001F kept"
	TitleZeroWidthSpace InputClass = "title: U+200B kept"
	TitleByteOrderMark  InputClass = "title: U+FEFF kept"
	TitleInvisibleEnd   InputClass = "title: invisible character kept at an end"
	TitleNonASCII       InputClass = "title: non-ASCII"
	TitleAstral         InputClass = "title: character outside the BMP"
	TitleJSONEscape     InputClass = "title: quote or backslash"
	TitleHTMLOrLineSep  InputClass = "title: HTML or U+2028/U+2029"
	Title160            InputClass = "title: 160 code points, more bytes"
	Title160Trimmed     InputClass = "title: 160 code points after trimming a longer one"
	Title161            InputClass = "title: 161 code points, more bytes"
	TitleInvalidUTF8    InputClass = "title: invalid UTF-8"
)

// InputClasses are every class of input a default exploration must draw
// (TestReach checks it does).
var InputClasses = []InputClass{
	CaseMissing, CaseEmpty, CaseLongest, CaseTooLong, CaseUpper, CaseLower, CaseDigit, CaseDash,
	CaseNonASCII, CaseUnderbar, CaseSpace, CaseOther,
	TitleMissing, TitleEmpty, TitleOnlyASCIISpace, TitleOnlyOtherSpace,
	TitleTrimASCIIStart, TitleTrimASCIIEnd, TitleTrimOtherStart, TitleTrimOtherEnd, TitleInnerSpace,
	TitleNUL, TitleControl, TitleDEL, TitleC1Control, TitleSeparator, TitleZeroWidthSpace, TitleByteOrderMark, TitleInvisibleEnd,
	TitleNonASCII, TitleAstral,
	TitleJSONEscape, TitleHTMLOrLineSep, Title160, Title161, Title160Trimmed, TitleInvalidUTF8,
}

// classifyApproval returns the classes of the case and the title of an
// approve step.
func classifyApproval(s Step) []InputClass {
	var classes []InputClass
	if id, ok := s.Arg("case"); ok {
		classes = classifyCase(id)
	} else {
		classes = []InputClass{CaseMissing}
	}
	if title, ok := s.Arg("title"); ok {
		classes = append(classes, classifyTitle(title)...)
	} else {
		classes = append(classes, TitleMissing)
	}
	return classes
}

// classifyCase returns the classes of a case id: its length at the
// limits, and which characters it holds (the allowed ones counted only
// in valid ids).
func classifyCase(id string) []InputClass {
	var classes []InputClass
	switch n := utf8.RuneCountInString(id); n {
	case 0:
		return []InputClass{CaseEmpty}
	case 80:
		classes = append(classes, CaseLongest)
	case 81:
		classes = append(classes, CaseTooLong)
	}
	valid := len(id) <= 80
	for _, r := range id {
		valid = valid && (r == '-' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}
	seen := map[InputClass]bool{}
	for _, r := range id {
		var c InputClass
		switch {
		case r >= utf8.RuneSelf:
			c = CaseNonASCII
		case r == '_':
			c = CaseUnderbar
		case r == ' ':
			c = CaseSpace
		case !valid && (r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)):
			continue
		case 'A' <= r && r <= 'Z':
			c = CaseUpper
		case 'a' <= r && r <= 'z':
			c = CaseLower
		case '0' <= r && r <= '9':
			c = CaseDigit
		case r == '-':
			c = CaseDash
		default:
			c = CaseOther
		}
		if !seen[c] {
			seen[c] = true
			classes = append(classes, c)
		}
	}
	return classes
}

// classifyTitle returns the classes of a title: what trimming removes,
// what it keeps, its length in code points, and the characters a JSON
// encoder must get right.
func classifyTitle(title string) []InputClass {
	switch {
	case title == "":
		return []InputClass{TitleEmpty}
	case !utf8.ValidString(title):
		return []InputClass{TitleInvalidUTF8}
	}
	trimmed := strings.TrimFunc(title, unicode.IsSpace)
	if trimmed == "" {
		if strings.TrimLeft(title, string(ASCIISpace)) == "" {
			return []InputClass{TitleOnlyASCIISpace}
		}
		return []InputClass{TitleOnlyOtherSpace}
	}
	var classes []InputClass
	add := func(c InputClass, ok bool) {
		if ok {
			classes = append(classes, c)
		}
	}
	start := title[:len(title)-len(strings.TrimLeftFunc(title, unicode.IsSpace))]
	end := title[len(strings.TrimRightFunc(title, unicode.IsSpace)):]
	asciiOnly := func(cut string) bool { return cut != "" && strings.Trim(cut, string(ASCIISpace)) == "" }
	otherToo := func(cut string) bool { return strings.Trim(cut, string(ASCIISpace)) != "" }
	add(TitleTrimASCIIStart, asciiOnly(start))
	add(TitleTrimASCIIEnd, asciiOnly(end))
	add(TitleTrimOtherStart, otherToo(start))
	add(TitleTrimOtherEnd, otherToo(end))
	add(TitleInnerSpace, strings.ContainsFunc(trimmed, unicode.IsSpace))
	holds := func(lo, hi rune) bool {
		return strings.ContainsFunc(trimmed, func(r rune) bool { return lo <= r && r <= hi && !unicode.IsSpace(r) })
	}
	add(TitleNUL, holds(0, 0))
	add(TitleControl, holds(0x01, 0x1B))
	add(TitleDEL, holds(0x7F, 0x7F))
	add(TitleC1Control, holds(0x80, 0x9F))
	add(TitleSeparator, holds(0x1C, 0x1F))
	add(TitleZeroWidthSpace, holds(0x200B, 0x200B))
	add(TitleByteOrderMark, holds(0xFEFF, 0xFEFF))
	isInvisible := func(r rune) bool {
		return slices.ContainsFunc(KeptInvisibles, func(set []rune) bool { return slices.Contains(set, r) })
	}
	first, _ := utf8.DecodeRuneInString(trimmed)
	last, _ := utf8.DecodeLastRuneInString(trimmed)
	add(TitleInvisibleEnd, isInvisible(first) || isInvisible(last))
	add(TitleNonASCII, strings.ContainsFunc(trimmed, func(r rune) bool { return r >= utf8.RuneSelf && !unicode.IsSpace(r) }))
	add(TitleAstral, strings.ContainsFunc(trimmed, func(r rune) bool { return r > 0xFFFF }))
	add(TitleJSONEscape, strings.ContainsAny(trimmed, `"\`))
	add(TitleHTMLOrLineSep, strings.ContainsAny(trimmed, "<>&\u2028\u2029"))
	n := utf8.RuneCountInString(trimmed)
	add(Title160, n == 160 && len(trimmed) > 160)
	add(Title160Trimmed, n == 160 && utf8.RuneCountInString(title) > 160)
	add(Title161, n == 161 && len(trimmed) > 161)
	return classes
}
