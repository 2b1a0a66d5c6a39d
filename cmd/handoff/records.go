package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/outboxlab/handoff/faults"
	"github.com/outboxlab/handoff/internal/sim"
	"github.com/outboxlab/handoff/internal/words"
	"github.com/outboxlab/handoff/system"
)

// approve records an approval in an app database, creating it if needed.
func approve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (created if missing)")
	caseID := fs.String("case", "", "case id: 1 to 80 ASCII letters, digits or '-'")
	title := fs.String("title", "", "task title: 1 to 160 characters after trimming")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app", "case", "title"); err != nil {
		return err
	}
	// Validate before opening, so refused input does not even create a file.
	if _, err := system.NewApproval(*caseID, *title); err != nil {
		return err
	}
	app, err := system.Open(ctx, *appPath, system.Options{})
	if err != nil {
		return err
	}
	defer app.Close()
	key, err := app.RecordApproval(ctx, *caseID, *title)
	if err != nil {
		return err
	}
	row, err := app.Row(ctx, key)
	if err != nil {
		return err
	}
	budget, err := app.Budget(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approved %s: outbox row %s\n", key, describeRow(row, budget))
	return nil
}

// deliver makes one delivery attempt, with an optional fault, to a CRM
// database file or to an HTTP receiver.
func deliver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deliver", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist, unless --create-crm); or --crm-url")
	crmURL := fs.String("crm-url", "", "the CRM's HTTP receiver (handoff crm serve, or one with its contract), instead of --crm")
	createCRM := fs.Bool("create-crm", false, "create the CRM database if it does not exist")
	fault := fs.String("fault", "", deliverFaultHelp())
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	if err := oneCRM(fs); err != nil {
		return err
	}
	if *createCRM && *crmURL != "" {
		return fmt.Errorf("%w: --create-crm goes with --crm PATH, not --crm-url", errUsage)
	}
	var kind faults.Kind
	if *fault != "" {
		k, err := parseDeliverFault(*fault)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		kind = k
	}
	var remote *remoteCRM
	if *crmURL != "" {
		r, err := newRemoteCRM(*crmURL, 1)
		if err != nil {
			return err
		}
		remote = r
		defer r.client.CloseIdleConnections()
	}
	if err := appMustExist(ctx, *appPath); err != nil {
		return err
	}
	creating := false
	if remote != nil {
		// Before the app database is opened: a receiver that does not
		// state its contract leaves the app file as it was.
		if err := remote.readContract(ctx, system.DefaultSendTimeout); err != nil {
			return err
		}
	} else {
		if err := system.CheckPath(*crmPath); err != nil {
			return err
		}
		// A missing or empty CRM file is created only when asked for, and
		// only for an app database that does not deliver to a CRM already.
		if info, err := os.Stat(*crmPath); err != nil || info.Size() == 0 {
			if !*createCRM {
				return fmt.Errorf("the CRM database %s does not exist or is empty; create it with handoff crm init --crm %s, or pass --create-crm", *crmPath, *crmPath)
			}
			creating = true
		}
	}
	var injector faults.Injector
	// deliver is one attempt by hand: it retries at once, with no backoff,
	// and as the worker "deliver" it first releases what an earlier
	// deliver left leased when it died. A deliver running at the same time
	// then loses its fence and writes nothing (stale).
	app, err := system.Open(ctx, *appPath, system.Options{Hook: injector.Hook(), Worker: deliverWorker, NoBackoff: true})
	if err != nil {
		return err
	}
	defer app.Close()
	var target system.Receiver
	if remote != nil {
		if err := bindCRM(ctx, app, remote.contract.Identity, remote.url, remote.taskKey); err != nil {
			return err
		}
		// A simulated fault wraps the sender; the claim still hears the
		// retention the receiver stated.
		target = retaining{faults.Network(kind, remote.sender), remote.sender}
	} else {
		bound, err := app.Receiver(ctx)
		if err != nil {
			return err
		}
		if creating && bound != "" {
			return fmt.Errorf("%s delivers to CRM %s already; --create-crm would make another, whose task ids name other tasks: is %s the right path?", shown(*appPath), bound, *crmPath)
		}
		if err := system.CheckPath(*crmPath); err != nil {
			return err
		}
		crm, err := openCRMFile(ctx, *crmPath, creating, stderr)
		if err != nil {
			return err
		}
		defer crm.Close()
		identity, err := crm.Identity(ctx)
		if err != nil {
			return err
		}
		if err := bindCRM(ctx, app, identity, *crmPath, fileTaskKey(crm)); err != nil {
			return err
		}
		target = faults.Network(kind, crm)
	}
	if _, err := app.Recover(ctx); err != nil {
		return err
	}

	injector.Arm(sim.FaultPoint(kind))
	d, err := app.DeliverOne(ctx, target)
	if p := injector.Crashed(); p != "" {
		return fmt.Errorf("simulated crash at %s delivering %s: attempt %d of %d counted; deliver again", p, d.Key, d.Attempts, app.MaxAttempts())
	}
	if err != nil {
		return err
	}
	switch d.Result {
	case system.Idle:
		counts, err := countStates(ctx, app)
		if err != nil {
			return err
		}
		switch {
		case counts[system.Pending] > 0:
			fmt.Fprintf(stdout, "idle: %s, none eligible before %s (leased by another worker, or waiting out its backoff)\n",
				words.HowMany(counts[system.Pending], "pending row"), d.NextEligible.UTC().Format("2006-01-02 15:04:05.000Z"))
		case counts[system.Blocked] > 0:
			fmt.Fprintf(stdout, "idle: nothing pending, but %s for a person (handoff inspect --state blocked)\n", words.Agree(counts[system.Blocked], "blocked row", "waits", "wait"))
		default:
			fmt.Fprintln(stdout, "idle: nothing pending")
		}
	case system.ResultStale:
		fmt.Fprintf(stdout, "stale %s: attempt %d of %d was sent, but another worker or a person acted on the row since; nothing recorded\n", d.Key, d.Attempts, app.MaxAttempts())
	case system.ResultSent:
		fmt.Fprintf(stdout, "sent %s: CRM task %d (attempt %d of %d)\n", d.Key, d.RemoteID, d.Attempts, app.MaxAttempts())
	case system.ResultPending:
		fmt.Fprintf(stdout, "pending %s: %s failure (attempt %d of %d); deliver again to retry with the same key\n", d.Key, d.LastError, d.Attempts, app.MaxAttempts())
	default:
		fmt.Fprintf(stdout, "blocked %s: %s after %s; a person must reconcile this key in the CRM\n", d.Key, d.LastError, words.HowMany(d.Attempts, "attempt"))
	}
	return nil
}

