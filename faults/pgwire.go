package faults

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
)

// CommitCut loses one COMMIT on PostgreSQL, or its reply: the
// commit-lost and commit-reply-lost faults, at the level of the wire
// protocol. Armed for a worker at its before-commit point, the next
// COMMIT that one of the worker's connections sends is struck: with
// commit-lost it never leaves (the connection says it was written, then
// closes), and the server, which sees the connection end, rolls the
// transaction back; with commit-reply-lost it goes to the server, and the
// connection reads the server's reply, drops it and closes. Either way
// the Outbox hears its connection fail after it sent the COMMIT.
type CommitCut struct {
	mu     sync.Mutex
	worker string // the worker whose next COMMIT is struck; "" when none
	kind   Kind   // CommitLost or CommitReplyLost
	done   bool   // the COMMIT was struck
	tag    string // what the server answered the COMMIT, or its error
}

// Arm has worker's next COMMIT struck by k, CommitLost or
// CommitReplyLost.
func (c *CommitCut) Arm(worker string, k Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker, c.kind, c.done, c.tag = worker, k, false, ""
}

// take reports whether the COMMIT that worker's connection sends now is
// the one to strike, and how; the cut is spent.
func (c *CommitCut) take(worker string) (Kind, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.worker != worker || c.done {
		return "", false
	}
	c.done = true
	return c.kind, true
}

// dropped records what the server answered the COMMIT whose reply was
// dropped.
func (c *CommitCut) dropped(tag string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tag = tag
}

// Disarm ends the cut, and returns an error when it was armed but did
// not do what the model predicts: a COMMIT struck and, when its reply
// was lost, committed.
func (c *CommitCut) Disarm() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	worker, kind, done, tag := c.worker, c.kind, c.done, c.tag
	c.worker, c.kind, c.done, c.tag = "", "", false, ""
	switch {
	case worker == "":
		return nil
	case !done:
		return fmt.Errorf("handoff: worker %s sent no COMMIT after its before-commit point: no %s", worker, kind)
	case kind == CommitReplyLost && tag != "COMMIT":
		return fmt.Errorf("handoff: the server answered worker %s's COMMIT, whose reply was lost, with %q: it did not commit", worker, tag)
	}
	return nil
}

// commitQuery is the message pgx sends to commit a transaction: a simple
// Query of "commit". Encoding fails only on a message too long for its
// length field.
var commitQuery = func() []byte {
	b, err := (&pgproto3.Query{String: "commit"}).Encode(nil)
	if err != nil {
		panic(err)
	}
	return b
}()

// IsCommitQuery reports whether b, one write of a connection to
// PostgreSQL, is the message pgx sends to commit a transaction, alone.
func IsCommitQuery(b []byte) bool { return bytes.Equal(b, commitQuery) }

// What a cutConn's read fails with once it struck a COMMIT.
var (
	errCommitLost = errors.New("handoff: the connection died before the COMMIT reached the server (commit-lost)")
	errReplyCut   = errors.New("handoff: the connection died before the COMMIT's reply (commit-reply-lost)")
)

// cutConn is a connection of an Outbox to the server that can lose a
// COMMIT it sends, or its reply (see CommitCut).
type cutConn struct {
	net.Conn
	cut      *CommitCut
	worker   string
	lost     atomic.Bool // it kept the COMMIT from the server
	dropping atomic.Bool // it sent the COMMIT whose reply it drops
}

func (c *cutConn) Write(b []byte) (int, error) {
	if IsCommitQuery(b) {
		switch k, ok := c.cut.take(c.worker); {
		case ok && k == CommitLost:
			c.lost.Store(true)
			c.Conn.Close() // a read already waiting fails too
			return len(b), nil
		case ok:
			c.dropping.Store(true)
		}
	}
	return c.Conn.Write(b)
}

// Read reads from the server. After the COMMIT it kept back (and closed
// the connection), it fails. After the COMMIT whose reply it drops, it
// reads that reply up to the server's ReadyForQuery, records its command
// tag, closes the connection and fails. pgx may read from another
// goroutine while it writes: a read that was waiting when the COMMIT went
// out holds the start of the reply.
func (c *cutConn) Read(b []byte) (int, error) {
	if c.lost.Load() {
		return 0, errCommitLost
	}
	if !c.dropping.Load() {
		n, err := c.Conn.Read(b)
		if c.lost.Load() {
			return 0, errCommitLost
		}
		if n == 0 || !c.dropping.Load() {
			return n, err
		}
		return 0, c.drop(io.MultiReader(bytes.NewReader(slices.Clone(b[:n])), c.Conn))
	}
	return 0, c.drop(c.Conn)
}

// drop reads the COMMIT's reply from r, records its tag, closes the
// connection and returns the error its reader gets.
func (c *cutConn) drop(r io.Reader) error {
	c.dropping.Store(false)
	tag, err := readReply(r)
	if err != nil {
		tag = "a failed read: " + err.Error()
	}
	c.cut.dropped(tag)
	c.Conn.Close()
	return errReplyCut
}

// readReply reads the server's messages up to its ReadyForQuery and
// returns the command tag of its CommandComplete, or "error" for an
// ErrorResponse. A reply's messages are short: a message's length over
// 1 MiB is a stream that went wrong, not one to read. What it reads past
// the ReadyForQuery is lost with the connection, which drop closes.
func readReply(r io.Reader) (string, error) {
	server := pgproto3.NewFrontend(r, nil)
	server.SetMaxBodyLen(1 << 20)
	tag := ""
	for {
		msg, err := server.Receive()
		if err != nil {
			return "", err
		}
		switch msg := msg.(type) {
		case *pgproto3.CommandComplete:
			tag = string(msg.CommandTag)
		case *pgproto3.ErrorResponse:
			tag = "error"
		case *pgproto3.ReadyForQuery:
			return tag, nil
		}
	}
}

// Wrap is the WrapConn of worker's connections (see system.Harness): each
// is a connection that loses the COMMIT c is armed for, or its reply.
func (c *CommitCut) Wrap(worker string) func(net.Conn) net.Conn {
	return func(conn net.Conn) net.Conn { return &cutConn{Conn: conn, cut: c, worker: worker} }
}
