// Package ui is the page for the person on call: the outbox by state, a
// page at a time; each row's history from its times and the audit log;
// the rows that need a person; and the two repairs a person may make,
// requeue and reconcile, through the system's operator actions, with
// their rules, fences and audit. It is server-rendered HTML
// (html/template) with its style embedded and no script, so it needs
// nothing from outside. It is read-only unless given a token; see
// session.go for how a person proves who may act.
package ui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxlab/handoff/system"
)

// Config is what the page shows and how it may act.
type Config struct {
	// App is the outbox the page shows, and acts on when Operators is
	// set.
	App *system.Outbox
	// AppShown names the app database on the page: its path, or its URL
	// without the password.
	AppShown string
	// CRMShown names the receiver, "" when none was given.
	CRMShown string
	// TasksOf, when set, lists the tasks the receiver holds for a key,
	// for a person deciding how to reconcile.
	TasksOf func(ctx context.Context, key string) ([]system.Task, error)
	// Retention is the receiver's retention, which requeue respects; nil
	// means forever.
	Retention func(ctx context.Context) (time.Duration, error)
	// Operators, when set, lets a person who logs in with a token of
	// theirs act, and names them in the audit; nil, the page is
	// read-only.
	Operators *Operators
	// LoopbackOnly refuses requests for any host name but loopback's:
	// for a page that listens on loopback.
	LoopbackOnly bool
	// PublicHost, when set, is the host name under which a proxy that
	// serves HTTPS forwards the page: the page answers no other Host,
	// shows nothing but its login before a person logs in with a token
	// (which it then needs), expects its forms from https://PublicHost,
	// and its cookies are Secure. For a page reached off loopback.
	PublicHost string
	// PageRows is how many rows a page lists; 0 means 100.
	PageRows int
	// Now is the clock for ages; nil means time.Now.
	Now func() time.Time
	// LoginDelay is how long a login with a wrong token waits before its
	// answer, so that guessing is slow; 0 means DefaultLoginDelay.
	LoginDelay time.Duration
	// Log hears every action, every refused one, and every failed login.
	Log *slog.Logger
}

// ErrPublicNeedsToken refuses a page served under a public host name
// without a token: it would show every row to whoever reaches it.
var ErrPublicNeedsToken = errors.New("ui: a page with a public host name needs a token, for reading as for repairs")

// MaxFormBytes is the largest form a POST may carry.
const MaxFormBytes = 16 << 10

// maxReason bounds what a reason may hold, in bytes.
const maxReason = 1000

// DefaultLoginDelay is how long a wrong token waits before its answer
// unless Config.LoginDelay says otherwise.
const DefaultLoginDelay = 500 * time.Millisecond

//go:embed templates
var templateFiles embed.FS

//go:embed templates/style.css
var style string

// styleHash is the style's hash, which the Content-Security-Policy
// allows: the page runs no script and loads nothing.
var styleHash = func() string {
	h := sha256.Sum256([]byte(style))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}()

// page is the handler of the page.
type page struct {
	cfg      Config
	tmpl     *template.Template
	sessions sessions
}

// New returns the handler of the page configured by cfg.
func New(cfg Config) (http.Handler, error) {
	if cfg.App == nil {
		return nil, errors.New("ui: no app database")
	}
	if cfg.PageRows == 0 {
		cfg.PageRows = 100
	}
	if cfg.PageRows < 1 || cfg.PageRows > system.MaxPageRows {
		return nil, fmt.Errorf("ui: %d rows a page, want 1 to %d", cfg.PageRows, system.MaxPageRows)
	}
	if cfg.PublicHost != "" && cfg.Operators == nil {
		return nil, ErrPublicNeedsToken
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LoginDelay < 0 {
		return nil, fmt.Errorf("ui: a login delay of %v, want 0 or more", cfg.LoginDelay)
	}
	if cfg.LoginDelay == 0 {
		cfg.LoginDelay = DefaultLoginDelay
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &page{cfg: cfg}
	p.tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"when":   p.when,
		"age":    p.age,
		"style":  func() template.CSS { return template.CSS(style) },
		"rowsOf": func(rows []system.Row, budget int) rowTable { return rowTable{rows, budget} },
	}).ParseFS(templateFiles, "templates/*.html"))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.outbox)
	mux.HandleFunc("GET /stale", p.stale)
	mux.HandleFunc("GET /row", p.row)
	mux.HandleFunc("GET /login", p.loginForm)
	mux.HandleFunc("POST /login", p.login)
	mux.HandleFunc("POST /logout", p.logout)
	mux.HandleFunc("POST /requeue", p.act)
	mux.HandleFunc("POST /reconcile", p.act)
	return p.guard(mux), nil
}

