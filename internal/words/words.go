// Package words makes the counts of handoff's messages agree with their
// number: "1 step", "2 steps", "1 row needs", "2 rows need".
package words

import (
	"fmt"
	"strings"
)

// HowMany is n and noun, singular for 1 and plural otherwise: "1 step",
// "2 steps", "0 entries". A noun of several words takes the plural on its
// last: "3 crash points".
func HowMany[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, Plural(noun))
}

// Agree is HowMany(n, noun) and the verb that agrees with it: one for 1,
// many otherwise ("1 row needs", "2 rows need").
func Agree[N ~int | ~int64](n N, noun, one, many string) string {
	if n == 1 {
		return HowMany(n, noun) + " " + one
	}
	return HowMany(n, noun) + " " + many
}

// Plural is the plural of an English noun, by the rules the nouns of
// handoff's output follow.
func Plural(noun string) string {
	switch {
	case len(noun) > 1 && strings.HasSuffix(noun, "y") && !strings.ContainsAny(noun[len(noun)-2:len(noun)-1], "aeiou"):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
