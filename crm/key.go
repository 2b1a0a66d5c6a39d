package crm

import (
	"errors"
	"fmt"
	"strings"
)

// MaxKeyLength is the longest Idempotency-Key the server takes, in
// characters of the decoded string.
const MaxKeyLength = 255

// ErrBadKey is returned by ParseIdempotencyKey and FormatIdempotencyKey for
// a key that is not a structured-field string of 1 to MaxKeyLength
// characters.
var ErrBadKey = errors.New("crm: malformed Idempotency-Key")

// ParseIdempotencyKey decodes the value of an Idempotency-Key header: a
// structured-field string (RFC 8941 §3.3.3), a quoted string whose only
// escapes are \" and \\, of printable ASCII, with no parameters. Spaces
// around the string are allowed, as RFC 8941 §4.2 says; anything else
// around it is not. The decoded key must be 1 to MaxKeyLength characters.
func ParseIdempotencyKey(v string) (string, error) {
	v = strings.Trim(v, " ")
	if len(v) < 2 || v[0] != '"' {
		return "", fmt.Errorf("%w: want a quoted string", ErrBadKey)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("%w: a backslash must escape \" or \\", ErrBadKey)
			}
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("%w: characters after the closing quote", ErrBadKey)
			}
			return checkKey(b.String())
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: byte %#x is not printable ASCII", ErrBadKey, c)
		default:
			b.WriteByte(c)
		}
		if b.Len() > MaxKeyLength {
			return "", fmt.Errorf("%w: longer than %d characters", ErrBadKey, MaxKeyLength)
		}
	}
	return "", fmt.Errorf("%w: no closing quote", ErrBadKey)
}

// FormatIdempotencyKey encodes key as a structured-field string, the
// inverse of ParseIdempotencyKey.
func FormatIdempotencyKey(key string) (string, error) {
	if _, err := checkKey(key); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%w: byte %#x is not printable ASCII", ErrBadKey, c)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// checkKey returns key if its length is within bounds.
func checkKey(key string) (string, error) {
	switch {
	case key == "":
		return "", fmt.Errorf("%w: empty", ErrBadKey)
	case len(key) > MaxKeyLength:
		return "", fmt.Errorf("%w: longer than %d characters", ErrBadKey, MaxKeyLength)
	}
	return key, nil
}
