package system

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// State is where an outbox row stands. The schema enforces the three values.
type State string

const (
	// Pending: no final acknowledgment is recorded. The worker retries the
	// row with its original key and payload.
	Pending State = "pending"

	// Sent: the receiver's task id is recorded. It does not mean an employee
	// did the work. Final for the worker.
	Sent State = "sent"

	// Blocked: a key conflict or an exhausted attempt budget. A person must
	// reconcile by key before anything else is sent for it; the task may
	// exist at the receiver all the same. Final for the worker.
	Blocked State = "blocked"
)

// Last errors a row can carry, as the spec names them; empty means none.
const (
	// LastErrorTransient: the send failed in a way after which the
	// receiver may or may not have acted; the row is retried, or blocked
	// on its last attempt.
	LastErrorTransient = "transient"
	// LastErrorConflict: the receiver holds the key with another payload.
	LastErrorConflict = "conflict"
	// LastErrorBudgetExhausted: the row's attempts were spent before a
	// send could be recorded (the worker died after sending).
	LastErrorBudgetExhausted = "budget-exhausted"
	// LastErrorDeadline: the row outlived the time budget (MaxAge).
	LastErrorDeadline = "deadline"
	// LastErrorRetentionExpired: the receiver may have forgotten the key,
	// so a send could make a second task; a person must check first.
	LastErrorRetentionExpired = "retention-expired"
	// LastErrorRejected: the receiver refused the request for good.
	LastErrorRejected = "rejected"
	// LastErrorLocalPrefix starts the last error of an attempt whose
	// outcome a failure on this side made unknown ("local: database is
	// busy"): the attempt is counted, the row stays pending.
	LastErrorLocalPrefix = "local: "
)

// DefaultMaxAttempts is the attempt budget of a row when Options leaves it 0.
const DefaultMaxAttempts = 3

// Defaults of Options, as the spec gives them.
const (
	DefaultLease       = 30 * time.Second
	DefaultSendTimeout = 10 * time.Second
	DefaultBackoffBase = time.Second
	DefaultBackoffCap  = 5 * time.Minute
	DefaultConnectWait = time.Minute
)

// DefaultMaxConns is the connections an Outbox on PostgreSQL holds at
// most when its Options give none.
const DefaultMaxConns = 4

// DefaultWorker is the name of a worker whose Options give none.
const DefaultWorker = "worker"

// Options configure an Outbox. The zero value is the durable default: a
// zero field takes the default the spec gives it.
type Options struct {
	// MaxAttempts is how many sends a row gets before it is blocked; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int

	// Durability of every commit; the zero value is Durable.
	Durability Durability

	// BusyTimeout is how long a write waits for another connection's
	// write lock before it fails with ErrBusy; 0 means DefaultBusyTimeout.
	// SQLite counts whole milliseconds: under one, a write that finds the
	// lock taken fails at once. PostgreSQL waits at least a millisecond.
	BusyTimeout time.Duration

	// Worker names the worker that claims through this Outbox; "" means
	// DefaultWorker. Two workers must not share a name: Recover releases
	// every lease held under it.
	Worker string

	// Lease is how long a claim keeps other workers off a row (30 s);
	// SendTimeout the longest one send may take (10 s), shorter than Lease.
	Lease, SendTimeout time.Duration

	// BackoffBase and BackoffCap set the backoff ceiling after attempt n:
	// min(cap, base·2^(n−1)), 1 s and 5 min by default. NoBackoff retries
	// at once: the simulation's default.
	BackoffBase, BackoffCap time.Duration
	NoBackoff               bool

	// MaxAge, when not 0, is the time budget: a row older than this is
	// blocked (last error deadline) instead of sent.
	MaxAge time.Duration

	// Retention is how long the receiver remembers a key, when it does not
	// declare it itself (see Retainer); 0 means forever.
	Retention time.Duration

	// Dial, on PostgreSQL, makes each connection to the server (a cancel
	// request's too) in place of a dial of the URL's host, and no TLS is
	// negotiated on what it returns: for a tunnel that is secure itself,
	// or the simulation's keeper of sessions, which gives a connection
	// that ended a session it kept. nil dials the URL's host.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// MaxConns, on PostgreSQL, is the most connections the Outbox holds
	// to the server at once; 0 means DefaultMaxConns. The server's
	// connections are shared with every other client (100 by default):
	// one Outbox delivers one row at a time and needs one.
	MaxConns int

	// ConnectWait, on PostgreSQL, is how long Open waits, trying again
	// with backoff, for a server that takes no more connections or is
	// starting; 0 means DefaultConnectWait. Past it, Open returns
	// ErrUnavailable.
	ConnectWait time.Duration

	// Pool, on PostgreSQL, is where the Outbox takes its connections
	// from, instead of a pool of its own; Close leaves it open. It must
	// be a pool of the same app database (see NewPostgresPool), and the
	// pool's options (the worker's name, durability, busy timeout,
	// Harness.WrapConn, MaxConns) apply instead of these.
	Pool *PostgresPool

	// Harness holds the hooks a harness drives the Outbox through; its
	// zero value is what production runs.
	Harness Harness
}

