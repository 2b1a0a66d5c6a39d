package ui_test

import (
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/bulk"
	"github.com/outboxlab/handoff/internal/ui"
	"github.com/outboxlab/handoff/system"
)

const token = "a-token-of-some-length"

// server serves the page of a new outbox of 250 rows (every third
// pending, every seventh blocked), with cfg's token and rows a page.
func server(t *testing.T, cfg ui.Config) (*httptest.Server, *system.Outbox) {
	t.Helper()
	app, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	if err := bulk.Fill(t.Context(), app, 250, bulk.Mix{Pending: 3, Blocked: 7}, time.Now().Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := app.RecordApproval(t.Context(), "case-x", `<script>alert("x")</script>`); err != nil {
		t.Fatal(err)
	}
	cfg.App, cfg.AppShown = app, "app.db"
	if cfg.LoginDelay == 0 {
		cfg.LoginDelay = time.Millisecond // TestWrongTokenWaits shows the default
	}
	h, err := ui.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, app
}

// client is a browser's: it keeps cookies and follows no redirect.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get answers GET path: the status and the body.
func get(t *testing.T, c *http.Client, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post answers POST path with form, from the page's own origin unless
// origin says another: the status and the body.
func post(t *testing.T, c *http.Client, srv *httptest.Server, path string, form url.Values, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin == "" {
		origin = srv.URL
	}
	req.Header.Set("Origin", origin)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var formToken = regexp.MustCompile(`name="form" value="([^"]+)"`)

// shared is the page's operators: one shared token, token.
func shared(t *testing.T) *ui.Operators {
	t.Helper()
	o, err := ui.SharedToken(token)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// login logs c in with token and returns the session's form token.
func login(t *testing.T, c *http.Client, srv *httptest.Server) string {
	t.Helper()
	return loginWith(t, c, srv, token)
}

// loginWith logs c in with tok and returns the session's form token.
func loginWith(t *testing.T, c *http.Client, srv *httptest.Server, tok string) string {
	t.Helper()
	if code, body := post(t, c, srv, "/login", url.Values{"token": {tok}, "next": {"/"}}, ""); code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", code, body)
	}
	_, body := get(t, c, srv, "/")
	m := formToken.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form token on the page after logging in:\n%s", body)
	}
	return m[1]
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	srv, app := server(t, ui.Config{})
	c := client(t)
	code, body := get(t, c, srv, "/")
	if code != http.StatusOK || !strings.Contains(body, "read-only") || strings.Contains(body, "<form") {
		t.Errorf("GET /: %d, read-only said %v, forms %v", code, strings.Contains(body, "read-only"), strings.Contains(body, "<form"))
	}
	key := system.KeyPrefix + "bulk-7"
	before, _ := app.Row(t.Context(), key)
	for _, path := range []string{"/requeue", "/reconcile", "/login"} {
		if code, _ := post(t, c, srv, path, url.Values{"key": {key}, "actor": {"a"}, "reason": {"r"}, "absent": {"yes"}, "token": {token}}, ""); code != http.StatusForbidden {
			t.Errorf("POST %s to a read-only page: %d, want 403", path, code)
		}
	}
	if after, _ := app.Row(t.Context(), key); after != before {
		t.Errorf("the row changed: %+v -> %+v", before, after)
	}
}

func TestRepairs(t *testing.T) {
	t.Parallel()
	srv, app := server(t, ui.Config{Operators: shared(t)})
	c := client(t)
	key := system.KeyPrefix + "bulk-7" // blocked
	repair := url.Values{"key": {key}, "actor": {"ana"}, "reason": {"checked"}}
	with := func(form string) url.Values {
		v := url.Values{}
		for k, vs := range repair {
			v[k] = vs
		}
		v.Set("form", form)
		return v
	}
	before, _ := app.Row(t.Context(), key)
	if code, _ := post(t, c, srv, "/requeue", repair, ""); code != http.StatusUnauthorized {
		t.Errorf("requeue before logging in: %d, want 401", code)
	}
	if code, body := post(t, c, srv, "/login", url.Values{"token": {"wrong-token-of-length"}}, ""); code != http.StatusForbidden || !strings.Contains(body, "wrong token") {
		t.Errorf("a wrong token: %d, want 403 and wrong token", code)
	}
	if code, _ := post(t, c, srv, "/login", url.Values{"token": {token}}, "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("a login from another origin: %d, want 403", code)
	}
	form := login(t, c, srv)
	for _, tt := range []struct {
		name   string
		form   url.Values
		origin string
		want   int
	}{
		{"no form token", repair, "", http.StatusForbidden},
		{"a wrong form token", with("x" + form), "", http.StatusForbidden},
		{"another origin", with(form), "https://evil.example", http.StatusForbidden},
		{"the null origin", with(form), "null", http.StatusForbidden},
	} {
		if code, _ := post(t, c, srv, "/requeue", tt.form, tt.origin); code != tt.want {
			t.Errorf("requeue with %s: %d, want %d", tt.name, code, tt.want)
		}
	}
	if after, _ := app.Row(t.Context(), key); after != before {
		t.Errorf("refused requeues changed the row: %+v -> %+v", before, after)
	}
	if code, body := post(t, c, srv, "/requeue", with(form), ""); code != http.StatusSeeOther {
		t.Fatalf("requeue: %d %s", code, body)
	}
	if r, _ := app.Row(t.Context(), key); r.State != system.Pending || r.Attempts != 0 {
		t.Errorf("after requeue: %+v, want pending, 0 attempts", r)
	}
	if _, page := get(t, c, srv, "/row?key="+url.QueryEscape(key)); strings.Contains(page, "attempt 0 claimed") ||
		!strings.Contains(page, "last claimed before a repair set its attempts back to 0") {
		t.Errorf("the requeued row's history does not say its last claim came before the repair:\n%s", page)
	}
	code, body := post(t, c, srv, "/requeue", with(form), "")
	if code != http.StatusConflict || !strings.Contains(body, "refused, nothing changed") {
		t.Errorf("requeue of a pending row: %d, want 409 and refused", code)
	}
	reconcile := with(form)
	reconcile.Set("remote_id", "12")
	if code, _ := post(t, c, srv, "/reconcile", reconcile, ""); code != http.StatusSeeOther {
		t.Errorf("reconcile: %d", code)
	}
	audit, _ := app.AuditOf(t.Context(), key)
	if len(audit) != 2 || audit[0].Action != system.ActionRequeue || audit[1].Action != system.ActionReconcile || audit[1].Actor != ui.SharedName {
		t.Errorf("the audit log of %s: %+v, want the requeue and the reconcile by %s, whatever the form said", key, audit, ui.SharedName)
	}
	_, page := get(t, c, srv, "/row?key="+url.QueryEscape(key))
	if !strings.Contains(page, "reconcile by "+ui.SharedName+": checked") || !strings.Contains(page, "CRM task") {
		t.Errorf("the row's page does not show its audit entries:\n%s", page)
	}
	if code, _ := post(t, c, srv, "/logout", url.Values{"form": {form}}, ""); code != http.StatusSeeOther {
		t.Errorf("logout: %d", code)
	}
	if code, _ := post(t, c, srv, "/requeue", with(form), ""); code != http.StatusUnauthorized {
		t.Errorf("requeue after logging out: %d, want 401", code)
	}
}

func TestLimitsAndHeaders(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, ui.Config{Operators: shared(t), LoopbackOnly: true})
	c := client(t)
	big := url.Values{"token": {strings.Repeat("x", ui.MaxFormBytes)}}
	if code, _ := post(t, c, srv, "/login", big, ""); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a form over the limit: %d, want 413", code)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.Host = "rebound.example:80"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for another host name: %d, want 421", resp.StatusCode)
	}
	resp, err = c.Get(srv.URL + "/?state=blocked")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(string(b), "<script") {
		t.Errorf("CSP %q, a script on the page %v", csp, strings.Contains(string(b), "<script"))
	}
	if code, body := post(t, c, srv, "/login", url.Values{"token": {token}, "next": {"//evil.example/"}}, ""); code != http.StatusSeeOther || strings.Contains(body, "evil") {
		t.Errorf("a login sent on to another site: %d %s", code, body)
	}
}

