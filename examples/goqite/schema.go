package outbox

import (
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"maragu.dev/goqite"
)

// GoqiteSQLite is goqite v0.4.0's schema_sqlite.sql, as its README tells
// a user to run it.
const GoqiteSQLite = `create table goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;

create trigger goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;

create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);`

// GoqitePostgres is goqite v0.4.0's schema_postgres.sql with one change:
// a message id's 16 random bytes come from the built-in gen_random_uuid
// instead of pgcrypto's gen_random_bytes, the same 32 hexadecimal digits
// after "m_", so that no extension is installed on a shared server.
const GoqitePostgres = `create or replace function update_timestamp()
returns trigger as $$
begin
   new.updated = now();
   return new;
end;
$$ language plpgsql;

create table goqite (
  id text primary key default ('m_' || replace(gen_random_uuid()::text, '-', '')),
  created timestamptz not null default now(),
  updated timestamptz not null default now(),
  queue text not null,
  body bytea not null,
  timeout timestamptz not null default now(),
  received integer not null default 0,
  priority integer not null default 0
);

create trigger goqite_updated_timestamp
before update on goqite
for each row execute procedure update_timestamp();

create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);`

// The app's own tables: the approvals, and for each its outbox row, which
// names the goqite message that delivers it. Times are milliseconds since
// the Unix epoch, 0 where unset. On PostgreSQL a title is BYTEA, its
// UTF-8 bytes, since a title may hold NUL.
const (
	appSQLite = `create table if not exists approvals (
  seq integer primary key,
  key text not null unique,
  case_id text not null,
  title text not null,
  payload text not null
) strict;
create table if not exists outbox (
  seq integer primary key,
  key text not null unique references approvals (key),
  message text,
  state text not null default 'pending' check (state in ('pending', 'sent', 'blocked')),
  attempts integer not null default 0,
  task_id integer,
  last_error text,
  created_at integer not null,
  next_attempt_at integer not null,
  first_claimed_at integer not null default 0,
  lease_owner text,
  fence integer not null default 0
) strict;
create table if not exists audit (
  seq integer primary key,
  at integer not null,
  actor text not null,
  action text not null,
  key text not null,
  reason text not null
) strict;`

	appPostgres = `create table if not exists approvals (
  seq bigserial primary key,
  key text not null unique,
  case_id text not null,
  title bytea not null,
  payload text not null
);
create table if not exists outbox (
  seq bigserial primary key,
  key text not null unique references approvals (key),
  message text,
  state text not null default 'pending' check (state in ('pending', 'sent', 'blocked')),
  attempts integer not null default 0,
  task_id bigint,
  last_error text,
  created_at bigint not null,
  next_attempt_at bigint not null,
  first_claimed_at bigint not null default 0,
  lease_owner text,
  fence bigint not null default 0
);
create table if not exists audit (
  seq bigserial primary key,
  at bigint not null,
  actor text not null,
  action text not null,
  key text not null,
  reason text not null
);`
)

