package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUIPublicHost: ui listens off loopback when given --public-host,
// and then, over a real socket, answers that Host only, sends a reader
// who has not logged in to the login, and logs in with a Secure cookie
// a request from https://NAME that gives the token.
func TestUIPublicHost(t *testing.T) {
	const name, token = "ops.example.com", "a-token-of-some-length"
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	approveRows(t, app, 1)
	t.Setenv(tokenEnv, token)
	urls, stdout, _ := serving(t, 1, "ui", "--app", app, "--addr", "0.0.0.0:0", "--public-host", name)
	if !strings.Contains(stdout.String(), "for https://"+name+"/ through a proxy: reading and repairs need the token") {
		t.Errorf("ui does not say how it is reached: %s", stdout)
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(urls[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + port
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, host, cookie string, form url.Values) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://"+name)
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
	if resp := send(http.MethodGet, "/", "127.0.0.1:"+port, "", nil); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET / for 127.0.0.1: %d, want 421", resp.StatusCode)
	}
	if resp := send(http.MethodGet, "/", name, "", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2F" {
		t.Errorf("GET / for %s before logging in: %d to %q, want 303 to the login", name, resp.StatusCode, resp.Header.Get("Location"))
	}
	resp := send(http.MethodPost, "/login", name, "", url.Values{"token": {token}, "next": {"/"}})
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].Secure {
		t.Fatalf("login: %d, cookies %v; want 303 and a Secure cookie", resp.StatusCode, cookies)
	}
	resp = send(http.MethodGet, "/", name, cookies[0].Name+"="+cookies[0].Value, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), keyOf("case-0")) {
		t.Errorf("GET / logged in: %d; want 200 and the row:\n%s", resp.StatusCode, b)
	}
}

// TestUIUsageErrors: bad flags of ui are usage errors (exit 2) that say
// what is wanted, before any file is opened or created, and the token
// is read only from a file or the environment, long enough.
func TestUIUsageErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "approve", "--app", "app.db", "--case", "case-1", "--title", "t")
	if err := os.WriteFile("short", []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("empty", []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := folder(t, dir)
	ui := []string{"ui", "--app", "app.db", "--addr", "127.0.0.1:0"}
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"ui"}, "", "missing --app"},
		{append(ui, "--crm", "crm.db", "--crm-url", "http://127.0.0.1:1"), "", "give one of --crm PATH and --crm-url URL, not both"},
		{append(ui, "--crm-url", "http://127.0.0.1:1", "--retention", "1h"), "", "--retention goes with --crm or no CRM"},
		{append(ui, "--rows", "0"), "", "--rows is 0, want 1 or more"},
		{append(ui, "--rows", "5000"), "", "--rows is 5000, want 1 to 1000"},
		{append(ui, "--token-file", "short"), "", "--token-file: short:1: the token has 3 characters, want at least 16"},
		{append(ui, "--token-file", "empty"), "", "--token-file: empty holds no token"},
		{ui, "too-short", "the token of HANDOFF_UI_TOKEN has 9 characters, want at least 16"},
		{append(ui, "--crm-url", "ftp://x"), "", "--crm-url"},
		{append(ui, "--token", "x"), "", "flag provided but not defined: -token"},
		{[]string{"ui", "--app", "app.db", "--addr", "0.0.0.0:0"}, "", "--addr 0.0.0.0:0 is not a loopback address"},
		{[]string{"ui", "--app", "app.db", "--addr", ":0"}, "", "--addr :0 is not a loopback address"},
		{[]string{"ui", "--app", "app.db", "--addr", "ops.example.com:0"}, "", "--addr ops.example.com:0 is not a loopback address"},
		{[]string{"ui", "--app", "app.db", "--addr", "8081"}, "", `--addr "8081" is not HOST:PORT`},
		{append(ui, "--public-host", "ops.example.com"), "", "--public-host needs a token"},
		{append(ui, "--public-host", "https://ops.example.com"), "a-token-of-some-length", `--public-host "https://ops.example.com" is not a host name`},
		{append(ui, "--public-host", "ops.example.com:443"), "a-token-of-some-length", `--public-host "ops.example.com:443" is not a host name`},
		{append(ui, "--public-host", ""), "a-token-of-some-length", `--public-host "" is not a host name`},
		{append(ui, "--token-file", "postgres//h/db"), "", `--token-file "postgres//h/db" looks like a mistyped URL`},
	} {
		t.Setenv(tokenEnv, tt.env)
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v (%s=%q): exit %d, stderr %q; want 2 and %q", tt.args, tokenEnv, tt.env, code, stderr, tt.want)
		}
	}
	t.Setenv(tokenEnv, "")
	refused(t, "the app database missing.db does not exist", "ui", "--app", "missing.db", "--addr", "127.0.0.1:0")
	if diff := cmp.Diff(before, folder(t, dir)); diff != "" {
		t.Errorf("refused ui changed the folder (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "crm.db")); err == nil {
		t.Error("ui created a CRM file")
	}
}
