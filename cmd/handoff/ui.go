package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/outboxlab/handoff/internal/ui"
	"github.com/outboxlab/handoff/system"
)

// tokenEnv names the variable that may hold the page's token.
const tokenEnv = "HANDOFF_UI_TOKEN"

// uiCmd serves the page for the person on call (package ui) until it is
// interrupted: the outbox by state, each row's history, what needs a
// person, and, for a person who gives the token it was started with,
// requeue and reconcile.
func uiCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	appPath := fs.String("app", "", "app database (must exist)")
	crmPath := fs.String("crm", "", "CRM database (must exist; optional): the page shows the tasks it holds for a row's key; or --crm-url")
	crmURL := fs.String("crm-url", "", "the CRM's HTTP receiver, instead of --crm: the page shows its tasks for a row's key, and requeue asks it its retention")
	addr := fs.String("addr", "127.0.0.1:8081", "the address to listen on (port 0: any free port, printed); on loopback the page answers to localhost names only; another address needs --public-host")
	publicHost := fs.String("public-host", "", "the host name under which a proxy that serves HTTPS forwards the page, such as ops.example.com: the page then answers that Host only, shows nothing before a login with the token (which it needs), and sets Secure cookies; needed to listen off loopback")
	tokenFile := fs.String("token-file", "", "a file of the operators who may repair rows, NAME TOKEN a line (or one shared token alone), each token at least 16 characters; the page records the name in the audit, and reads the file again when it changes (or set "+tokenEnv+" to one shared token); without one the page is read-only")
	retention := fs.Duration("retention", 0, "how long the CRM remembers a key, for requeue, when --crm-url does not say; 0 means forever")
	rows := fs.Int("rows", 100, "rows a page lists")
	if err := parse(fs, args, stderr, false); err != nil {
		return err
	}
	if err := required(fs, "app"); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case given["crm"] && given["crm-url"]:
		return fmt.Errorf("%w: give one of --crm PATH and --crm-url URL, not both", errUsage)
	case given["crm-url"] && given["retention"]:
		return fmt.Errorf("%w: --retention goes with --crm or no CRM; --crm-url states its own", errUsage)
	case *rows > system.MaxPageRows:
		return fmt.Errorf("%w: --rows is %d, want 1 to %d", errUsage, *rows, system.MaxPageRows)
	}
	operators, err := readOperators(*tokenFile, given["token-file"])
	if err != nil {
		return err
	}
	if err := checkExposure(*addr, *publicHost, given["public-host"], operators != nil); err != nil {
		return err
	}
	var remote *remoteCRM
	if *crmURL != "" {
		if remote, err = newRemoteCRM(*crmURL, 2); err != nil {
			return err
		}
		defer remote.client.CloseIdleConnections()
	}
	if err := appMustExist(ctx, *appPath); err != nil {
		return err
	}
	cfg := ui.Config{AppShown: shown(*appPath), Operators: operators, PageRows: *rows, PublicHost: *publicHost,
		Log: slog.New(slog.NewTextHandler(stderr, nil))}
	var identity string
	switch {
	case remote != nil:
		if err := remote.readContract(ctx, system.DefaultSendTimeout); err != nil {
			return err
		}
		identity, cfg.CRMShown = remote.contract.Identity, remote.url
		cfg.TasksOf = remote.tasksFor
		cfg.Retention = func(ctx context.Context) (time.Duration, error) {
			ctx, cancel := context.WithTimeout(ctx, readTimeout)
			defer cancel()
			return remote.sender.Contract(ctx)
		}
	case *crmPath != "":
		if err := mustExist("CRM", *crmPath); err != nil {
			return err
		}
		crm, err := system.OpenCRM(ctx, *crmPath, system.Durable)
		if err != nil {
			return err
		}
		defer crm.Close()
		if identity, err = crm.Identity(ctx); err != nil {
			return err
		}
		cfg.CRMShown, cfg.TasksOf = *crmPath, crm.TasksOfKey
	}
	if cfg.Retention == nil {
		r := *retention
		cfg.Retention = func(context.Context) (time.Duration, error) { return r, nil }
	}
	app, err := system.Open(ctx, *appPath, system.Options{Worker: processPrefix() + ":ui"})
	if err != nil {
		return err
	}
	defer app.Close()
	if identity != "" {
		bound, err := app.Receiver(ctx)
		if err != nil {
			return err
		}
		if bound != "" && bound != identity {
			return fmt.Errorf("%w: %s delivers to CRM %s, this CRM is %s; is it the right CRM (file or URL)?", system.ErrWrongReceiver, shown(*appPath), bound, identity)
		}
	}
	cfg.App = app
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *publicHost == "" {
		if !isLoopback(ln.Addr()) {
			return fmt.Errorf("%w: --addr %s listens on %s, off loopback; give --public-host", errUsage, *addr, ln.Addr())
		}
		cfg.LoopbackOnly = true
	}
	handler, err := ui.New(cfg)
	if err != nil {
		return err
	}
	mode := "read-only: started without a token"
	switch {
	case *publicHost != "":
		mode = "for https://" + *publicHost + "/ through a proxy: reading and repairs need " + tokensOf(operators)
	case operators != nil:
		mode = "repairs need " + tokensOf(operators)
	}
	fmt.Fprintf(stdout, "serving the page for %s on http://%s/ (%s)\n", shown(*appPath), ln.Addr(), mode)
	return serveUntil(ctx, newHTTPServer(handler, defaultLimits), ln)
}