// guard sets the headers of every answer and refuses what no answer of
// the page is for: another host name than loopback's when it listens
// there, or than PublicHost when set; a form over MaxFormBytes. Under a
// PublicHost it sends a person who has not logged in to the login.
func (p *page) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src "+styleHash+"; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if p.cfg.LoopbackOnly && !loopbackHost(r) {
			http.Error(w, "this page answers on localhost only", http.StatusMisdirectedRequest)
			return
		}
		if p.cfg.PublicHost != "" && !strings.EqualFold(hostName(r.Host), p.cfg.PublicHost) {
			http.Error(w, "this page answers to its own host name only", http.StatusMisdirectedRequest)
			return
		}
		if p.cfg.PublicHost != "" && r.Method == http.MethodGet && r.URL.Path != "/login" {
			if _, _, ok := p.sessions.of(r, p.cfg.Now()); !ok {
				http.Redirect(w, r, "/login?"+url.Values{"next": {r.URL.RequestURI()}}.Encode(), http.StatusSeeOther)
				return
			}
		}
		if r.ContentLength > MaxFormBytes {
			http.Error(w, fmt.Sprintf("a form is at most %d bytes", MaxFormBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
		next.ServeHTTP(w, r)
	})
}

// view is what every template is given.
type view struct {
	Title    string
	App      string
	CRM      string
	ReadOnly bool   // started without a token
	LoggedIn bool   // the request's session is live
	session  string // its id
	Operator string // who logged in
	Form     string // the session's form token
	Error    string // what went wrong, for the person
	Data     any
}

// base returns the view of r, its session looked up.
func (p *page) base(r *http.Request, title string) view {
	v := view{Title: title, App: p.cfg.AppShown, CRM: p.cfg.CRMShown, ReadOnly: p.cfg.Operators == nil}
	if !v.ReadOnly {
		if id, sess, ok := p.sessions.of(r, p.cfg.Now()); ok {
			v.LoggedIn, v.session, v.Form, v.Operator = true, id, sess.form, sess.operator
		}
	}
	if p.cfg.PublicHost != "" && !v.LoggedIn {
		v.App, v.CRM = "", "" // shown to a person who has logged in only
	}
	return v
}

// render writes the template name with v, answering status.
func (p *page) render(w http.ResponseWriter, status int, name string, v view) {
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, name, v); err != nil {
		p.cfg.Log.Error("rendering the page", "page", name, "error", err.Error())
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// failed answers a failure to read the database.
func (p *page) failed(w http.ResponseWriter, r *http.Request, err error) {
	p.cfg.Log.Error("reading the app database", "path", r.URL.Path, "error", err.Error())
	v := p.base(r, "Error")
	v.Error = "reading the app database failed: " + system.OneLine(err.Error())
	p.render(w, http.StatusServiceUnavailable, "error.html", v)
}

// rowTable is a table of rows, each row's attempts shown against the
// budget.
type rowTable struct {
	Rows   []system.Row
	Budget int
}

// budget is the attempt budget of the app database's rows: what a
// worker's --max-attempts recorded, and the contract's default before.
func (p *page) budget(ctx context.Context) (int, error) {
	b, err := p.cfg.App.Budget(ctx)
	return max(b, system.DefaultMaxAttempts), err
}

// listing is the data of the outbox's page.
type listing struct {
	Budget int
	Gauges system.Gauges
	State  string // the filter: "" for every state
	States []string
	Rows   []system.Row
	Next   string // the URL of the next page; "" on the last
	First  string // the URL of the first page; "" on it
}

// outbox is GET /: the counts, and one page of the rows in a state.
func (p *page) outbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state != "" && state != string(system.Pending) && state != string(system.Sent) && state != string(system.Blocked) {
		v := p.base(r, "Outbox")
		v.Error = fmt.Sprintf("no state %q: pending, sent or blocked", state)
		p.render(w, http.StatusBadRequest, "error.html", v)
		return
	}
	after, ok := cursor(q.Get("after"))
	if !ok {
		v := p.base(r, "Outbox")
		v.Error = "the page's place (after) is not a row number"
		p.render(w, http.StatusBadRequest, "error.html", v)
		return
	}
	g, err := p.cfg.App.Gauges(r.Context())
	if err != nil {
		p.failed(w, r, err)
		return
	}
	pg, err := p.cfg.App.Page(r.Context(), system.PageQuery{State: system.State(state), After: after, Limit: p.cfg.PageRows})
	if err != nil {
		p.failed(w, r, err)
		return
	}
	budget, err := p.budget(r.Context())
	if err != nil {
		p.failed(w, r, err)
		return
	}
	l := listing{Budget: budget, Gauges: g, State: state, States: []string{"pending", "sent", "blocked"}, Rows: pg.Rows}
	if pg.Next != 0 {
		l.Next = "/?" + url.Values{"state": {state}, "after": {strconv.FormatInt(pg.Next, 10)}}.Encode()
	}
	if after != 0 {
		l.First = "/?" + url.Values{"state": {state}}.Encode()
	}
	v := p.base(r, "Outbox")
	v.Data = l
	p.render(w, http.StatusOK, "outbox.html", v)
}

