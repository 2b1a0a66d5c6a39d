package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/outboxlab/handoff/internal/notrun"
)

// chromium is where the browser tests find the browser.
const chromium = "/usr/bin/chromium"

// browser returns a context of a headless Chromium of t's own, with a
// user data folder of its own, closed when t ends. Without Chromium it
// skips t, saying so in one line (see notrun.Skip: CI installs it, and
// fails a browser test that would skip).
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		notrun.Skip(t, "the browser tests did not run: -short leaves them out")
	}
	if _, err := os.Stat(chromium); err != nil {
		notrun.Skip(t, fmt.Sprintf("the browser tests did not run: no Chromium at %s (apt-get install -y chromium)", chromium))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// startUI starts handoff ui in a process of its own with args (and
// --addr 127.0.0.1:0), and returns the page's base URL.
func startUI(t *testing.T, args ...string) string {
	t.Helper()
	out, w := io.Pipe()
	_, stderr := startCLI(t, w, append([]string{"ui", "--addr", "127.0.0.1:0"}, args...)...)
	go io.Copy(io.Discard, stderr)
	lines := bufio.NewScanner(out)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), " on http://"); ok {
				found <- "http://" + strings.Fields(rest)[0]
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-found:
		return strings.TrimSuffix(u, "/")
	case <-time.After(30 * time.Second):
		t.Fatal("handoff ui printed no address within 30s")
	}
	return ""
}

