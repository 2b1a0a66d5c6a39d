package system

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// recordQueries are the queries of record.
var recordQueries = []string{sqlFindApproval, sqlInsertApproval, sqlInsertRow}

// The queries of an approval.
const (
	sqlFindApproval   = `SELECT payload FROM approvals WHERE key = ?`
	sqlInsertApproval = `INSERT INTO approvals (key, case_id, title, payload) VALUES (?, ?, ?, ?)`
	sqlInsertRow      = `INSERT INTO outbox (key, state, attempts, created_at, next_attempt_at) VALUES (?, 'pending', 0, ?, ?)`
)

// KeyPrefix is the namespace, action and version part of every action key;
// the case id completes it. Every attempt of one action sends the same key.
const KeyPrefix = "harbor:create-followup:v1:"

const (
	maxCaseIDLen    = 80
	maxTitleLenRune = 160
)

// Approval is one approved action: a follow-up task for a case. Build it
// with NewApproval, which validates the input and derives Key and Payload.
type Approval struct {
	Key     string // KeyPrefix + CaseID
	CaseID  string // 1 to 80 ASCII letters, digits or '-'
	Title   string // trimmed, 1 to 160 code points of valid UTF-8
	Payload string // canonical JSON of {"case_id", "title"}
}

// NewApproval validates caseID and title as the spec says and returns the
// approval they make, or an ErrInvalidInput error that names the problem.
func NewApproval(caseID, title string) (Approval, error) {
	if err := validateCaseID(caseID); err != nil {
		return Approval{}, err
	}
	title, err := normaliseTitle(title)
	if err != nil {
		return Approval{}, err
	}
	return Approval{
		Key:     KeyPrefix + caseID,
		CaseID:  caseID,
		Title:   title,
		Payload: canonicalPayload(caseID, title),
	}, nil
}

// validateCaseID checks caseID against the spec: 1 to 80 characters, each an
// ASCII letter, ASCII digit or '-'. Its messages count characters, not
// bytes, name an offending character as a character (or an invalid byte as
// a byte), and quote the case id with Go escapes, so that no character in
// it can break a line of output.
func validateCaseID(caseID string) error {
	switch n := utf8.RuneCountInString(caseID); {
	case n == 0:
		return invalid("case id is empty")
	case n > maxCaseIDLen:
		return invalid("case id is %d characters, more than %d", n, maxCaseIDLen)
	}
	for i, pos := 0, 1; i < len(caseID); pos++ {
		r, size := utf8.DecodeRuneInString(caseID[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return invalid("case id %q has the invalid UTF-8 byte %#x at character %d; use ASCII letters, digits and '-'", caseID, caseID[i], pos)
		case !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-'):
			return invalid("case id %q has %q at character %d; use ASCII letters, digits and '-'", caseID, r, pos)
		}
		i += size
	}
	return nil
}

func normaliseTitle(title string) (string, error) {
	if !utf8.ValidString(title) {
		return "", invalid("title is not valid UTF-8")
	}
	title = strings.TrimSpace(title)
	switch n := utf8.RuneCountInString(title); {
	case n == 0:
		return "", invalid("title is empty after trimming white space")
	case n > maxTitleLenRune:
		return "", invalid("title is %d characters, more than %d", n, maxTitleLenRune)
	}
	return title, nil
}

// canonicalPayload writes {"case_id":...,"title":...}: keys sorted, no
// insignificant white space, non-ASCII written as itself, no HTML escaping.
// encoding/json cannot do this: it always escapes U+2028 and U+2029.
func canonicalPayload(caseID, title string) string {
	var b strings.Builder
	b.WriteString(`{"case_id":`)
	writeJSONString(&b, caseID)
	b.WriteString(`,"title":`)
	writeJSONString(&b, title)
	b.WriteByte('}')
	return b.String()
}

func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// RecordApproval validates the input and, in one BEGIN IMMEDIATE
// transaction, records the approval and its pending outbox row. It returns
// the action key. Approving the same case with the same title again changes
// nothing and returns the key; with another title it returns ErrKeyConflict
// and changes nothing.
func (o *Outbox) RecordApproval(ctx context.Context, caseID, title string) (string, error) {
	a, err := NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	err = o.q.write(ctx, "recording the approval", recordQueries, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		return o.record(ctx, sqlRunner{q, tx}, a)
	})
	if err != nil {
		return "", err
	}
	return a.Key, nil
}