// cursor reads a page's place: empty is the first page.
func cursor(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// staleList is the data of the stale page.
type staleList struct {
	Budget      int
	OlderThan   string
	Blocked     []system.Row
	Pending     []system.Row
	NextBlocked string
	NextPending string
}

// defaultOlderThan is the age past which a pending row is stale when
// the page's URL does not say.
const defaultOlderThan = time.Hour

// stale is GET /stale: what needs a person, as handoff stale lists it:
// every blocked row, and every pending row approved more than
// older-than ago, oldest first, a page of each.
func (p *page) stale(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	olderThan := defaultOlderThan
	if s := q.Get("older-than"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			v := p.base(r, "Needs a person")
			v.Error = fmt.Sprintf("older-than is %q, not a duration: write a number and a unit, h, m or s, such as 30m or 24h", s)
			p.render(w, http.StatusBadRequest, "error.html", v)
			return
		}
		olderThan = d
	}
	bAfter, ok1 := cursor(q.Get("blocked-after"))
	pAfter, ok2 := cursor(q.Get("pending-after"))
	if !ok1 || !ok2 {
		v := p.base(r, "Needs a person")
		v.Error = "the page's place is not a row number"
		p.render(w, http.StatusBadRequest, "error.html", v)
		return
	}
	blocked, err := p.cfg.App.Page(r.Context(), system.PageQuery{State: system.Blocked, After: bAfter, Limit: p.cfg.PageRows})
	if err != nil {
		p.failed(w, r, err)
		return
	}
	cut := p.cfg.Now().Add(-olderThan)
	pending, err := p.cfg.App.Page(r.Context(), system.PageQuery{State: system.Pending, ApprovedBefore: cut, After: pAfter, Limit: p.cfg.PageRows})
	if err != nil {
		p.failed(w, r, err)
		return
	}
	budget, err := p.budget(r.Context())
	if err != nil {
		p.failed(w, r, err)
		return
	}
	s := staleList{Budget: budget, OlderThan: olderThan.String(), Blocked: blocked.Rows, Pending: pending.Rows}
	link := func(which string, next int64) string {
		v := url.Values{"older-than": {olderThan.String()}}
		v.Set(which, strconv.FormatInt(next, 10))
		return "/stale?" + v.Encode()
	}
	if blocked.Next != 0 {
		s.NextBlocked = link("blocked-after", blocked.Next)
	}
	if pending.Next != 0 {
		s.NextPending = link("pending-after", pending.Next)
	}
	v := p.base(r, "Needs a person")
	v.Data = s
	p.render(w, http.StatusOK, "stale.html", v)
}

// detail is the data of a row's page.
type detail struct {
	Row       system.Row
	Budget    int    // the attempt budget of the app database's rows (system.Outbox.Budget)
	BudgetOf  string // where Budget comes from
	Approval  system.Approval
	History   []event
	Tasks     []system.Task
	TasksErr  string
	CanAct    bool   // a repair may be offered: the row is not sent
	Done      string // what this session's last repair of the row did, once
	Tries     int    // the claims its history holds, across repairs that set attempts back to 0
	Reconcile bool   // reconcile is offered: blocked, or pending without a live lease
	Requeue   bool   // requeue is offered: blocked
}