// outboxState is what inspect --json says of the rows and the audit log:
// what a refused repair must leave as it was.
func outboxState(t *testing.T, app string) (rows, audit []any) {
	t.Helper()
	var v struct {
		Outbox []any `json:"outbox"`
		Audit  []any `json:"audit"`
	}
	out := mustRun(t, "inspect", "--app", app, "--limit", "0", "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v.Outbox, v.Audit
}

// TestPageInBrowser drives the page in headless Chromium as the person
// on call would: list the outbox, filter it, open a blocked row, fail
// to repair it without the token (a forged form from another site, and
// no form offered before logging in), nothing changed; log in with the
// token, requeue it, and see the audit entry on the page and in the file.
func TestPageInBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	approveRows(t, app, 4)
	mustRun(t, "crm", "init", "--crm", crm)
	for range 3 {
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
	}
	mustRun(t, "deliver", "--app", app, "--crm", crm)
	blocked, sent := keyOf("case-0"), keyOf("case-1")
	token := "correct-horse-battery-staple"
	tokenFile := filepath.Join(dir, "operators")
	if err := os.WriteFile(tokenFile, []byte("# who may repair\nana "+token+"\nbob another-token-for-bob-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startUI(t, "--app", app, "--crm", crm, "--token-file", tokenFile)

	// A link that speaks for the page: it says a repair happened, and
	// the page shows no such thing.
	crafted := base + "/row?" + url.Values{"key": {blocked}, "done": {"requeued"}, "actor": {"eve"}}.Encode()
	do(t, ctx, chromedp.Navigate(crafted), chromedp.WaitVisible("#key"))
	if banners, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#done").length`)); err != nil || banners != 0 {
		t.Errorf("a crafted link shows %d banners (%v), want none", banners, err)
	}

	// List and filter.
	do(t, ctx, chromedp.Navigate(base+"/"))
	counts, all := text(t, ctx, "#counts"), text(t, ctx, "table tbody")
	do(t, ctx, chromedp.Click("#filter-blocked"), chromedp.WaitVisible("#filter-blocked.on"))
	onlyBlocked := text(t, ctx, "table tbody")
	if !strings.Contains(counts, "2 pending") || !strings.Contains(counts, "1 sent") || !strings.Contains(counts, "1 blocked") {
		t.Errorf("the counts say %q, want 2 pending, 1 sent, 1 blocked", counts)
	}
	if !strings.Contains(all, blocked) || !strings.Contains(all, sent) || !strings.Contains(all, keyOf("case-3")) {
		t.Errorf("the outbox lists %q, want every row", all)
	}
	if !strings.Contains(onlyBlocked, blocked) || strings.Contains(onlyBlocked, sent) {
		t.Errorf("filtered to blocked, the outbox lists %q, want %s only", onlyBlocked, blocked)
	}

	// Open the blocked row: no repair without logging in.
	do(t, ctx, chromedp.Click("a.key"), chromedp.WaitVisible("#key"))
	key, state, history, repair := text(t, ctx, "#key"), text(t, ctx, "#state"), text(t, ctx, "#history"), text(t, ctx, "#login-to-act")
	if key != blocked || state != "blocked" || !strings.Contains(history, ": attempt 3: transient: ") || !strings.Contains(history, "attempt 1 of 3 counted") || !strings.Contains(repair, "Log in") {
		t.Errorf("the row's page: key %q, state %q, history %q, repair %q; want %s, blocked, its history and a log in link", key, state, history, repair, blocked)
	}
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.forms.length`))
	if err != nil || forms != 0 {
		t.Errorf("before logging in the row's page has %d forms (%v), want none", forms, err)
	}

	// Refused without the token: a wrong token, then a form another site
	// submits to the page; nothing changes.
	rowsBefore, auditBefore := outboxState(t, app)
	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.SendKeys("#token", "not-the-token-at-all"), chromedp.Click("#login-submit"), chromedp.WaitVisible("#error"))
	wrong := text(t, ctx, "#error")
	forged := "data:text/html," + url.PathEscape(fmt.Sprintf(`<form method="post" action="%s/requeue">
<input name="key" value="%s"><input name="reason" value="forged"></form>
<script>document.forms[0].submit()</script>`, base, blocked))
	do(t, ctx, chromedp.Navigate(forged), chromedp.WaitVisible("#error"))
	refusal := text(t, ctx, "#error")
	if wrong != "wrong token" || !strings.Contains(refusal, "refused") {
		t.Errorf("a wrong token: %q; a forged form: %q; want both refused", wrong, refusal)
	}
	rowsAfter, auditAfter := outboxState(t, app)
	if diff := cmp.Diff(rowsBefore, rowsAfter); diff != "" || len(auditAfter) != len(auditBefore) {
		t.Errorf("refused repairs changed the outbox (-before +after):\n%s\naudit %v -> %v", diff, auditBefore, auditAfter)
	}

	// Log in, requeue, see the audit entry. A forged form, logged in,
	// is refused too: the browser sends no cookie with it, and the
	// page's origin check refuses it.
	do(t, ctx, chromedp.Navigate(base+"/login?next="+url.QueryEscape("/row?key="+blocked)),
		chromedp.SendKeys("#token", token), chromedp.Click("#login-submit"), chromedp.WaitVisible("#key"),
		chromedp.Navigate(forged), chromedp.WaitVisible("#error"))
	if refusal := text(t, ctx, "#error"); !strings.Contains(refusal, "refused") {
		t.Errorf("a forged form after logging in: %q, want it refused", refusal)
	}
	if rows, _ := outboxState(t, app); !cmp.Equal(rowsBefore, rows) {
		t.Errorf("a forged form after logging in changed the outbox")
	}
	do(t, ctx, chromedp.Navigate(base+"/row?key="+url.QueryEscape(blocked)), chromedp.WaitVisible("#requeue"))
	if who := text(t, ctx, "#operator"); who != "ana" {
		t.Errorf("the page says %q is logged in, want ana", who)
	}
	do(t, ctx,
		chromedp.SendKeys("#requeue-reason", "checked the CRM: no task"),
		chromedp.Click("#requeue"), chromedp.WaitVisible("#done"))
	done, after, audited := text(t, ctx, "#done"), text(t, ctx, "#state"), text(t, ctx, "#history")
	if !strings.Contains(done, "requeued by ana") || after != "pending" || !strings.Contains(audited, "requeue by ana: checked the CRM: no task") ||
		!strings.Contains(audited, "cleared by ana: 3 attempts and last error transient of the blocked row") {
		t.Errorf("after requeue: %q, state %q, history %q; want requeued by ana, pending, and the audit entry", done, after, audited)
	}
	_, audit := outboxState(t, app)
	if len(audit) != 1 || !strings.Contains(fmt.Sprint(audit[0]), "checked the CRM: no task") {
		t.Errorf("the audit log holds %v, want the one requeue", audit)
	}
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible("#key"))
	if banners, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#done").length`)); err != nil || banners != 0 {
		t.Errorf("the requeue's banner shows again on reload: %d (%v)", banners, err)
	}
}

