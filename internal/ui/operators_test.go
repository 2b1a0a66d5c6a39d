package ui_test

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxlab/handoff/internal/ui"
	"github.com/outboxlab/handoff/system"
)

const (
	anaToken = "ana-token-0123456789"
	bobToken = "bob-token-0123456789"
)

func TestParseOperators(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       map[string]string
		err        string
	}{
		{"named", "# who may repair\nana " + anaToken + "\n\nbob\t" + bobToken + "\n", map[string]string{anaToken: "ana", bobToken: "bob"}, ""},
		{"one shared token", anaToken + "\n", map[string]string{anaToken: ui.SharedName}, ""},
		{"empty", "# nobody\n", nil, "holds no token"},
		{"a short token", "ana short\n", nil, "ops:1: ana's token has 5 characters, want at least 16"},
		{"a token twice", "ana " + anaToken + "\nbob " + anaToken + "\n", nil, "ops:2: bob's token is ana's too"},
		{"a name twice", "ana " + anaToken + "\nana " + bobToken + "\n", nil, "ops:2: ana has a token already"},
		{"a bad name", "an<a " + anaToken + "\n", nil, `ops:1: the name "an<a"`},
		{"three words", "ana b " + anaToken + "\n", nil, "ops:1: want NAME TOKEN"},
		{"shared beside named", anaToken + "\nbob " + bobToken + "\n", nil, "mixes a shared token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ui.ParseOperators("ops", tc.text)
			switch {
			case tc.err != "" && (!errors.Is(err, ui.ErrOperators) || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want ErrOperators with %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("got %v", err)
			case tc.err == "" && len(got) != len(tc.want):
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for tok, name := range tc.want {
				if got[tok] != name {
					t.Errorf("token %s: got %q, want %q", tok, got[tok], name)
				}
			}
		})
	}
}

// writeOperators writes a token file and moves its time on, so that
// the page sees the change even within one tick of the file system's
// clock.
func writeOperators(t *testing.T, path, text string, at time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestNamedOperators: the audit names the operator whose token logged
// in, whatever a form says; a token rotated out of the file acts no
// more, its session included, and a new one acts at once, without a
// restart; a file made unreadable lets nobody in.
func TestNamedOperators(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "operators")
	start := time.Now().Add(-time.Hour)
	writeOperators(t, path, "ana "+anaToken+"\nbob "+bobToken+"\n", start)
	ops, err := ui.LoadOperators(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, app := server(t, ui.Config{Operators: ops})
	requeue := func(c *http.Client, form, key string) int {
		code, _ := post(t, c, srv, "/requeue", url.Values{"key": {key}, "actor": {"eve"}, "reason": {"checked"}, "form": {form}}, "")
		return code
	}
	bob := client(t)
	form := loginWith(t, bob, srv, bobToken)
	if _, page := get(t, bob, srv, "/"); !strings.Contains(page, `id="operator">bob<`) {
		t.Errorf("the page does not say who is logged in")
	}
	key := system.KeyPrefix + "bulk-7"
	if code := requeue(bob, form, key); code != http.StatusSeeOther {
		t.Fatalf("bob's requeue: %d", code)
	}
	audit, _ := app.AuditOf(t.Context(), key)
	if len(audit) != 1 || audit[0].Actor != "bob" {
		t.Errorf("the audit: %+v, want the requeue by bob (the form said eve)", audit)
	}
	newBob := "bob-rotated-0123456789"
	writeOperators(t, path, "ana "+anaToken+"\nbob "+newBob+"\n", start.Add(time.Minute))
	if code := requeue(bob, form, blockedKey(t, app, 1)); code != http.StatusUnauthorized {
		t.Errorf("a requeue with bob's rotated-out token's session: %d, want 401", code)
	}
	if code, _ := post(t, client(t), srv, "/login", url.Values{"token": {bobToken}}, ""); code != http.StatusForbidden {
		t.Errorf("a login with bob's old token: %d, want 403", code)
	}
	again := client(t)
	if code := requeue(again, loginWith(t, again, srv, newBob), blockedKey(t, app, 1)); code != http.StatusSeeOther {
		t.Errorf("a requeue with bob's new token: %d, want 303", code)
	}
	writeOperators(t, path, "ana short\n", start.Add(2*time.Minute))
	if code, _ := post(t, client(t), srv, "/login", url.Values{"token": {anaToken}}, ""); code != http.StatusForbidden {
		t.Errorf("a login while the token file is refused: %d, want 403", code)
	}
}

// blockedKey is the key of the app's nth blocked row, from 0.
func blockedKey(t *testing.T, app *system.Outbox, n int) string {
	t.Helper()
	pg, err := app.Page(t.Context(), system.PageQuery{State: system.Blocked, Limit: n + 1})
	if err != nil || len(pg.Rows) <= n {
		t.Fatalf("no blocked row %d: %v", n, err)
	}
	return pg.Rows[n].Key
}

// TestDoneComesFromTheServer: what a repair did is shown once, to the
// session that did it, from what the server did; a link that says it
// in its query shows nothing.
func TestDoneComesFromTheServer(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, ui.Config{Operators: shared(t)})
	c := client(t)
	key := system.KeyPrefix + "bulk-7"
	crafted := "/row?" + url.Values{"key": {key}, "done": {"requeued"}, "actor": {"eve"}}.Encode()
	if _, page := get(t, c, srv, crafted); strings.Contains(page, `id="done"`) || strings.Contains(page, "by eve") {
		t.Errorf("a crafted link shows a banner:\n%s", page)
	}
	form := login(t, c, srv)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/requeue", strings.NewReader(url.Values{"key": {key}, "reason": {"r"}, "form": {form}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	where := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(where, "done") || strings.Contains(where, "actor") {
		t.Fatalf("requeue: %d to %q, want 303 to the row with nothing said in the URL", resp.StatusCode, where)
	}
	if _, page := get(t, c, srv, where); !strings.Contains(page, "requeued by "+ui.SharedName) {
		t.Errorf("the row after its requeue does not say so:\n%s", page)
	}
	if _, page := get(t, c, srv, where); strings.Contains(page, `id="done"`) {
		t.Errorf("the banner shows twice")
	}
}

// TestAttemptsOfTheBudget: the list shows each row's attempts against
// the budget, and a row tried again after a repair says how often it
// was tried in all.
func TestAttemptsOfTheBudget(t *testing.T) {
	t.Parallel()
	srv, app := server(t, ui.Config{Operators: shared(t)})
	c := client(t)
	if _, page := get(t, c, srv, "/?state=blocked"); !strings.Contains(page, `data-label="attempts">1 of 3<`) {
		t.Errorf("the list does not show attempts as a of b:\n%s", page)
	}
	key := system.KeyPrefix + "bulk-7"
	form := login(t, c, srv)
	if code, _ := post(t, c, srv, "/requeue", url.Values{"key": {key}, "reason": {"r"}, "form": {form}}, ""); code != http.StatusSeeOther {
		t.Fatalf("requeue: %d", code)
	}
	for {
		claim, d, err := app.ClaimNext(t.Context(), 0)
		if err != nil || d.Result != system.ResultPending {
			t.Fatalf("no claim of the requeued row: %+v, %v", d, err)
		}
		if claim.Key == key {
			break
		}
	}
	_, page := get(t, c, srv, "/row?key="+url.QueryEscape(key))
	if !strings.Contains(page, `id="attempts">1 of 3, <span id="tries">2 tries in all</span>`) {
		t.Errorf("the requeued row, claimed again, does not say 1 of 3 and 2 tries in all:\n%s", page)
	}
}