// event is one line of a row's history.
type event struct {
	At   time.Time
	What string
}

// row is GET /row?key=KEY: one row, its approval, its history, the tasks
// the receiver holds for its key, and the repairs a person may make.
func (p *page) row(w http.ResponseWriter, r *http.Request) {
	p.showRow(w, r, r.URL.Query().Get("key"), http.StatusOK, "")
}

// showRow renders the page of key's row with status, and problem as the
// error shown, if any.
func (p *page) showRow(w http.ResponseWriter, r *http.Request, key string, status int, problem string) {
	v := p.base(r, "Row")
	row, err := p.cfg.App.Row(r.Context(), key)
	switch {
	case errors.Is(err, system.ErrNotFound):
		v.Error = fmt.Sprintf("no outbox row for %q", key)
		p.render(w, http.StatusNotFound, "error.html", v)
		return
	case err != nil:
		p.failed(w, r, err)
		return
	}
	a, err := p.cfg.App.Approval(r.Context(), key)
	if err != nil {
		p.failed(w, r, err)
		return
	}
	events, err := p.cfg.App.History(r.Context(), key)
	if err != nil {
		p.failed(w, r, err)
		return
	}
	recorded, err := p.cfg.App.Budget(r.Context())
	if err != nil {
		p.failed(w, r, err)
		return
	}
	now := p.cfg.Now()
	d := detail{Row: row, Budget: max(recorded, system.DefaultMaxAttempts), BudgetOf: "the contract's default, until a worker with a larger --max-attempts claims a row", Approval: a, History: history(row, events, now)}
	d.Tries = system.Tries(row, events)
	if v.LoggedIn {
		d.Done = p.sessions.told(v.session, key)
	}
	if recorded > system.DefaultMaxAttempts {
		d.BudgetOf = "recorded in the app database by a worker's --max-attempts"
	}
	d.Requeue = row.State == system.Blocked
	d.Reconcile = row.State == system.Blocked || row.State == system.Pending && (row.LeaseOwner == "" || !now.Before(row.LeaseUntil))
	d.CanAct = d.Requeue || d.Reconcile
	if p.cfg.TasksOf != nil {
		if d.Tasks, err = p.cfg.TasksOf(r.Context(), key); err != nil {
			d.TasksErr = system.OneLine(err.Error())
		}
	}
	v.Title = key
	v.Error = problem
	v.Data = d
	p.render(w, status, "row.html", v)
}

// history is what happened to a row, oldest first: what its times say
// (approved, sent, leased, next attempt) and every entry of its history
// (system.Outbox.History: each claim with its attempt, what each attempt
// came to, a block and why, each repair with who, why and what it
// cleared). A row with no claim in its history (claimed before the
// database kept one) shows what its times say of its claims instead.
func history(r system.Row, entries []system.AuditEntry, now time.Time) []event {
	var evs []event
	add := func(at time.Time, what string) {
		if !at.IsZero() {
			evs = append(evs, event{at, what})
		}
	}
	add(r.CreatedAt, "approved; the outbox row written with it")
	claims := slices.ContainsFunc(entries, func(e system.AuditEntry) bool { return e.Action == system.EventClaim })
	if !claims && !r.FirstClaimedAt.IsZero() && !r.FirstClaimedAt.Equal(r.LastAttemptAt) {
		add(r.FirstClaimedAt, "first claimed by a worker (attempt 1)")
	}
	switch {
	case claims, r.LastAttemptAt.IsZero():
	case r.Attempts == 0:
		// A repair set the attempts back to 0 and cleared the error; the
		// claim at this time was an attempt before it, of a number the
		// database no longer keeps.
		add(r.LastAttemptAt, "last claimed before a repair set its attempts back to 0 and cleared its last error (the log of handoff work has that attempt and its error)")
	default:
		what := fmt.Sprintf("attempt %d claimed (the latest; %d counted since it was approved or last repaired)", r.Attempts, r.Attempts)
		if r.LastError != "" {
			what += "; the row's last error since: " + r.LastError
		}
		add(r.LastAttemptAt, what)
	}
	for _, e := range entries {
		add(e.At, fmt.Sprintf("%s by %s: %s", e.Action, system.OneLine(e.Actor), system.OneLine(e.Reason)))
	}
	switch r.State {
	case system.Sent:
		if !slices.ContainsFunc(entries, func(e system.AuditEntry) bool { return e.Action == system.EventSent }) {
			add(r.SentAt, fmt.Sprintf("sent: the CRM's task %d recorded", r.RemoteID))
		}
	case system.Pending:
		if r.LeaseOwner != "" {
			state := "until"
			if !now.Before(r.LeaseUntil) {
				state = "ran out at"
			}
			add(r.LeaseUntil, fmt.Sprintf("leased by %s %s this time", system.OneLine(r.LeaseOwner), state))
		}
		if r.NextAttemptAt.After(now) {
			add(r.NextAttemptAt, "next attempt due (backing off)")
		}
	}
	// Insertion sort: a handful of events, stable for equal times.
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].At.Before(evs[j-1].At); j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
	return evs
}