// The adapter's queries, with PostgreSQL's numbered parameters; on SQLite
// each $N becomes ?N (see flavor.sql).
const (
	sqlFindApproval   = `select payload from approvals where key = $1`
	sqlInsertApproval = `insert into approvals (key, case_id, title, payload) values ($1, $2, $3, $4)`
	sqlInsertRow      = `insert into outbox (key, created_at, next_attempt_at) values ($1, $2, $2) returning seq`
	sqlSetMessage     = `update outbox set message = $1 where seq = $2`
	// sqlRow reads a row, with its approval's payload and, when a worker
	// holds it, when its message becomes visible again: the lease's end.
	sqlRow = `select o.seq, o.state, o.attempts, coalesce(o.message, ''), coalesce(o.last_error, ''), o.created_at,
	o.first_claimed_at, coalesce(o.lease_owner, ''), o.fence, a.payload, g.timeout
	from outbox o join approvals a on a.key = o.key left join goqite g on g.id = o.message where o.key = $1`
	sqlNextVisible = `select min(timeout) from goqite where queue = $1 and received < $2`
	sqlBlock       = `update outbox set state = 'blocked', last_error = $1, lease_owner = null, fence = fence + 1 where seq = $2`
	sqlClaim       = `update outbox set attempts = attempts + 1, fence = fence + 1, lease_owner = $1,
	first_claimed_at = case when first_claimed_at = 0 then $2 else first_claimed_at end where seq = $3`
	// sqlSettle writes an outcome if the row is still pending; the fenced
	// variant adds the fence to the condition (see sqlSettleFenced).
	sqlSettle = `update outbox set state = $1, task_id = $2, last_error = $3,
	next_attempt_at = case when $1 = 'pending' then $4 else next_attempt_at end, lease_owner = null
	where seq = $5 and state = 'pending'`
	sqlSettleFenced = sqlSettle + ` and fence = $6`
	sqlHeld         = `select seq, message from outbox where lease_owner = $1 and state = 'pending' order by seq`
	sqlRelease      = `update outbox set lease_owner = null, fence = fence + 1 where seq = $1`
	sqlRetry        = `update outbox set state = 'pending', attempts = 0, task_id = null, last_error = null, next_attempt_at = $1,
	first_claimed_at = case when $2 then 0 else first_claimed_at end, lease_owner = null, fence = fence + 1, message = $3 where seq = $4`
	sqlReconcile = `update outbox set state = 'sent', task_id = $1, last_error = null, lease_owner = null, fence = fence + 1 where seq = $2`
	sqlAudit     = `insert into audit (at, actor, action, key, reason) values ($1, $2, $3, $4, $5)`
	sqlAuditLog  = `select at, actor, action, key, reason from audit order by seq`
	sqlApprovals = `select key, case_id, title, payload from approvals order by seq`
	sqlRows      = `select o.key, o.state, o.attempts, coalesce(o.task_id, 0), coalesce(o.last_error, ''), o.created_at,
	o.next_attempt_at, o.first_claimed_at, coalesce(o.lease_owner, ''), o.fence, g.timeout
	from outbox o left join goqite g on g.id = o.message order by o.seq`
)

// flavor is what differs between the backends: goqite's SQL flavor, the
// schemas, and how parameters and times are written.
type flavor struct {
	goqite goqite.SQLFlavor
	// schema makes goqite's table (when tables says it is missing) and
	// the app's own.
	goqiteSchema, appSchema string
	// tables lists the tables of the database, so that goqite's schema,
	// which is not idempotent, runs once.
	tables string
	// title is a title as the approvals table takes it.
	title func(string) any
	// txOptions begin every transaction of the app's.
	txOptions *sql.TxOptions
}

var (
	sqliteFlavor = flavor{goqite: goqite.SQLFlavorSQLite, goqiteSchema: GoqiteSQLite, appSchema: appSQLite,
		tables: `select name from sqlite_schema where type = 'table'`,
		title:  func(s string) any { return s }}
	postgresFlavor = flavor{goqite: goqite.SQLFlavorPostgreSQL, goqiteSchema: GoqitePostgres, appSchema: appPostgres,
		tables: `select tablename from pg_tables where schemaname = current_schema()`,
		title:  func(s string) any { return []byte(s) }, txOptions: &sql.TxOptions{Isolation: sql.LevelSerializable}}
)

// numbered is a $N parameter.
var numbered = regexp.MustCompile(`\$([0-9]+)`)

// sql is query in the flavor's dialect: SQLite takes ?N where
// PostgreSQL takes $N.
func (f flavor) sql(query string) string {
	if f.goqite == goqite.SQLFlavorPostgreSQL {
		return query
	}
	return numbered.ReplaceAllString(query, "?$1")
}

// rfc3339Milli is how goqite writes a time on SQLite.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// goqiteTime reads, in milliseconds since the Unix epoch, a time goqite
// wrote: text on SQLite, a timestamptz on PostgreSQL; 0 for NULL.
func goqiteTime(v any) (int64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		t, err := time.Parse(rfc3339Milli, v)
		return t.UnixMilli(), err
	case time.Time:
		return v.UnixMilli(), nil
	}
	return 0, fmt.Errorf("%w: goqite time %v is a %T", errUnexpected, v, v)
}

// errUnexpected is a database that holds what the adapter never wrote.
var errUnexpected = errors.New("outbox: unexpected value in the database")
