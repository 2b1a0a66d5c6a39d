package system

import (
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ sqlite, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`WHERE a = ? AND b = ?`, `WHERE a = $1 AND b = $2`},
		{`SET a = ?, b = ?, c = ?3, d = ?3 WHERE e = ?`, `SET a = $1, b = $2, c = $3, d = $3 WHERE e = $4`},
		{`VALUES (?1, ?2) WHERE x = ?1 AND y = ?10`, `VALUES ($1, $2) WHERE x = $1 AND y = $10`},
		{`SET a = ?2, b = ?`, `SET a = $2, b = $3`},
		{`VALUES (?3, ?1, ?)`, `VALUES ($3, $1, $4)`}, // a bare ? follows the largest number so far
	} {
		if got := rebind(tt.sqlite); got != tt.want {
			t.Errorf("rebind(%q) = %q, want %q", tt.sqlite, got, tt.want)
		}
	}
}

// TestPostgresQueriesDiffer: every query stated anew for PostgreSQL says
// more than its SQLite text with the parameters numbered, and keeps none
// of SQLite's parameters.
func TestPostgresQueriesDiffer(t *testing.T) {
	t.Parallel()
	if len(postgresQueries) == 0 {
		t.Fatal("no query is stated anew for PostgreSQL")
	}
	for sqlite, postgres := range postgresQueries {
		if postgres == rebind(sqlite) {
			t.Errorf("the PostgreSQL text of %q is its SQLite text renumbered: it needs no entry", sqlite)
		}
		if strings.Contains(postgres, "?") {
			t.Errorf("the PostgreSQL text %q keeps a SQLite parameter", postgres)
		}
	}
}

// TestPostgresQueriesCompareAlike: every comparison of a column with a
// parameter, a literal or another column that a query's SQLite text makes, its
// PostgreSQL text makes with the same operator, and no other: a boundary
// moved in one dialect only (a lease that runs out at < in one and <= in
// the other) is caught without a PostgreSQL server.
func TestPostgresQueriesCompareAlike(t *testing.T) {
	t.Parallel()
	for sqlite, postgres := range postgresQueries {
		if got, want := comparisons(postgres), comparisons(sqlite); !slices.Equal(got, want) {
			t.Errorf("the PostgreSQL text compares %q where its SQLite text compares %q:\n%s\n%s", got, want, postgres, sqlite)
		}
	}
}

// comparison is a column compared with a parameter, a literal or a
// column: the column's name, without its table's, the operator, and the
// other side, "param" for any parameter.
var comparison = regexp.MustCompile(`(?:\b[a-z]+\.)?\b([a-z_]+)\s*(<=|>=|<>|!=|<|>|=)\s*(\?\d*|\$\d+|'[^']*'|\d+\b|(?:[a-z]+\.)?[a-z_]+\b)`)

// comparisons are the comparisons query makes, sorted.
func comparisons(query string) []string {
	var out []string
	for _, m := range comparison.FindAllStringSubmatch(query, -1) {
		other := m[3]
		if strings.HasPrefix(other, "?") || strings.HasPrefix(other, "$") {
			other = "param"
		} else if _, col, ok := strings.Cut(other, "."); ok {
			other = col
		}
		out = append(out, m[1]+" "+m[2]+" "+other)
	}
	slices.Sort(out)
	return out
}

// TestApplicationName: a worker's connections are named "handoff " and
// its name, cut to the 63 bytes PostgreSQL keeps, never inside a
// character.
func TestApplicationName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		worker, want string
	}{
		{"w1", "handoff w1"},
		{strings.Repeat("w", 55), "handoff " + strings.Repeat("w", 55)},
		{strings.Repeat("w", 56), "handoff " + strings.Repeat("w", 55)},
		{strings.Repeat("w", 54) + "é", "handoff " + strings.Repeat("w", 54)},
		{strings.Repeat("w", 53) + "é", "handoff " + strings.Repeat("w", 53) + "é"},
	} {
		if got := applicationName(tt.worker); got != tt.want {
			t.Errorf("applicationName(%q) = %q (%d bytes), want %q", tt.worker, got, len(got), tt.want)
		}
	}
}

// fakeClock is a clock whose sleeps take no time: each one is recorded
// and moves the clock on by its length.
type fakeClock struct {
	now    time.Time
	pauses []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.pauses = append(c.pauses, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// TestWaitForServerBacksOff: on an injected clock, the wait for a full
// or starting server pauses as documented (50 ms first, twice as long
// each time, 2 s at most, the last pause cut to the wait left, then a
// last try), stops at once at a success or an error that waiting does
// not mend, and returns the last error.
func TestWaitForServerBacksOff(t *testing.T) {
	t.Parallel()
	full := &pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"}
	starting := &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}
	refused := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	for _, tt := range []struct {
		name   string
		wait   time.Duration
		errs   []error // connect's answers, in turn; the last again and again
		pauses []time.Duration
		tries  int
		want   error
	}{
		{"full for the whole wait", 10 * time.Second, []error{full}, ms(50, 100, 200, 400, 800, 1600, 2000, 2000, 2000, 850), 11, full},
		{"starting, then up", time.Minute, []error{starting, starting, starting, nil}, ms(50, 100, 200), 4, nil},
		{"a connection reset, then up", time.Minute, []error{syscall.ECONNRESET, nil}, ms(50), 2, nil},
		{"a wait shorter than the first pause", 30 * time.Millisecond, []error{full}, ms(30), 2, full},
		{"not running: waiting does not mend it", time.Minute, []error{refused}, nil, 1, refused},
		{"up at once", time.Minute, []error{nil}, nil, 1, nil},
	} {
		c := &fakeClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
		tries := 0
		err := waitForServer(t.Context(), tt.wait, func() error {
			err := tt.errs[min(tries, len(tt.errs)-1)]
			tries++
			return err
		}, c)
		if err != tt.want || tries != tt.tries || !slices.Equal(c.pauses, tt.pauses) {
			t.Errorf("%s: %v after %d tries, pauses %v; want %v after %d, pauses %v", tt.name, err, tries, c.pauses, tt.want, tt.tries, tt.pauses)
		}
	}
}

// TestCommitErrorClasses: a COMMIT that PostgreSQL refused with an error
// of the transaction wrote nothing, and its error says so as any other;
// one whose connection failed, whether the server said so (an error of
// class 08, connection exception, or 57, operator intervention) or the
// reply never came (the socket closed or was reset under it), may or may
// not have committed: ErrCommitUnknown. Either way the error names the
// write and keeps the driver's.
func TestCommitErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"a unique violation checked at commit", &pgconn.PgError{Code: "23505"}, false},
		{"a serialization failure, wrapped", fmt.Errorf("commit: %w", &pgconn.PgError{Code: "40001"}), false},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"protocol violation", &pgconn.PgError{Code: "08P01"}, true},
		{"terminated by an administrator", &pgconn.PgError{Code: "57P01"}, true},
		{"the socket closed before the reply", io.ErrUnexpectedEOF, true},
		{"the connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
	} {
		err := commitError("settling the row", tt.err)
		if got := errors.Is(err, ErrCommitUnknown); got != tt.unknown {
			t.Errorf("%s: %v is ErrCommitUnknown: %t, want %t", tt.name, err, got, tt.unknown)
		}
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), "settling the row") {
			t.Errorf("%s: %v, want the driver's error kept and the write named", tt.name, err)
		}
	}
}