// when prints t in UTC, "" for the zero time.
func (p *page) when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// age prints how long ago t was, to the second; "" for the zero time.
func (p *page) age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := p.cfg.Now().Sub(t)
	if d < 0 {
		return "in " + (-d).Truncate(time.Second).String()
	}
	return d.Truncate(time.Second).String() + " ago"
}

// loginForm is GET /login.
func (p *page) loginForm(w http.ResponseWriter, r *http.Request) {
	v := p.base(r, "Log in")
	if v.ReadOnly {
		v.Error = "this page was started without a token: it is read-only, and nobody can log in"
		p.render(w, http.StatusForbidden, "error.html", v)
		return
	}
	v.Data = r.URL.Query().Get("next")
	p.render(w, http.StatusOK, "login.html", v)
}

// login is POST /login: the token, for a session.
func (p *page) login(w http.ResponseWriter, r *http.Request) {
	v := p.base(r, "Log in")
	switch {
	case v.ReadOnly:
		p.refuse(w, r, http.StatusForbidden, "this page was started without a token: it is read-only")
		return
	case !p.sameOrigin(r):
		p.refuse(w, r, http.StatusForbidden, "a form from another site is refused")
		return
	}
	if err := r.ParseForm(); err != nil {
		p.refuse(w, r, formStatus(err), "the form did not parse: "+err.Error())
		return
	}
	token := r.PostForm.Get("token")
	name, ok := p.cfg.Operators.Name(token)
	if !ok {
		if err := p.cfg.Operators.Problem(); err != nil {
			p.cfg.Log.Error("nobody may log in: the token file was refused", "error", err.Error())
		}
		p.cfg.Log.Warn("a login with a wrong token", "remote", r.RemoteAddr)
		time.Sleep(p.cfg.LoginDelay)
		v.Error = "wrong token"
		v.Data = r.PostForm.Get("next")
		p.render(w, http.StatusForbidden, "login.html", v)
		return
	}
	id, _ := p.sessions.start(p.cfg.Now(), name, token)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionLife / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: p.secure(r)})
	p.cfg.Log.Info("logged in", "operator", name, "remote", r.RemoteAddr)
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

// secure reports whether the page's cookies must be Secure: it is
// reached over HTTPS, by itself or through the proxy of PublicHost.
func (p *page) secure(r *http.Request) bool {
	return r.TLS != nil || p.cfg.PublicHost != ""
}

// localPath is next when it is a path of this page, else "/": a login
// never sends a person to another site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