// do runs steps in the browser of ctx, failing t on an error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text is the text of the first element sel matches in the browser of ctx.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("the text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// keyOf is the action key of a case.
func keyOf(caseID string) string { return "harbor:create-followup:v1:" + caseID }

// fitsJS lists what on the page in the browser lies outside the
// viewport's width (the page itself, any element), and each outbox key
// broken over more than three lines (a key squeezed one character a line
// into a narrow column): "" when nothing does.
const fitsJS = `(() => {
	const w = document.documentElement.clientWidth, bad = [];
	if (document.documentElement.scrollWidth > w) bad.push("the page is " + document.documentElement.scrollWidth + " wide");
	for (const e of document.body.querySelectorAll("*")) {
		const r = e.getBoundingClientRect();
		if (r.width > 0 && (r.right > w + 0.5 || r.left < -0.5)) bad.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " spans " + Math.round(r.left) + " to " + Math.round(r.right));
	}
	for (const k of document.querySelectorAll("a.key code, #key")) {
		const lines = k.getClientRects().length;
		if (lines > 3) bad.push("the key " + k.textContent + " takes " + lines + " lines");
	}
	return bad.slice(0, 8).join("; ");
})()`

// TestPageFitsAPhone opens every page of the operator's (the outbox, the
// stale list, a blocked row with its repair forms, the login) at a
// phone's width, 390 pixels, and a desktop's: nothing runs off the
// viewport, and no outbox key is squeezed one character a line.
func TestPageFitsAPhone(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	app, crm := filepath.Join(dir, "app.db"), filepath.Join(dir, "crm.db")
	long := "case-with-a-rather-long-identifier-0123456789-abcdefghij"
	mustRun(t, "approve", "--app", app, "--case", long, "--title", "Call about the approved repair plan, and the second visit")
	approveRows(t, app, 3)
	mustRun(t, "crm", "init", "--crm", crm)
	for range 3 {
		mustRun(t, "deliver", "--app", app, "--crm", crm, "--fault", "offline")
	}
	mustRun(t, "deliver", "--app", app, "--crm", crm)
	token := "correct-horse-battery-staple"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startUI(t, "--app", app, "--crm", crm, "--token-file", tokenFile)
	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.SendKeys("#token", token), chromedp.Click("#login-submit"), chromedp.WaitVisible("#counts"))
	for _, width := range []int64{390, 1280} {
		for _, path := range []string{"/", "/stale?older-than=0s", "/row?key=" + url.QueryEscape(keyOf(long)), "/login"} {
			do(t, ctx, chromedp.EmulateViewport(width, 800), chromedp.Navigate(base+path), chromedp.WaitVisible("#nav-outbox"))
			bad, err := chromedp.Run(ctx, chromedp.Evaluate[string](fitsJS))
			if err != nil || bad != "" {
				t.Errorf("%s at %d pixels: %s%v", path, width, bad, err)
			}
			if path == "/" {
				if attempts := text(t, ctx, `td[data-label="attempts"]`); !regexp.MustCompile(`^\d+ of 3$`).MatchString(attempts) {
					t.Errorf("the list at %d pixels shows attempts %q, want a of 3", width, attempts)
				}
			}
		}
	}
}