func TestPages(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, ui.Config{PageRows: 100})
	c := client(t)
	seen := map[string]bool{}
	keyLink := regexp.MustCompile(`href="/row\?key=([^"]+)"`)
	for path, pages := "/", 0; path != ""; pages++ {
		code, body := get(t, c, srv, path)
		if code != http.StatusOK || pages > 5 {
			t.Fatalf("GET %s: %d after %d pages", path, code, pages)
		}
		for _, m := range keyLink.FindAllStringSubmatch(body, -1) {
			seen[m[1]] = true
		}
		path = ""
		if m := regexp.MustCompile(`href="(/\?[^"]*after=[^"]+)" id="next"`).FindStringSubmatch(body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 251 {
		t.Errorf("the pages listed %d rows, want 251", len(seen))
	}
	_, body := get(t, c, srv, "/row?key="+url.QueryEscape(system.KeyPrefix+"case-x"))
	if strings.Contains(body, `<script>alert`) || !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("the title is not escaped on the row's page")
	}
	code, stale := get(t, c, srv, "/stale?older-than=1h")
	if code != http.StatusOK || !strings.Contains(stale, "bulk-7<") || !strings.Contains(stale, "bulk-3<") || strings.Contains(stale, "case-x<") {
		t.Errorf("GET /stale: %d; want the blocked and the old pending rows, not the new one", code)
	}
	for _, path := range []string{"/?state=done", "/?after=x", "/stale?older-than=1d"} {
		if code, body := get(t, c, srv, path); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
			t.Errorf("GET %s: %d, want 400 with the error", path, code)
		}
	}
	if code, _ := get(t, c, srv, "/row?key=nope"); code != http.StatusNotFound {
		t.Errorf("GET /row of an unknown key: %d, want 404", code)
	}
}