// Harness holds the hooks through which a harness (the simulation, a
// test) drives an Outbox: fault points, a virtual clock, drawn jitter, the
// pipeline's background run in line, connections it can cut. The zero
// value is what production runs.
type Harness struct {
	// Hook is called at every FaultPoint; nil lets everything pass. A
	// Pipeline calls it from two goroutines at once.
	Hook Hook

	// Now is the clock; nil means time.Now. The simulation passes a
	// virtual clock. Times are stored as milliseconds since the Unix epoch.
	// A Pipeline calls it from two goroutines at once.
	Now func() time.Time

	// Jitter draws the backoff delay after a transient failure, uniform in
	// [0, ceiling]; nil means a source seeded from crypto/rand. The
	// simulation passes the value rapid drew.
	Jitter func(ceiling time.Duration) time.Duration

	// Background runs what a Pipeline does beside a send (recording the
	// answer before, claiming the row after); nil runs it on a goroutine
	// of its own, at once. A deterministic simulation runs it in line,
	// before the send, so that its order is the model's.
	Background func(func())

	// WrapSQLite, on SQLite, wraps the connector of the handle's
	// connections to the file: for a harness that cuts them all at once,
	// as a process that dies does (its open transaction rolled back), or
	// for diagnostics. nil connects as sql.Open("sqlite", …) would.
	WrapSQLite func(driver.Connector) driver.Connector

	// WrapConn, on PostgreSQL, wraps every session's connection to the
	// server (not a cancel request's) once it is established, TLS
	// included, before it carries the protocol: for logging, diagnostics
	// or faults (the simulation's loses a COMMIT's reply). nil uses each
	// connection as it is.
	WrapConn func(net.Conn) net.Conn
}

