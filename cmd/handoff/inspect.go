package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/filecheck"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// inspect shows the outbox, and the CRM's tasks when --crm is given, read
// only: it writes nothing and leaves no file behind. It checks the files
// as it reads them, and exits 1 when anything is wrong with them.
func inspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist; optional): its tasks are listed and every sent row is checked against them")
	state := fs.String("state", "all", "list only rows in this state: pending, sent, blocked or all")
	limit := fs.Int("limit", 100, "list at most this many rows, oldest first; 0 lists all")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	states, err := parseStates(*state)
	if err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit is %d, want 0 (all) or more", errUsage, *limit)
	}
	findings, files, err := filecheck.CheckFiles(ctx, *appPath, *crmPath)
	if err != nil {
		return err
	}
	v := inspection{appPath: shown(*appPath), crmPath: *crmPath, files: files, findings: findings, now: time.Now()}
	if v.audit, err = readAudit(ctx, *appPath); err != nil {
		v.findings = append(v.findings, filecheck.Finding{Where: v.appPath, What: "reading the audit log: " + err.Error()})
	}
	for _, r := range files.App.Outbox {
		if !slices.Contains(states, r.State) {
			continue
		}
		if *limit == 0 || len(v.listed) < *limit {
			v.listed = append(v.listed, r)
		} else {
			v.unlisted++
		}
	}
	if *asJSON {
		if err := v.writeJSON(stdout); err != nil {
			return err
		}
	} else {
		v.writeText(stdout)
	}
	if len(v.findings) > 0 {
		return fmt.Errorf("%s with the files (listed above)", words.HowMany(len(v.findings), "problem"))
	}
	return nil
}

// readAudit reads the audit log of the app database at path, read only.
func readAudit(ctx context.Context, path string) ([]system.AuditEntry, error) {
	app, err := system.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	defer app.Close()
	return app.Audit(ctx)
}

// parseStates reads --state: one state, or all of them.
func parseStates(s string) ([]system.State, error) {
	all := []system.State{system.Pending, system.Sent, system.Blocked}
	if s == "all" {
		return all, nil
	}
	if st := system.State(s); slices.Contains(all, st) {
		return []system.State{st}, nil
	}
	return nil, fmt.Errorf("%w: --state is %q, want pending, sent, blocked or all", errUsage, s)
}

// inspection is what inspect shows.
type inspection struct {
	appPath, crmPath string
	files            filecheck.Files
	listed           []system.Row // the rows --state and --limit let through
	unlisted         int          // the rows --state let through and --limit held back
	findings         []filecheck.Finding
	audit            []system.AuditEntry // the whole audit log, oldest first
	now              time.Time
}

// auditInText is how many entries of the audit log inspect's text shows:
// the latest.
const auditInText = 20

func (v inspection) writeText(w io.Writer) {
	rows := v.files.App.Outbox
	c := stateCounts(rows)
	fmt.Fprintf(w, "app database %s: %d pending, %d sent, %d blocked\n", v.appPath, c[system.Pending], c[system.Sent], c[system.Blocked])
	budget := rowBudget(max(v.files.Budget, system.DefaultMaxAttempts))
	if len(v.listed) > 0 {
		fmt.Fprintf(w, "  attempts of every row: %s\n", budget.source())
	}
	for _, r := range v.listed {
		fmt.Fprintf(w, "  %s %s\n", system.OneLine(r.Key), system.OneLine(describeRow(r, budget)))
		fmt.Fprintf(w, "    %s\n", v.times(r))
		fmt.Fprintf(w, "    %s\n", system.OneLine(v.claim(r)))
	}
	if v.unlisted > 0 {
		fmt.Fprintf(w, "  ... %d more (--limit 0 lists all)\n", v.unlisted)
	}
	if c[system.Blocked] > 0 {
		fmt.Fprintf(w, "%s a person: reconcile each key in the CRM before anything else is sent for it\n", words.Agree(c[system.Blocked], "blocked row", "needs", "need"))
	}
	if v.crmPath != "" && len(v.findings) == 0 {
		fmt.Fprintf(w, "CRM database %s: %s; every sent row names its task\n", v.crmPath, words.HowMany(len(v.files.Tasks), "task"))
		for _, t := range v.files.Tasks {
			fmt.Fprintf(w, "  task %d %s %s\n", t.ID, system.OneLine(t.Key), system.OneLine(t.Payload))
		}
	}
	if len(v.audit) > 0 {
		shown := v.audit[max(0, len(v.audit)-auditInText):]
		fmt.Fprintf(w, "audit log: %s", words.HowMany(len(v.audit), "entry"))
		if len(shown) < len(v.audit) {
			fmt.Fprintf(w, ", the last %d (--json has all)", len(shown))
		}
		fmt.Fprintln(w)
		for _, e := range shown {
			fmt.Fprintf(w, "  %s %s %s %s: %s\n", e.At.UTC().Format("2006-01-02 15:04:05Z"), system.OneLine(e.Actor), e.Action, system.OneLine(e.Key), system.OneLine(e.Reason))
		}
	}
	for _, f := range v.findings {
		fmt.Fprintf(w, "PROBLEM %s\n", system.OneLine(f.String()))
	}
}