// TestPublicHost: a page served under a public host name, behind a proxy
// that serves HTTPS, answers no other Host, shows nothing but its login
// (not even the database's name) before a person logs in with the token,
// sets a Secure cookie, takes forms from https://NAME only, and is
// refused without a token.
func TestPublicHost(t *testing.T) {
	t.Parallel()
	const name = "ops.example.com"
	if _, err := ui.New(ui.Config{App: &system.Outbox{}, PublicHost: name}); !errors.Is(err, ui.ErrPublicNeedsToken) {
		t.Errorf("a public page without a token: %v, want %v", err, ui.ErrPublicNeedsToken)
	}
	srv, _ := server(t, ui.Config{Operators: shared(t), PublicHost: name})
	c := client(t)
	send := func(method, path, host, origin, cookie string, form url.Values) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	body := func(resp *http.Response) string {
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, tt := range []struct {
		name, path, host string
		want             int
		location         string
	}{
		{"the outbox", "/?state=blocked", name, http.StatusSeeOther, "/login?next=%2F%3Fstate%3Dblocked"},
		{"a row", "/row?key=" + url.QueryEscape(system.KeyPrefix+"bulk-7"), name + ":443", http.StatusSeeOther, "/login?next=%2Frow%3Fkey%3D" + url.QueryEscape(url.QueryEscape(system.KeyPrefix+"bulk-7"))},
		{"the stale list", "/stale", "OPS.example.com", http.StatusSeeOther, "/login?next=%2Fstale"},
		{"the outbox for loopback's name", "/", "127.0.0.1", http.StatusMisdirectedRequest, ""},
		{"the outbox for another name", "/", "rebound.example", http.StatusMisdirectedRequest, ""},
		{"the login for another name", "/login", "rebound.example", http.StatusMisdirectedRequest, ""},
	} {
		resp := send(http.MethodGet, tt.path, tt.host, "", "", nil)
		page := body(resp)
		if resp.StatusCode != tt.want || resp.Header.Get("Location") != tt.location || strings.Contains(page, "<table") || strings.Contains(page, "app.db") {
			t.Errorf("GET %s for %s before logging in: %d to %q; want %d to %q and no row or database shown", tt.name, tt.host, resp.StatusCode, resp.Header.Get("Location"), tt.want, tt.location)
		}
	}
	resp := send(http.MethodGet, "/login", name, "", "", nil)
	if page := body(resp); resp.StatusCode != http.StatusOK || strings.Contains(page, "app.db") || !strings.Contains(page, `name="token"`) {
		t.Errorf("GET /login: %d; want 200, the form and no database named:\n%s", resp.StatusCode, page)
	}
	login := url.Values{"token": {token}, "next": {"/"}}
	for _, origin := range []string{"http://" + name, "https://rebound.example"} {
		if resp := send(http.MethodPost, "/login", name, origin, "", login); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a login from %s: %d, want 403", origin, resp.StatusCode)
		}
	}
	for _, wrong := range []url.Values{{}, {"token": {""}}, {"token": {token + "x"}}} {
		if resp := send(http.MethodPost, "/login", name, "https://"+name, "", wrong); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("a login with %v: %d and cookies %v, want 403 and none", wrong, resp.StatusCode, resp.Cookies())
		}
	}
	resp = send(http.MethodPost, "/login", name, "https://"+name, "", login)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly {
		t.Fatalf("a login from https://%s: %d, cookies %v; want 303 and one Secure, HttpOnly cookie", name, resp.StatusCode, cookies)
	}
	session := cookies[0].Name + "=" + cookies[0].Value
	resp = send(http.MethodGet, "/?state=blocked", name, "", session, nil)
	if page := body(resp); resp.StatusCode != http.StatusOK || !strings.Contains(page, "bulk-7<") || !strings.Contains(page, "app.db") {
		t.Errorf("GET /?state=blocked logged in: %d; want 200 with the blocked rows and the database:\n%s", resp.StatusCode, page)
	}
	if resp := send(http.MethodGet, "/", "127.0.0.1", "", session, nil); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET / logged in, for loopback's name: %d, want 421", resp.StatusCode)
	}
}