// WithDefaults returns opts with every zero field at its default, or an
// error for what the spec calls invalid: a negative duration, SendTimeout
// at or past Lease, a negative attempt budget. Open applies it; an outbox
// of another module that the harness opens with Options may too.
func (opts Options) WithDefaults() (Options, error) {
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"lease", opts.Lease}, {"send timeout", opts.SendTimeout}, {"backoff base", opts.BackoffBase},
		{"backoff cap", opts.BackoffCap}, {"max age", opts.MaxAge}, {"retention", opts.Retention}, {"busy timeout", opts.BusyTimeout}, {"connect wait", opts.ConnectWait}} {
		if d.value < 0 {
			return opts, invalid("%s is %v, want 0 (the default) or more", d.name, d.value)
		}
	}
	if opts.MaxAttempts < 0 {
		return opts, invalid("max attempts is %d, want 0 (the default) or more", opts.MaxAttempts)
	}
	if opts.MaxConns < 0 {
		return opts, invalid("max conns is %d, want 0 (the default) or more", opts.MaxConns)
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	defaults := []struct {
		field *time.Duration
		value time.Duration
	}{{&opts.Lease, DefaultLease}, {&opts.SendTimeout, DefaultSendTimeout}, {&opts.BusyTimeout, DefaultBusyTimeout},
		{&opts.BackoffBase, DefaultBackoffBase}, {&opts.BackoffCap, DefaultBackoffCap}, {&opts.ConnectWait, DefaultConnectWait}}
	for _, d := range defaults {
		if *d.field == 0 {
			*d.field = d.value
		}
	}
	if opts.SendTimeout >= opts.Lease {
		return opts, invalid("send timeout %v must be shorter than the lease %v", opts.SendTimeout, opts.Lease)
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Worker == "" {
		opts.Worker = DefaultWorker
	}
	if opts.Harness.Now == nil {
		opts.Harness.Now = time.Now
	}
	if opts.Harness.Jitter == nil {
		opts.Harness.Jitter = cryptoJitter()
	}
	if opts.Harness.Background == nil {
		opts.Harness.Background = func(f func()) { go f() }
	}
	return opts, nil
}

// Outbox is the app's side of the handoff: approvals, their outbox rows and
// one worker that delivers them. Several Outboxes, in one process or many,
// may work on the same database: leases keep them off each other's rows
// and fences keep a late worker from overwriting what happened since. The
// writes that one process's Outboxes on a file make at the same time
// commit together, one sync for many (see CommitStats).
type Outbox struct {
	db   *sql.DB
	q    *statements
	opts Options
	path string
	// budgetRecorded: a claim of this handle committed its attempt
	// budget (see Budget), so later claims need not write it again.
	budgetRecorded atomic.Bool
}

// Open opens (creating if needed) the app database at path, upgrading a
// file an older handoff wrote. It refuses, changing nothing, a path that
// is not a plain file, a file that is not a handoff app database
// (ErrWrongDatabase), a read-only one (ErrReadOnly) and invalid options
// (ErrInvalidInput). A path postgres://… opens the app database in
// PostgreSQL instead (see IsPostgres and DefaultSchema).
func Open(ctx context.Context, path string, opts Options) (*Outbox, error) {
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	var q *statements
	if IsPostgres(path) {
		q, err = openPostgres(ctx, path, opts, false)
	} else {
		q, err = openDB(ctx, path, appDatabase, opts.Durability, opts.BusyTimeout, opts.Harness.Now, opts.Harness.WrapSQLite)
	}
	if err != nil {
		return nil, err
	}
	return newOutbox(q, path, opts), nil
}

// OpenReadOnly opens the existing app database at path for reading: it
// writes nothing, creates no file and leaves none behind. Only the reading
// methods work on it (Snapshot, Row, Check, Receiver, Stale, Audit).
func OpenReadOnly(ctx context.Context, path string) (*Outbox, error) {
	opts, err := Options{}.WithDefaults()
	if err != nil {
		return nil, err
	}
	var q *statements
	if IsPostgres(path) {
		q, err = openPostgres(ctx, path, Options{Worker: opts.Worker, MaxConns: 1}, true)
	} else {
		q, err = openReadOnly(ctx, path, appDatabase)
	}
	if err != nil {
		return nil, err
	}
	return newOutbox(q, path, opts), nil
}

func newOutbox(q *statements, path string, opts Options) *Outbox {
	return &Outbox{db: q.db, q: q, opts: opts, path: path}
}

// DB is the outbox's database, for a caller that wants its own business
// write in the approval's transaction (see RecordApprovalTx). Transactions
// begun on it are BEGIN IMMEDIATE, and commit apart from the batches of
// this process's other writes on the file: while holding one, write
// through no other Outbox on the same file (that write could wait behind
// a batch that waits for this handle).
func (o *Outbox) DB() *sql.DB { return o.db }

// Path is the app database's path, as given to Open.
func (o *Outbox) Path() string { return o.path }

// UpgradedFrom is the schema version the app database had when Open
// upgraded it in place to this handoff's, 0 when Open made it new or
// found it up to date (or another open in this process had upgraded it).
func (o *Outbox) UpgradedFrom() int { return o.q.upgradedFrom }

// MaxAttempts is the attempt budget of every row.
func (o *Outbox) MaxAttempts() int { return o.opts.MaxAttempts }

// Options are the Outbox's options, defaults filled in.
func (o *Outbox) Options() Options { return o.opts }

// Worker is the name of the worker that claims through this Outbox.
func (o *Outbox) Worker() string { return o.opts.Worker }

// Close closes the database handle; nothing in memory needs saving.
func (o *Outbox) Close() error { return o.q.close() }

// Row is one outbox row as the worker and a person see it. Times are in
// UTC, zero where unknown or unset.
type Row struct {
	Key            string
	State          State
	Attempts       int
	RemoteID       int64     // the receiver's task id; 0 when none is recorded
	LastError      string    // one of the LastError constants, a local cause, or empty
	CreatedAt      time.Time // when it was approved; zero for rows an older handoff recorded
	NextAttemptAt  time.Time // not claimed before this
	FirstClaimedAt time.Time // zero before the first claim (and after reconcile --absent)
	LastAttemptAt  time.Time // zero before the first attempt
	SentAt         time.Time // zero unless the row is sent
	LeaseOwner     string    // the worker that holds the row; empty when none does
	LeaseUntil     time.Time // when that lease runs out
	Fence          int64     // one more for every claim, release and operator action
}

// Snapshot is everything observable in the app database, in insertion order.
type Snapshot struct {
	Approvals []Approval
	Outbox    []Row
}

// rowColumns are the columns a Row is scanned from, in scanRow's order.
const rowColumns = rowFields + `
	FROM outbox o`

// rowFields are the columns of rowColumns, of the outbox o.
const rowFields = `o.key, o.state, o.attempts, coalesce(o.remote_id, 0), coalesce(o.last_error, ''),
	o.created_at, o.next_attempt_at, o.first_claimed_at, o.last_attempt_at, o.sent_at,
	coalesce(o.lease_owner, ''), o.lease_until, o.fence`

// The queries of the reading methods.
const (
	// sqlSnapshot reads every approval and outbox row in one statement,
	// which sees one state of the database on either backend: the
	// approvals (0) in the order they were recorded, then the outbox rows
	// (1) in theirs, each padded to the other's columns (see snapshotLine).
	sqlSnapshot = `SELECT 0, a.rowid, a.key, '', 0, 0, '', 0, 0, 0, 0, 0, '', 0, 0, a.case_id, a.title, a.payload FROM approvals a
		UNION ALL SELECT 1, o.seq, ` + rowFields + `, '', '', '' FROM outbox o
		ORDER BY 1, 2`
	sqlRow     = `SELECT ` + rowColumns + ` WHERE o.key = ?`
	sqlGetMeta = `SELECT value FROM meta WHERE name = ?`
	sqlPutMeta = `INSERT INTO meta (name, value) VALUES (?, ?)`
	// sqlRaiseBudget records a claim's attempt budget when it is larger
	// than the one recorded: see Budget.
	sqlRaiseBudget = `INSERT INTO meta (name, value) VALUES ('budget', ?1)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER)`
)

// scanRow scans one row of rowColumns.
func scanRow(sc interface{ Scan(...any) error }) (Row, error) {
	var r Row
	var created, next, first, attempted, sent, until int64
	err := sc.Scan(&r.Key, &r.State, &r.Attempts, &r.RemoteID, &r.LastError,
		&created, &next, &first, &attempted, &sent, &r.LeaseOwner, &until, &r.Fence)
	r.CreatedAt, r.NextAttemptAt, r.FirstClaimedAt = fromMillis(created), fromMillis(next), fromMillis(first)
	r.LastAttemptAt, r.SentAt, r.LeaseUntil = fromMillis(attempted), fromMillis(sent), fromMillis(until)
	return r, err
}

// millis is t as the databases store it: milliseconds since the Unix epoch.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the time ms stands for in UTC; zero for 0.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Snapshot reads every approval and outbox row as they stood at one
// moment, in one statement (see sqlSnapshot).
func (o *Outbox) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	if err := o.q.ensure(ctx, sqlSnapshot); err != nil {
		return s, err
	}
	rows, err := o.q.query(ctx, nil, sqlSnapshot)
	if err != nil {
		return s, driverError("reading the snapshot", err)
	}
	defer rows.Close()
	for rows.Next() {
		line := snapshotLine{rows: rows}
		r, err := scanRow(&line)
		switch {
		case err != nil:
			return s, driverError("reading the snapshot", err)
		case line.kind == 0:
			s.Approvals = append(s.Approvals, Approval{Key: r.Key, CaseID: line.caseID, Title: line.title, Payload: line.payload})
		default:
			s.Outbox = append(s.Outbox, r)
		}
	}
	return s, driverError("reading the snapshot", rows.Err())
}