// RecordApprovalTx is RecordApproval inside a transaction the caller holds
// on this outbox's database (see DB), so that the caller's own business
// write, the approval and the outbox row commit together. The caller
// commits; on an error it must roll back.
func (o *Outbox) RecordApprovalTx(ctx context.Context, tx *sql.Tx, caseID, title string) (string, error) {
	if tx == nil {
		return "", invalid("transaction is nil")
	}
	a, err := NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	if err := o.record(ctx, sqlRunner{o.q, tx}, a); err != nil {
		return "", err
	}
	return a.Key, nil
}

// runner runs the statements of a write in a transaction: one of
// database/sql through an Outbox's statements, or a pgx one a caller
// holds (see RecordApprovalPgx).
type runner interface {
	exec(ctx context.Context, query string, args ...any) error
	queryRow(ctx context.Context, query string, args []any, dest ...any) error
	serialise(ctx context.Context, name string) error
}

// sqlRunner runs statements in tx through q.
type sqlRunner struct {
	q  *statements
	tx *sql.Tx
}

func (r sqlRunner) exec(ctx context.Context, query string, args ...any) error {
	return r.q.exec(ctx, r.tx, query, args...)
}

func (r sqlRunner) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return r.q.queryRow(ctx, r.tx, query, args, dest...)
}

func (r sqlRunner) serialise(ctx context.Context, name string) error {
	return r.q.serialise(ctx, r.tx, name)
}

// record writes a through r, unless its key is known: known with
// the same payload is a harmless repeat, with another payload a conflict.
func (o *Outbox) record(ctx context.Context, r runner, a Approval) error {
	if err := r.serialise(ctx, a.Key); err != nil {
		return err
	}
	var payload string
	err := r.queryRow(ctx, sqlFindApproval, []any{a.Key}, &payload)
	switch {
	case err == nil && payload == a.Payload:
		return nil
	case err == nil:
		return fmt.Errorf("%w: %s is already approved with %s", ErrKeyConflict, a.Key, OneLine(payload))
	case !errors.Is(err, sql.ErrNoRows):
		return driverError("looking up "+a.Key, err)
	}
	if err := r.exec(ctx, sqlInsertApproval, a.Key, a.CaseID, o.q.titleArg(a.Title), a.Payload); err != nil {
		return driverError("inserting the approval", err)
	}
	if err := o.opts.Harness.Hook.pass(PointBetweenApprovalInserts); err != nil {
		return err
	}
	now := millis(o.opts.Harness.Now())
	if err := r.exec(ctx, sqlInsertRow, a.Key, now, now); err != nil {
		return driverError("inserting the outbox row", err)
	}
	return nil
}

// titleArg is the value to bind for an approval's title in a statement
// that writes approvals.title: the title itself on SQLite; on PostgreSQL,
// where the column is BYTEA because TEXT cannot hold NUL, its UTF-8
// bytes. A []byte binds as raw bytes, through database/sql and pgx alike;
// a string bound to BYTEA would be read as bytea's text syntax, in which
// a backslash starts an escape.
func (s *statements) titleArg(title string) any {
	if s.dialect == nil {
		return title
	}
	return []byte(title)
}

// TitleArg is the value to bind for an approval's title when SQL of the
// caller's own, run on DB (as package designs does), writes
// approvals.title: the title on SQLite, its UTF-8 bytes on PostgreSQL,
// where the column is BYTEA (a string bound there is read as bytea's text
// syntax). Reading the column needs nothing of the kind: it scans into a
// string on both backends.
func (o *Outbox) TitleArg(title string) any { return o.q.titleArg(title) }
