package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/outboxlab/handoff/system"
)

// The operations address of a long-running command (work, crm serve,
// with --metrics-addr): /metrics for Prometheus, /healthz for a process
// supervisor (the process runs and answers), /readyz for an orchestrator
// (what the process needs answers: its database, its receiver). None of
// it shows a key, a payload or a password: counts and times only.

// metricsHelp is the help of --metrics-addr.
const metricsHelp = "serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT, without authentication (counts and times, no keys, payloads or passwords); empty: none"

// readyTimeout bounds each check of /readyz.
const readyTimeout = 2 * time.Second

// readiness is one thing /readyz checks: its name, and the check.
type readiness struct {
	name  string
	check func(ctx context.Context) error
}

// opsHandler serves /metrics with metrics, /healthz, and /readyz with
// checks.
func opsHandler(metrics http.Handler, checks []readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		status, body := http.StatusOK, ""
		for _, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			err := c.check(ctx)
			cancel()
			if err != nil {
				status = http.StatusServiceUnavailable
				body += fmt.Sprintf("%s: not ready: %s\n", c.name, system.OneLine(err.Error()))
			} else {
				body += c.name + ": ok\n"
			}
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	})
	return mux
}

// serveOps listens on addr and serves h there until ctx is cancelled, in
// the background; it returns the address it listens on. A failure to
// serve later is logged.
func serveOps(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv := newHTTPServer(h, defaultLimits)
	go func() {
		if err := serveUntil(ctx, srv, ln); err != nil {
			log.Error("operations address", "error", err.Error())
		}
	}()
	return ln.Addr(), nil
}
