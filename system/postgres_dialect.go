package system

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The protocol is the same on PostgreSQL as on SQLite: every write is one
// transaction, a claim takes its row FOR UPDATE SKIP LOCKED so that
// workers on many machines never wait for each other's rows, and the
// settle is the same fenced UPDATE. This file holds what PostgreSQL says
// otherwise: the queries whose text differs, the parameters numbered
// $1, $2 …, the lock a write serialises on, and the writes in a
// transaction of their own or of a caller's pgx transaction.

// sqlSerialise holds a lock on a name until the transaction ends (see
// statements.serialise). The lock is the server's, not a schema's: a
// name starts with its schema's.
const sqlSerialise = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// lockName is the name sqlSerialise locks to serialise on name in schema:
// the lock is the server's, so that its name starts with the schema's.
// Every write that serialises on a name, through database/sql or a
// caller's pgx transaction, takes the lock of this name.
func lockName(schema, name string) string { return schema + " " + name }

// postgresQueries are the queries whose PostgreSQL text is more than
// their SQLite text with the parameters numbered $1, $2 …, by their
// SQLite text, each stated in full (TestPostgresQueriesDiffer).
var postgresQueries = map[string]string{
	// The claim skips the rows another worker's claim holds, instead of
	// waiting for its transaction. It finds its row in the outbox alone
	// and joins the approval to that row only: before the server has
	// statistics on the outbox (a new schema, a sudden backlog), it may
	// plan to sort every pending row, and must not join each of them.
	sqlEligible: `WITH o AS (
			SELECT seq, key, attempts, last_error, created_at, first_claimed_at, fence, lease_owner FROM outbox
			WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_owner IS NULL OR lease_until <= $1)
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		SELECT o.seq, o.key, a.payload, o.attempts, coalesce(o.last_error, ''), o.created_at, o.first_claimed_at, o.fence,
			coalesce(o.lease_owner, '')
		FROM o JOIN approvals a ON a.key = o.key`,
	// greatest is what SQLite's max of two arguments is.
	sqlNextDue: `SELECT count(*), coalesce(min(greatest(next_attempt_at, CASE WHEN lease_owner IS NULL THEN 0 ELSE lease_until END)), 0)
		FROM outbox WHERE state = 'pending'`,
	// An operator's action locks the row it reads until it writes it.
	sqlLockRow: `SELECT ` + rowColumns + ` WHERE o.key = $1 FOR UPDATE`,
	// The approvals are ordered by seq, which SQLite's rowid is.
	sqlSnapshot: `SELECT 0, a.seq, a.key, '', 0, 0, '', 0, 0, 0, 0, 0, '', 0, 0, a.case_id, a.title, a.payload FROM approvals a
		UNION ALL SELECT 1, o.seq, ` + rowFields + `, '', '', '' FROM outbox o
		ORDER BY 1, 2`,
	// PostgreSQL names the row the conflict found by its table.
	sqlRaiseBudget: `INSERT INTO meta (name, value) VALUES ('budget', $1)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)`,
}

// dialect is what a PostgreSQL handle needs beyond SQLite's: its schema,
// and the hook it passes before COMMIT; it runs a write in a transaction
// of its own.
type dialect struct {
	schema string
	hook   Hook // passed before every COMMIT
}

// postgresText is query, written for SQLite, in PostgreSQL's SQL.
func postgresText(query string) string {
	if t, ok := postgresQueries[query]; ok {
		return t
	}
	return rebind(query)
}

// write runs fn in a transaction of its own. PostgreSQL commits the
// transactions of many connections together itself; a claim never waits
// for another's row, and the writes that read before they write lock
// what they read (FOR UPDATE, serialise).
func (d *dialect) write(ctx context.Context, s *statements, doing string, fn func(ctx context.Context, tx *sql.Tx, q *statements) error) error {
	if err := ctx.Err(); err != nil {
		return driverError(doing, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return driverError(doing, err)
	}
	defer tx.Rollback()
	if err := fn(ctx, tx, s); err != nil {
		if class := driverClass(err); class != nil {
			// The statement failed the whole transaction, as such an
			// error fails a SQLite batch: it names the write, as
			// SQLite's does.
			return &DatabaseError{Class: class, Doing: doing, Err: err}
		}
		return err
	}
	if err := s.dialect.hook.pass(PointBeforeCommit); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return commitError(doing, err)
	}
	s.group.commits.Add(1)
	s.group.writes.Add(1)
	return nil
}