// deliverWorker is the worker name of the deliver command.
const deliverWorker = "deliver"

// errMissing says that a database file that must exist does not.
var errMissing = errors.New("does not exist")

// appMustExist refuses an app database that is not there, as mustExist
// does a file; one named by a PostgreSQL URL must be there in its schema,
// which is only read, so that a refused one is not created.
func appMustExist(ctx context.Context, path string) error {
	if !system.IsPostgres(path) {
		return mustExist("app", path)
	}
	app, err := system.OpenReadOnly(ctx, path)
	if err != nil {
		return err
	}
	return app.Close()
}

// shown is the app database's path or URL as a message shows it: a URL
// without its password.
func shown(path string) string {
	if system.IsPostgres(path) {
		return system.Redact(path)
	}
	return path
}

// mustExist refuses a database file that is not there: only approve, crm
// init and deliver --create-crm create one.
func mustExist(what, path string) error {
	if err := system.CheckPath(path); err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the %s database %s %w", what, path, errMissing)
		}
		return err
	}
	return nil
}

// countStates counts the rows in each state.
func countStates(ctx context.Context, app *system.Outbox) (map[system.State]int, error) {
	snap, err := app.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return stateCounts(snap.Outbox), nil
}

func stateCounts(rows []system.Row) map[system.State]int {
	c := map[system.State]int{system.Pending: 0, system.Sent: 0, system.Blocked: 0}
	for _, r := range rows {
		c[r.State]++
	}
	return c
}

// describeRow says where a row stands in words.
func describeRow(r system.Row, maxAttempts int) string {
	s := fmt.Sprintf("%s, %d of %d attempts", r.State, r.Attempts, maxAttempts)
	if r.State == system.Sent {
		s += fmt.Sprintf(", CRM task %d", r.RemoteID)
	}
	if r.LastError != "" {
		s += ", last error " + r.LastError
	}
	return s
}

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
	findings, files, err := sim.CheckFiles(ctx, *appPath, *crmPath)
	if err != nil {
		return err
	}
	v := inspection{appPath: shown(*appPath), crmPath: *crmPath, files: files, findings: findings, now: time.Now()}
	if v.audit, err = readAudit(ctx, *appPath); err != nil {
		v.findings = append(v.findings, sim.Finding{Where: v.appPath, What: "reading the audit log: " + err.Error()})
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
	files            sim.Files
	listed           []system.Row // the rows --state and --limit let through
	unlisted         int          // the rows --state let through and --limit held back
	findings         []sim.Finding
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
	for _, r := range v.listed {
		fmt.Fprintf(w, "  %s %s\n", system.OneLine(r.Key), system.OneLine(describeRow(r, max(v.files.Budget, system.DefaultMaxAttempts))))
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

// age prints d to the second, or to the minute past an hour.
func age(d time.Duration) string {
	if d >= time.Hour {
		return d.Truncate(time.Minute).String()
	}
	return d.Truncate(time.Second).String()
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

type jsonProblem struct {
	Where string `json:"where"`
	What  string `json:"what"`
}

// optional is a pointer to v, or nil for v's zero value: JSON null.
func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// stamp is t in RFC 3339 with milliseconds, or nil when unknown.
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
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