// claim says what keeps workers off a row: its fence, the lease a worker
// holds on it, and when a pending row may be attempted next if that is
// still to come.
func (v inspection) claim(r system.Row) string {
	parts := []string{fmt.Sprintf("fence %d", r.Fence)}
	if r.LeaseOwner != "" {
		lease := fmt.Sprintf("leased by %s until %s", r.LeaseOwner, r.LeaseUntil.UTC().Format("2006-01-02 15:04:05.000Z"))
		if r.LeaseUntil.After(v.now) {
			lease += fmt.Sprintf(" (in %s)", age(r.LeaseUntil.Sub(v.now)))
		} else {
			lease += " (ran out)"
		}
		parts = append(parts, lease)
	}
	if r.State == system.Pending && r.NextAttemptAt.After(v.now) {
		parts = append(parts, fmt.Sprintf("next attempt at %s (in %s)", r.NextAttemptAt.UTC().Format("2006-01-02 15:04:05.000Z"), age(r.NextAttemptAt.Sub(v.now))))
	}
	return strings.Join(parts, ", ")
}

// times says when a row was approved, last attempted and sent, with ages.
func (v inspection) times(r system.Row) string {
	parts := []string{"approved " + v.when(r.CreatedAt)}
	if !r.LastAttemptAt.IsZero() {
		parts = append(parts, "last attempt "+v.when(r.LastAttemptAt))
	}
	if !r.SentAt.IsZero() {
		parts = append(parts, "sent "+v.when(r.SentAt))
	}
	return strings.Join(parts, ", ")
}

// when prints t in UTC with its age, or "at an unknown time" for a time
// an older handoff did not record.
func (v inspection) when(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format("2006-01-02 15:04:05Z"), age(v.now.Sub(t)))
}

// jsonRow is one outbox row in inspect's JSON, with its approval.
type jsonRow struct {
	Key           string  `json:"key"`
	State         string  `json:"state"`
	Attempts      int     `json:"attempts"`
	RemoteID      *int64  `json:"remote_id"`
	LastError     *string `json:"last_error"`
	CaseID        string  `json:"case_id"`
	Title         string  `json:"title"`
	Payload       string  `json:"payload"`
	ApprovedAt    *string `json:"approved_at"`
	LastAttemptAt *string `json:"last_attempt_at"`
	SentAt        *string `json:"sent_at"`
	NextAttemptAt *string `json:"next_attempt_at"`
	LeaseOwner    *string `json:"lease_owner"`
	LeaseUntil    *string `json:"lease_until"`
	Fence         int64   `json:"fence"`
}

// jsonAudit is one entry of the audit log in inspect's JSON.
type jsonAudit struct {
	At     *string `json:"at"`
	Actor  string  `json:"actor"`
	Action string  `json:"action"`
	Key    string  `json:"key"`
	Reason string  `json:"reason"`
}

type jsonTask struct {
	ID      int64  `json:"id"`
	Key     string `json:"key"`
	Payload string `json:"payload"`
}

func (v inspection) writeJSON(w io.Writer) error {
	approvals := map[string]system.Approval{}
	for _, a := range v.files.App.Approvals {
		approvals[a.Key] = a
	}
	out := struct {
		App         string               `json:"app"`
		CRM         *string              `json:"crm"`
		Counts      map[system.State]int `json:"counts"`
		Outbox      []jsonRow            `json:"outbox"`
		More        int                  `json:"more"`
		CRMTasks    []jsonTask           `json:"crm_tasks"`
		CRMIdentity *string              `json:"crm_identity"`
		DeliversTo  *string              `json:"delivers_to"`
		Audit       []jsonAudit          `json:"audit"`
		Problems    []jsonProblem        `json:"problems"`
	}{App: v.appPath, CRM: optional(v.crmPath), Counts: stateCounts(v.files.App.Outbox), Outbox: []jsonRow{}, More: v.unlisted,
		CRMIdentity: optional(v.files.Identity), DeliversTo: optional(v.files.Bound), Audit: []jsonAudit{}, Problems: []jsonProblem{}}
	for _, r := range v.listed {
		a := approvals[r.Key]
		row := jsonRow{Key: r.Key, State: string(r.State), Attempts: r.Attempts,
			RemoteID: optional(r.RemoteID), LastError: optional(r.LastError), CaseID: a.CaseID, Title: a.Title, Payload: a.Payload,
			ApprovedAt: stamp(r.CreatedAt), LastAttemptAt: stamp(r.LastAttemptAt), SentAt: stamp(r.SentAt),
			LeaseOwner: optional(r.LeaseOwner), Fence: r.Fence}
		if r.State == system.Pending {
			row.NextAttemptAt = stamp(r.NextAttemptAt)
		}
		if r.LeaseOwner != "" {
			row.LeaseUntil = stamp(r.LeaseUntil)
		}
		out.Outbox = append(out.Outbox, row)
	}
	for _, e := range v.audit {
		out.Audit = append(out.Audit, jsonAudit{At: stamp(e.At), Actor: e.Actor, Action: string(e.Action), Key: e.Key, Reason: e.Reason})
	}
	if v.crmPath != "" {
		out.CRMTasks = []jsonTask{}
		for _, t := range v.files.Tasks {
			out.CRMTasks = append(out.CRMTasks, jsonTask(t))
		}
	}
	for _, f := range v.findings {
		out.Problems = append(out.Problems, jsonProblem(f))
	}
	return encodeJSON(w, out)
}