// snapshotLine is a line of sqlSnapshot: what scanRow reads of it, between
// its kind and sequence number and an approval's columns.
type snapshotLine struct {
	rows                   *sql.Rows
	kind, seq              int64
	caseID, title, payload string
}

func (l *snapshotLine) Scan(dest ...any) error {
	return l.rows.Scan(append(append([]any{&l.kind, &l.seq}, dest...), &l.caseID, &l.title, &l.payload)...)
}

// Row reads the outbox row of key, or returns ErrNotFound. It costs the
// same however many rows there are.
func (o *Outbox) Row(ctx context.Context, key string) (Row, error) {
	r, err := scanRow(o.q.row(ctx, nil, sqlRow, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, fmt.Errorf("%w: no outbox row for %q", ErrNotFound, key)
	}
	return r, driverError("reading the row of "+strconv.Quote(key), err)
}

// Budget is the largest attempt budget a row of this app database may
// have used: this Outbox's MaxAttempts, or the largest that a claim made
// with a budget above DefaultMaxAttempts recorded. A checker of files
// (handoff check) reads it, since the workers' --max-attempts is not
// known to it; a claim never records a budget it did not have, so an
// attempt counted past its worker's budget still shows.
func (o *Outbox) Budget(ctx context.Context) (int, error) {
	var v string
	err := o.q.row(ctx, nil, sqlGetMeta, "budget").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return o.opts.MaxAttempts, nil
	}
	if err != nil {
		return 0, driverError("reading the attempt budget", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: the recorded attempt budget %q is not a number", ErrCorrupt, v)
	}
	return max(n, o.opts.MaxAttempts), nil
}

// metaReceiver names the receiver an app database delivers to.
const metaReceiver = "receiver"

// Receiver returns the identity of the receiver this app database
// delivers to, or "" before its first delivery.
func (o *Outbox) Receiver(ctx context.Context) (string, error) {
	var id string
	err := o.q.row(ctx, nil, sqlGetMeta, metaReceiver).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, driverError("reading the receiver", err)
}

// BindReceiver records, on the first call, that this app database
// delivers to the receiver with identity id (see CRM.Identity), and on
// every later call refuses another identity with ErrWrongReceiver. Call it
// before delivering: the remote ids an outbox records name tasks of one
// receiver only.
func (o *Outbox) BindReceiver(ctx context.Context, id string) error {
	if id == "" {
		return invalid("receiver identity is empty")
	}
	return o.q.write(ctx, "binding the receiver", []string{sqlGetMeta, sqlPutMeta}, func(ctx context.Context, tx *sql.Tx, q *statements) error {
		if err := q.serialise(ctx, tx, metaReceiver); err != nil {
			return err
		}
		var held string
		err := q.queryRow(ctx, tx, sqlGetMeta, []any{metaReceiver}, &held)
		switch {
		case err == nil && held == id:
			return nil
		case err == nil:
			return fmt.Errorf("%w: %s delivers to CRM %s, this CRM is %s; is it the right CRM (file or URL)?", ErrWrongReceiver, o.path, held, id)
		case !errors.Is(err, sql.ErrNoRows):
			return driverError("reading the receiver", err)
		}
		return driverError("recording the receiver", q.exec(ctx, tx, sqlPutMeta, metaReceiver, id))
	})
}

// CommitStats counts the commits of this process's handles on the app
// database's file with this Outbox's durability, and the writes
// (approvals, claims, settles, operator actions) they carried.
func (o *Outbox) CommitStats() CommitStats { return o.q.group.stats() }

// Check runs SQLite's integrity check on the app database and returns what
// it reports wrong; nothing when the file is sound. PostgreSQL keeps its
// own pages sound, and reports nothing here.
func (o *Outbox) Check(ctx context.Context) ([]string, error) {
	if o.q.dialect != nil {
		return nil, nil
	}
	return integrityCheck(ctx, o.db, o.path)
}
