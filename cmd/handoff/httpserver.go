package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// What every server of the command line (crm serve, the operations
// address of work and crm serve, ui) allows a client: how long it may
// take to send its headers and its request, to read its answer, to keep
// an idle connection, and how large its headers may be. A client slower
// than that, or larger, is cut off or refused (431 for headers too
// large) before it can hold a connection, memory or a database handle.
type serverLimits struct {
	readHeader, read, write, idle time.Duration
	// maxHeaderBytes is the most a request's line and headers may hold,
	// in bytes.
	maxHeaderBytes int
}

// headerSlack is what net/http reads past http.Server.MaxHeaderBytes
// before it refuses a request's headers: a server whose limit is L sets
// MaxHeaderBytes to L - headerSlack, so that 431 comes past L itself.
const headerSlack = 4096

// defaultLimits are the limits of every server the command line runs.
var defaultLimits = serverLimits{
	readHeader:     5 * time.Second,
	read:           10 * time.Second,
	write:          10 * time.Second,
	idle:           time.Minute,
	maxHeaderBytes: 16 << 10,
}

// limitsHelp says the limits in words, for the help of the commands that
// listen.
func limitsHelp() string {
	l := defaultLimits
	return fmt.Sprintf("A client must send its headers within %v and its request within %v, and read the answer within %v; headers over %d KiB (request line included) are refused (431).",
		l.readHeader, l.read, l.write, l.maxHeaderBytes>>10)
}

// newHTTPServer returns a server of handler with limits l.
func newHTTPServer(handler http.Handler, l serverLimits) *http.Server {
	return &http.Server{Handler: handler, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read,
		WriteTimeout: l.write, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes - headerSlack}
}

// serveUntil serves srv on ln until ctx is cancelled, then shuts it down:
// requests under way finish, for at most five seconds.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		stopped <- srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-stopped
}