// readOperators returns who may repair rows: the operators of the token
// file at path when given (NAME TOKEN a line, or one shared token; read
// again when it changes), else the environment's tokenEnv as one shared
// token, else nil (read-only). It refuses a file or token it cannot use,
// naming the line: a token guessed lets anyone who reaches the page
// repair rows.
func readOperators(path string, given bool) (*ui.Operators, error) {
	if given {
		if err := mistypedURL("token-file", path); err != nil {
			return nil, err
		}
		o, err := ui.LoadOperators(path)
		if err != nil {
			return nil, fmt.Errorf("%w: --token-file: %s (for a token: head -c 24 /dev/urandom | base64)", errUsage, strings.TrimPrefix(err.Error(), ui.ErrOperators.Error()+": "))
		}
		return o, nil
	}
	token := strings.TrimSpace(os.Getenv(tokenEnv))
	if token == "" {
		return nil, nil
	}
	o, err := ui.SharedToken(token)
	if err != nil {
		return nil, fmt.Errorf("%w: the token of %s has %d characters, want at least %d (for one: head -c 24 /dev/urandom | base64)", errUsage, tokenEnv, len(token), ui.MinTokenLength)
	}
	return o, nil
}

// tokensOf says whose tokens the page takes.
func tokensOf(o *ui.Operators) string {
	if n := o.Count(); n > 1 {
		return fmt.Sprintf("a token of one of %d named operators", n)
	}
	return "the token"
}

// checkExposure refuses, as usage errors, a page that would show every
// row to whoever reaches it: an --addr off loopback without a public
// host name, and a public host name without a token or that is not a
// bare host name (the Host a proxy forwards, without scheme, port or
// path).
func checkExposure(addr, publicHost string, given bool, withTokens bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: --addr %q is not HOST:PORT, such as 127.0.0.1:8081", errUsage, addr)
	}
	switch {
	case given && (publicHost == "" || strings.ContainsAny(publicHost, "/:@ ?#")):
		return fmt.Errorf("%w: --public-host %q is not a host name: give the name a proxy serves the page under, such as ops.example.com, without scheme, port or path", errUsage, publicHost)
	case given && !withTokens:
		return fmt.Errorf("%w: --public-host needs a token (--token-file or %s): under a public name the page shows nothing without a login", errUsage, tokenEnv)
	case !given && !loopbackHost(host):
		return fmt.Errorf("%w: --addr %s is not a loopback address: the page would show every row to whoever reaches it; serve it behind a proxy that serves HTTPS and give --public-host NAME (see docs/operations.md), or listen on 127.0.0.1", errUsage, addr)
	}
	return nil
}

// loopbackHost reports whether host, of an address to listen on, is
// this machine's loopback: localhost or a loopback IP. An empty host
// listens on every interface.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLoopback reports whether a is an address on this machine's loopback.
func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// uiHelp says what the page exposes, for its help.
func uiHelp() string {
	return "ui serves, without authentication, to whoever reaches --addr (loopback by default, where it answers to localhost names only): " +
		"every row's key, title, payload, times, lease holder and audit entries, and the CRM's tasks for a key. " +
		"It is read-only unless given a token (--token-file, or " + tokenEnv + "; never on the command line, where other users see it): " +
		"then a person who logs in with the token may requeue and reconcile, with the rules, fences and audit log of handoff requeue and handoff reconcile. " +
		"Every repair must come from the page itself: a session cookie (HttpOnly, SameSite=Strict), the session's form token, and the browser's Origin. " +
		"A form over " + fmt.Sprint(ui.MaxFormBytes>>10) + " KiB is refused (413). " + limitsHelp() +
		" The page loads nothing from elsewhere and runs no script. " +
		"It refuses an address off loopback unless given --public-host NAME, for a proxy that serves HTTPS under NAME: " +
		"then it answers that Host only, shows nothing before a login with the token, and its cookies are Secure."
}
