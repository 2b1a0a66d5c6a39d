package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// statusEvery is how often work redraws its status line on a terminal: a
// few times a second. Tests draw more often.
var statusEvery = 250 * time.Millisecond

// rateWindow is how many of the latest draws the status line's rate
// spans: two seconds at statusEvery.
const rateWindow = 8

// stderrIsTerminal says whether work's stderr is a terminal, where it
// shows a status line. Tests replace it to see the line in a buffer.
var stderrIsTerminal = isTerminal

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// statusLine is a terminal with one status line under the log lines,
// rewritten in place. A log line clears it, is written whole, and the
// next draw shows the status again below it: the log lines stay intact.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown string // the status line on the terminal; "" when none is
}

// Write writes log lines p above the status line. slog writes each log
// line in one call, so no line is split.
func (s *statusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.erase(); err != nil {
		return 0, err
	}
	return s.w.Write(p)
}

// draw shows text as the status line, unless it is shown already.
func (s *statusLine) draw(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if text == s.shown {
		return
	}
	if _, err := io.WriteString(s.w, "\r"+text+"\x1b[K"); err == nil {
		s.shown = text
	}
}

// clear erases the status line, before the command's last words.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.erase() // a terminal that fails to erase has nothing to clean
}

// erase erases the status line if one is shown; s.mu is held.
func (s *statusLine) erase() error {
	if s.shown == "" {
		return nil
	}
	s.shown = ""
	_, err := io.WriteString(s.w, clearLine)
	return err
}

// sample is the number of deliveries made by a moment.
type sample struct {
	at time.Time
	n  int
}

// showStatus draws the pool's status on s at once and then every
// statusEvery, until ctx is done.
func showStatus(ctx context.Context, p *system.Pool, s *statusLine) {
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	var window []sample
	for {
		results := p.Results()
		n := 0
		for _, c := range results {
			n += c
		}
		window = append(window, sample{time.Now(), n})
		if len(window) > rateWindow {
			window = window[1:]
		}
		s.draw(statusText(results, rate(window), len(p.Outboxes)))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rate is the deliveries per second over window, oldest first; 0 until
// it spans some time.
func rate(window []sample) float64 {
	if len(window) < 2 {
		return 0
	}
	first, last := window[0], window[len(window)-1]
	d := last.at.Sub(first.at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(last.n-first.n) / d
}

// statusText is the status line of a pool of workers whose deliveries so
// far had results, at rate deliveries per second lately. It is short: a
// line wider than the terminal wraps, and is no longer rewritten in place.
func statusText(results map[string]int, rate float64, workers int) string {
	text := fmt.Sprintf("work: sent %d, retrying %d, blocked %d, stale %d", results["sent"], results["pending"], results["blocked"], results["stale"])
	if e := results["error"]; e > 0 {
		text += fmt.Sprintf(", failed %d", e)
	}
	return text + fmt.Sprintf(" | %.1f/s, %s", rate, words.HowMany(workers, "worker"))
}
