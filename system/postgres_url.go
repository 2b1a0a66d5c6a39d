package system

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// An app database may live in PostgreSQL instead of a SQLite file: Open
// and OpenReadOnly take a URL postgres://… (or postgresql://…) wherever
// they take a path. The tables live in one PostgreSQL schema, named by the
// URL's schema parameter (postgres://host/db?schema=crm_followups), or
// DefaultSchema. The CRM simulation stays a SQLite file. This file holds
// what a URL says: the PostgreSQL schema, the URL to connect with and the
// one to show.

// DefaultSchema is the PostgreSQL schema of an app database whose URL
// names none.
const DefaultSchema = "handoff"

// IsPostgres reports whether target names a PostgreSQL database, a URL
// postgres://… or postgresql://…, rather than a SQLite file.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// mistypedScheme matches the start of a URL missing its colon or a
// slash: postgres//…, postgres:/…, http:/…, postgresql//….
var mistypedScheme = regexp.MustCompile(`(?i)^(postgres|postgresql|https?)(//|:/[^/]|:/$)`)

// MistypedURL reports whether s, given where a path or a URL is
// expected, starts as a URL with its colon or a slash missing
// (postgres//…, postgres:/…): taken for a path, it would name a folder
// postgres or postgres: and fail far from the typo.
func MistypedURL(s string) bool {
	return mistypedScheme.MatchString(s)
}

// schemaName is what a schema parameter may be: a plain lower-case
// PostgreSQL identifier, so that it needs no quoting.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reservedWords are the words PostgreSQL's grammar reserves (its
// reserved keywords, and those that may name a type or a function but
// not a schema), as pg_get_keywords() lists them with catcode R or T:
// a schema named so would need quoting everywhere.
var reservedWords = strings.Fields(`all analyse analyze and any array as asc asymmetric authorization
	binary both case cast check collate collation column concurrently constraint create cross
	current_catalog current_date current_role current_schema current_time current_timestamp
	current_user default deferrable desc distinct do else end except false fetch for foreign
	freeze from full grant group having ilike in initially inner intersect into is isnull join
	lateral leading left like limit localtime localtimestamp natural not notnull null offset on
	only or order outer overlaps placing primary references returning right select session_user
	similar some symmetric system_user table tablesample then to trailing true union unique user
	using variadic verbose when where window with`)

// postgresTarget is a PostgreSQL URL taken apart: the URL to connect
// with, without the schema parameter, the schema, and the URL to show,
// without the password.
type postgresTarget struct {
	connect, schema, shown string
}

// parsePostgres takes target apart, refusing a URL that does not parse
// and a schema that is not a plain identifier.
func parsePostgres(target string) (postgresTarget, error) {
	shown := Redact(target)
	u, err := url.Parse(target)
	if err != nil {
		// The parser's own words could quote the password.
		return postgresTarget{}, invalid("%s is not a PostgreSQL URL (a password with / ? # or @ must be percent-encoded)", shown)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return postgresTarget{}, invalid("the parameters of %s do not parse (a ';' must be written %%3B)", shown)
	}
	schema := DefaultSchema
	switch len(q["schema"]) {
	case 0:
	case 1:
		schema = q.Get("schema")
		q.Del("schema")
	default:
		return postgresTarget{}, invalid("%s names the schema %d times; name it once", shown, len(q["schema"]))
	}
	if !schemaName.MatchString(schema) {
		return postgresTarget{}, invalid("schema %q in %s is not a plain PostgreSQL name (lower-case letters, digits and _, not starting with a digit, at most 63)", schema, shown)
	}
	if slices.Contains(reservedWords, schema) {
		return postgresTarget{}, invalid("schema %q in %s is a word PostgreSQL reserves; name another (crm_followups, say)", schema, shown)
	}
	u.RawQuery = q.Encode()
	return postgresTarget{connect: u.String(), schema: schema, shown: shown}, nil
}

// SplitPostgres takes the PostgreSQL URL of an app database apart: the
// URL to connect with, without the schema parameter and with search_path
// set to the schema (a runtime parameter pgx passes on), so that a
// connection's unqualified tables are the schema's; and the schema (the
// URL's schema parameter, or DefaultSchema). An outbox of another module
// that the harness opens on PostgreSQL gets such a URL, its schema made.
func SplitPostgres(target string) (connect, schema string, err error) {
	t, err := parsePostgres(target)
	if err != nil {
		return "", "", err
	}
	u, err := url.Parse(t.connect)
	if err != nil {
		return "", "", invalid("%s is not a PostgreSQL URL", t.shown)
	}
	q := u.Query()
	q.Set("search_path", t.schema)
	u.RawQuery = q.Encode()
	return u.String(), t.schema, nil
}

// WithSchema is the PostgreSQL URL target with its schema parameter set
// to schema, or removed when schema is "": the URL of an app database on
// a server, or of the server.
func WithSchema(target, schema string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", invalid("%s is not a PostgreSQL URL", Redact(target))
	}
	q := u.Query()
	q.Del("schema")
	if schema != "" {
		q.Set("schema", schema)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Redact hides the password of what may be a URL, for a message.
func Redact(target string) string {
	u, err := url.Parse(target)
	if err == nil && u.User != nil && !strings.Contains(u.Host+u.Path+u.RawQuery, "@") {
		return u.Redacted()
	}
	// A URL that does not parse, or parses with its password read as a
	// port or a path (an unencoded / ? or #): everything up to the last
	// @ may be the password.
	scheme, rest, ok := strings.Cut(target, "://")
	if at := strings.LastIndex(rest, "@"); ok && at >= 0 {
		return scheme + "://…" + rest[at:]
	}
	if MistypedURL(target) { // postgres//USER:PASSWORD@…: the same, past the slashes
		slashes := strings.IndexByte(target, '/')
		for slashes < len(target) && target[slashes] == '/' {
			slashes++
		}
		if at := strings.LastIndex(target, "@"); at >= slashes {
			return target[:slashes] + "…" + target[at:]
		}
	}
	return target
}
