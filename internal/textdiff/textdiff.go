// Package textdiff shows how two texts differ, line by line: what a
// person needs of a replayed step whose output is not the file's, rather
// than both outputs in full.
package textdiff

import "strings"

// Lines returns the lines of want and got, each marked: "-" for a line
// only want has, "+" for one only got has, " " for one both have, in the
// order of a longest common subsequence of lines; every line ends with a
// newline. It returns "" when want and got are equal.
func Lines(want, got string) string {
	if want == got {
		return ""
	}
	a, b := split(want), split(got)
	// lcs[i][j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(mark, text string) {
		out.WriteString(mark)
		out.WriteString(text)
		out.WriteByte('\n')
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line(" ", a[i])
			i, j = i+1, j+1
		case j == len(b) || i < len(a) && lcs[i+1][j] >= lcs[i][j+1]:
			line("-", a[i])
			i++
		default:
			line("+", b[j])
			j++
		}
	}
	return out.String()
}

// split is the lines of s, none for "".
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