// TestRowBudget: a row's page shows its attempts of the budget every
// command shows, and where that budget comes from: the contract's
// default, then the one a worker with a larger budget recorded.
func TestRowBudget(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	worker, err := system.Open(t.Context(), path, system.Options{MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	key, err := worker.RecordApproval(t.Context(), "case-1", "Call back")
	if err != nil {
		t.Fatal(err)
	}
	app, err := system.Open(t.Context(), path, system.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	h, err := ui.New(ui.Config{App: app, AppShown: "app.db"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	attempts := regexp.MustCompile(`<td id="attempts">([^<]*)<span class="note">\(([^)]*)\)`)
	for _, want := range []string{
		"0 of 3 |budget 3: the contract's default, until a worker with a larger --max-attempts claims a row",
		"1 of 5 |budget 5: recorded in the app database by a worker's --max-attempts",
	} {
		_, body := get(t, client(t), srv, "/row?key="+url.QueryEscape(key))
		m := attempts.FindStringSubmatch(body)
		if m == nil || m[1]+"|"+html.UnescapeString(m[2]) != want {
			t.Errorf("the row's attempts: %q, want %q", m, want)
		}
		if _, _, err := worker.ClaimNext(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWrongTokenWaits: a login with a wrong token is answered only after
// the login delay, DefaultLoginDelay unless the page is given another;
// a negative delay is refused.
func TestWrongTokenWaits(t *testing.T) {
	t.Parallel()
	if _, err := ui.New(ui.Config{App: &system.Outbox{}, LoginDelay: -time.Second}); err == nil || !strings.Contains(err.Error(), "login delay") {
		t.Errorf("a negative login delay: %v, want it refused", err)
	}
	for _, tt := range []struct {
		name  string
		delay time.Duration
		want  time.Duration
	}{
		{"the default", 0, ui.DefaultLoginDelay},
		{"a longer delay", ui.DefaultLoginDelay + 200*time.Millisecond, ui.DefaultLoginDelay + 200*time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app, err := system.Open(t.Context(), filepath.Join(t.TempDir(), "app.db"), system.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			h, err := ui.New(ui.Config{App: app, Operators: shared(t), LoginDelay: tt.delay})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			start := time.Now()
			code, body := post(t, client(t), srv, "/login", url.Values{"token": {token + "x"}}, "")
			if took := time.Since(start); code != http.StatusForbidden || !strings.Contains(body, "wrong token") || took < tt.want {
				t.Errorf("a wrong token: %d after %v; want 403, wrong token, after %v at least", code, took, tt.want)
			}
		})
	}
}

// TestLoginRefusesEveryWrongToken: every way of presenting no token or a
// wrong one is refused (403) with no session: the field missing, empty,
// a wrong token, the token cut short, lengthened, with a space, in
// another case, or in the URL instead of the form; a refused login lets
// nothing be repaired.
func TestLoginRefusesEveryWrongToken(t *testing.T) {
	t.Parallel()
	srv, app := server(t, ui.Config{Operators: shared(t)})
	key := system.KeyPrefix + "bulk-7" // blocked
	before, _ := app.Row(t.Context(), key)
	cases := []struct {
		name string
		path string
		form url.Values
	}{
		{"no token field", "/login", url.Values{"next": {"/"}}},
		{"an empty token", "/login", url.Values{"token": {""}}},
		{"a wrong token", "/login", url.Values{"token": {"b-token-of-some-length"}}},
		{"the token cut short", "/login", url.Values{"token": {token[:len(token)-1]}}},
		{"the token lengthened", "/login", url.Values{"token": {token + "x"}}},
		{"the token with a space", "/login", url.Values{"token": {token + " "}}},
		{"the token in upper case", "/login", url.Values{"token": {strings.ToUpper(token)}}},
		{"a wrong token before the right one", "/login", url.Values{"token": {"wrong", token}}},
		{"the token in the URL", "/login?token=" + token, url.Values{"next": {"/"}}},
	}
	// Each wrong token waits out the login delay: the logins run side by
	// side, and the row is read once they are all done.
	t.Run("logins", func(t *testing.T) {
		for _, tt := range cases {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				c := client(t)
				code, body := post(t, c, srv, tt.path, tt.form, "")
				u, _ := url.Parse(srv.URL)
				if code != http.StatusForbidden || !strings.Contains(body, "wrong token") || len(c.Jar.Cookies(u)) != 0 {
					t.Errorf("a login with %s: %d, cookies %v; want 403, wrong token and no session", tt.name, code, c.Jar.Cookies(u))
				}
				if code, _ := post(t, c, srv, "/requeue", url.Values{"key": {key}, "actor": {"a"}, "reason": {"r"}}, ""); code != http.StatusUnauthorized {
					t.Errorf("a requeue after a login with %s: %d, want 401", tt.name, code)
				}
			})
		}
	})
	if after, _ := app.Row(t.Context(), key); after != before {
		t.Errorf("refused logins let the row change: %+v -> %+v", before, after)
	}
}
