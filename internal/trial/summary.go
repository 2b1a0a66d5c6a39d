package trial

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/outboxlab/handoff/internal/backend"
	"github.com/outboxlab/handoff/internal/words"
)

// The message and the result of a work log line in text.
var (
	logMessage = regexp.MustCompile(`msg=("[^"]*"|\S+)`)
	logResult  = regexp.MustCompile(` result=(\S+)`)
)

// logLineKind names a work log line by its message and result, for the
// summary: "delivery result=sent", "worker started"; another line by its
// first words.
func logLineKind(line string) string {
	msg := logMessage.FindStringSubmatch(line)
	if msg == nil {
		const most = 60
		if len(line) > most {
			line = line[:most] + "…"
		}
		return line
	}
	kind := strings.Trim(msg[1], `"`)
	if r := logResult.FindStringSubmatch(line); r != nil {
		kind += " result=" + r[1]
	}
	return kind
}

// summary is what trial prints: the JSON form, and the text's data.
type summary struct {
	Seed           uint64          `json:"seed"`
	Trials         int             `json:"trials"`
	Workers        int             `json:"workers"`
	Rows           int             `json:"rows"`
	CRMURL         *string         `json:"crm_url"`
	Kills          int             `json:"kills"`
	KillsByTarget  map[string]int  `json:"kills_by_target"`
	Landed         map[string]int  `json:"landed"`
	LastLines      map[string]int  `json:"last_lines"`
	Sent           int             `json:"sent"`
	Blocked        int             `json:"blocked"`
	Deliveries     int             `json:"deliveries"`
	Violations     int             `json:"violations"`
	Problems       []problem       `json:"problems"`
	ElapsedSeconds float64         `json:"elapsed_seconds"`
	Dir            *string         `json:"dir"`
	Backend        backend.Backend `json:"backend"`
	Schemas        []string        `json:"kept_app_databases"` // PostgreSQL URLs, kept with Dir
	KillLog        []killRecord    `json:"kill_log"`
}

// problem is one violation found after a trial.
type problem struct {
	Trial int    `json:"trial"`
	Where string `json:"where"`
	What  string `json:"what"`
}

// add counts the trial cfg ran into s.
func (s *summary) add(cfg config, r result) {
	for _, k := range r.kills {
		s.Kills++
		target := "worker"
		if k.Target == "server" {
			target = "server"
		} else {
			s.LastLines[logLineKind(k.LastLine)]++
		}
		s.KillsByTarget[target]++
		s.Landed[k.Landed]++
		s.KillLog = append(s.KillLog, k)
	}
	s.Sent += r.sent
	s.Blocked += r.blocked
	s.Deliveries += r.deliveries
	for _, f := range r.findings {
		s.Violations++
		s.Problems = append(s.Problems, problem{Trial: cfg.index, Where: f.Where, What: f.What})
	}
}

// writeText prints the summary for a person; stopped says the last trial
// ended before its drain and checks, so its outcome was not read.
func (s summary) writeText(w io.Writer, stopped bool) {
	fmt.Fprintf(w, "trials: %d (seed %d), %s, %s each, %.1fs\n", s.Trials, s.Seed, words.HowMany(s.Workers, "work process"), words.HowMany(s.Rows, "row"), s.ElapsedSeconds)
	fmt.Fprintf(w, "kills: %d (%d of the server, %d of workers)\n", s.Kills, s.KillsByTarget["server"], s.KillsByTarget["worker"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(s.Landed) > 0 {
		fmt.Fprintln(tw, "where the kills landed:")
		for _, k := range sortedKeys(s.Landed) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, s.Landed[k])
		}
	}
	if len(s.LastLines) > 0 {
		fmt.Fprintln(tw, "a killed worker's last log line:")
		for _, k := range sortedKeys(s.LastLines) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, s.LastLines[k])
		}
	}
	tw.Flush()
	if stopped {
		fmt.Fprintln(w, "outcome: not read, the last trial stopped before its drain and checks (its files are kept; handoff inspect and handoff check read them)")
	} else {
		fmt.Fprintf(w, "outcome: %s sent, %d blocked; %s logged\n", words.HowMany(s.Sent, "row"), s.Blocked, words.HowMany(s.Deliveries, "delivery"))
	}
	fmt.Fprintf(w, "violations: %d\n", s.Violations)
	for _, p := range s.Problems {
		fmt.Fprintf(w, "  trial %d: %s: %s\n", p.Trial, p.Where, p.What)
	}
	if s.Dir != nil {
		fmt.Fprintf(w, "files kept in %s\n", *s.Dir)
	}
	for _, app := range s.Schemas {
		fmt.Fprintf(w, "app database kept in %s\n", app)
	}
}

// sortedKeys returns the keys of m, most counted first.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// writeJSON prints the summary as one indented JSON object.
func (s summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// optional is a pointer to s, or nil for "": JSON null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