// RecordApprovalPgx is RecordApprovalTx for an app that talks to
// PostgreSQL through pgx: tx is the caller's transaction on this Outbox's
// database, begun on any pool with any search path (the statements name
// the Outbox's schema), so that the caller's own business write, the
// approval and the outbox row commit together. The caller commits; on an
// error it must roll back. The transaction must be READ COMMITTED (the
// default): at a stricter isolation a concurrent approval of the same key
// fails the caller's transaction instead of being a harmless repeat. On
// a SQLite app database it returns ErrInvalidInput.
func (o *Outbox) RecordApprovalPgx(ctx context.Context, tx pgx.Tx, caseID, title string) (string, error) {
	switch {
	case o.q.dialect == nil:
		return "", invalid("%s is a SQLite file: record in a database/sql transaction (RecordApprovalTx)", o.path)
	case tx == nil:
		return "", invalid("transaction is nil")
	}
	a, err := NewApproval(caseID, title)
	if err != nil {
		return "", err
	}
	if err := o.record(ctx, pgxRunner{tx, o.q.dialect.schema}, a); err != nil {
		return "", err
	}
	return a.Key, nil
}

// pgxRunner runs the statements of a write in a caller's pgx transaction,
// each table named with its schema.
type pgxRunner struct {
	tx     pgx.Tx
	schema string
}

// appTables are the names of an app database's tables in a query.
var appTables = regexp.MustCompile(`\b(approvals|outbox|meta|audit)\b`)

// text is query in PostgreSQL's SQL, its tables named with r's schema.
func (r pgxRunner) text(query string) string {
	return appTables.ReplaceAllString(postgresText(query), r.schema+".$1")
}

func (r pgxRunner) exec(ctx context.Context, query string, args ...any) error {
	_, err := r.tx.Exec(ctx, r.text(query), args...)
	return err
}

func (r pgxRunner) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return r.tx.QueryRow(ctx, r.text(query), args...).Scan(dest...)
}

func (r pgxRunner) serialise(ctx context.Context, name string) error {
	_, err := r.tx.Exec(ctx, sqlSerialise, lockName(r.schema, name))
	return driverError("waiting for "+name, err)
}

// commitError is the error of a COMMIT that failed. PostgreSQL answers
// a COMMIT it refused with an error of the transaction (a serialization
// failure, a constraint checked at commit): nothing was written. When the
// connection itself failed instead (it closed, the server ended it, the
// reply never came), the commit may or may not have happened, and the
// caller must not assume either: ErrCommitUnknown.
func commitError(doing string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !strings.HasPrefix(pe.Code, "08") && !strings.HasPrefix(pe.Code, "57") {
		return driverError(doing, err)
	}
	return &DatabaseError{Class: ErrCommitUnknown, Doing: doing, Err: err}
}

// Query is query, written for SQLite, in the dialect of the Outbox's
// database: itself on SQLite; on PostgreSQL with its parameters numbered
// $1, $2 … as SQLite numbers them (?N stays N). A caller that runs SQL of
// its own on DB, as package designs does, writes it once for both; it
// keeps to what both say alike (no SQLite function, no rowid).
func (o *Outbox) Query(query string) string { return o.q.text(query) }

// rebind numbers the parameters of a SQLite query as PostgreSQL does: ?N
// becomes $N, and a bare ? the next number after the largest so far, as
// SQLite counts it.
func rebind(query string) string {
	var b strings.Builder
	largest := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := largest + 1
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j]) // digits only
		}
		largest = max(largest, n)
		b.WriteString("$" + strconv.Itoa(n))
		i = j - 1
	}
	return b.String()
}