// logout is POST /logout.
func (p *page) logout(w http.ResponseWriter, r *http.Request) {
	if !p.sameOrigin(r) {
		p.refuse(w, r, http.StatusForbidden, "a form from another site is refused")
		return
	}
	if id, sess, ok := p.sessions.of(r, p.cfg.Now()); ok {
		if err := r.ParseForm(); err != nil || !equal(r.PostForm.Get("form"), sess.form) {
			p.refuse(w, r, http.StatusForbidden, "the form's token is missing or wrong: reload the page")
			return
		}
		p.sessions.end(id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: p.secure(r)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// refuse answers a request that may not act, and logs it.
func (p *page) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	p.cfg.Log.Warn("refused", "path", r.URL.Path, "remote", r.RemoteAddr, "why", why)
	v := p.base(r, "Refused")
	v.Error = why
	p.render(w, status, "error.html", v)
}

// formStatus is the status of a form that did not parse: 413 when it was
// too large.
func formStatus(err error) int {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// act is POST /requeue and POST /reconcile: a person's repair, through
// the system's operator action, which keeps its rules, takes the row's
// fence and writes the audit entry. It acts only for a live session
// whose form token the form carries, from the page's own origin.
func (p *page) act(w http.ResponseWriter, r *http.Request) {
	if p.cfg.Operators == nil {
		p.refuse(w, r, http.StatusForbidden, "this page was started without a token: it is read-only")
		return
	}
	if !p.sameOrigin(r) {
		p.refuse(w, r, http.StatusForbidden, "a form from another site is refused")
		return
	}
	id, sess, ok := p.sessions.of(r, p.cfg.Now())
	if !ok {
		p.refuse(w, r, http.StatusUnauthorized, "log in with your token first")
		return
	}
	if name, ok := p.cfg.Operators.Name(sess.token); !ok || name != sess.operator {
		p.sessions.end(id)
		p.refuse(w, r, http.StatusUnauthorized, "your token no longer lets you act (it was rotated or revoked): log in again")
		return
	}
	if err := r.ParseForm(); err != nil {
		p.refuse(w, r, formStatus(err), "the form did not parse: "+err.Error())
		return
	}
	f := r.PostForm
	if !equal(f.Get("form"), sess.form) {
		p.refuse(w, r, http.StatusForbidden, "the form's token is missing or wrong: reload the page")
		return
	}
	key := f.Get("key")
	actor, reason := sess.operator, strings.TrimSpace(f.Get("reason"))
	switch {
	case reason == "":
		p.showRow(w, r, key, http.StatusBadRequest, "say why, for the audit log")
		return
	case len(reason) > maxReason:
		p.showRow(w, r, key, http.StatusBadRequest, fmt.Sprintf("why takes at most %d bytes", maxReason))
		return
	}
	var err error
	var done string
	switch {
	case r.URL.Path == "/requeue":
		var retention time.Duration
		if p.cfg.Retention != nil {
			if retention, err = p.cfg.Retention(r.Context()); err != nil {
				p.showRow(w, r, key, http.StatusServiceUnavailable, "the receiver's retention is unknown, and requeue needs it: "+system.OneLine(err.Error()))
				return
			}
		}
		err, done = p.cfg.App.Requeue(r.Context(), key, retention, actor, reason), "requeued"
	case f.Get("absent") == "yes":
		err, done = p.cfg.App.ReconcileAbsent(r.Context(), key, actor, reason), "reconciled as absent from the CRM"
	default:
		id, perr := strconv.ParseInt(strings.TrimSpace(f.Get("remote_id")), 10, 64)
		if perr != nil || id < 1 {
			p.showRow(w, r, key, http.StatusBadRequest, "the CRM's task id is a number of 1 or more; or reconcile as absent")
			return
		}
		err, done = p.cfg.App.Reconcile(r.Context(), key, id, actor, reason), fmt.Sprintf("reconciled as sent, CRM task %d", id)
	}
	switch {
	case errors.Is(err, system.ErrNotFound):
		p.showRow(w, r, key, http.StatusNotFound, "")
		return
	case errors.Is(err, system.ErrWrongState), errors.Is(err, system.ErrRetention), errors.Is(err, system.ErrInvalidInput):
		p.cfg.Log.Warn("repair refused", "action", r.URL.Path[1:], "key", key, "actor", actor, "error", err.Error())
		p.showRow(w, r, key, http.StatusConflict, "refused, nothing changed: "+system.OneLine(err.Error()))
		return
	case err != nil:
		p.cfg.Log.Error("repair failed", "action", r.URL.Path[1:], "key", key, "actor", actor, "error", err.Error())
		p.showRow(w, r, key, http.StatusServiceUnavailable, "failed: "+system.OneLine(err.Error()))
		return
	}
	p.cfg.Log.Info("repair", "action", r.URL.Path[1:], "key", key, "actor", actor, "reason", reason)
	// What was done goes with the session, once, not in the URL: a link
	// can say nothing of a repair that did not happen.
	p.sessions.tell(id, key, fmt.Sprintf("%s by %s", done, actor))
	http.Redirect(w, r, "/row?"+url.Values{"key": {key}}.Encode(), http.StatusSeeOther)
}
