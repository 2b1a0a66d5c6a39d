package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/outboxlab/handoff/internal/ui"
	"github.com/outboxlab/handoff/system"
)

// keyHelp is what the help of the operator commands says about KEY.
const keyHelp = "KEY is the action key (" + system.KeyPrefix + "CASE), or just the case id: a KEY without ':' gets " + system.KeyPrefix + " put before it."

// parseKey parses the arguments of a command that takes one KEY, before,
// between or after its flags, and returns the action key: a KEY without
// ':' is a case id, and gets system.KeyPrefix.
func parseKey(fs *flag.FlagSet, args []string, stderr io.Writer) (string, error) {
	found, err := operands(fs, args, stderr)
	if err != nil {
		return "", err
	}
	switch {
	case len(found) > 1:
		return "", fmt.Errorf("%w: unexpected argument %q", errUsage, found[1])
	case len(found) == 0:
		return "", fmt.Errorf("%w: missing KEY (an action key or a case id)", errUsage)
	case !strings.Contains(found[0], ":"):
		return system.KeyPrefix + found[0], nil
	}
	return found[0], nil
}

// operatorTokenEnv holds an operator's token, for the operator actions
// of the command line: with --token-file, the audit records the name
// the file gives that token.
const operatorTokenEnv = "HANDOFF_OPERATOR_TOKEN"

// operatorFlags are the flags every operator action takes: the app
// database, the operators' token file, and why.
type operatorFlags struct {
	app, reason, tokenFile *string
}

// addOperatorFlags defines the flags on fs.
func addOperatorFlags(fs *flag.FlagSet) operatorFlags {
	return operatorFlags{
		app:       fs.String("app", "", "app database (must exist)"),
		reason:    fs.String("reason", "", "why, for the audit log"),
		tokenFile: fs.String("token-file", "", "the operators' token file, as handoff ui takes it (NAME TOKEN a line): with "+operatorTokenEnv+" set to your token, the audit records your name; without it, the OS user"),
	}
}

// check refuses missing or empty flags and returns who acts, as the
// audit records them: the operator whose token operatorTokenEnv holds,
// by the name --token-file gives it, or else the OS user. Never a name
// typed on the command line: a person can type any.
func (f operatorFlags) check(fs *flag.FlagSet) (string, error) {
	if err := required(fs, "app", "reason"); err != nil {
		return "", err
	}
	if strings.TrimSpace(*f.reason) == "" {
		return "", fmt.Errorf("%w: --reason is empty: say why, for the audit log", errUsage)
	}
	if *f.tokenFile != "" {
		if err := mistypedURL("token-file", *f.tokenFile); err != nil {
			return "", err
		}
		ops, err := ui.LoadOperators(*f.tokenFile)
		if err != nil {
			return "", fmt.Errorf("%w: --token-file: %s", errUsage, strings.TrimPrefix(err.Error(), ui.ErrOperators.Error()+": "))
		}
		token := strings.TrimSpace(os.Getenv(operatorTokenEnv))
		if token == "" {
			return "", fmt.Errorf("%w: --token-file names the operators: set %s to your token from it", errUsage, operatorTokenEnv)
		}
		name, ok := ops.Name(token)
		if !ok {
			return "", fmt.Errorf("%w: %s is no token of --token-file %s", errUsage, operatorTokenEnv, *f.tokenFile)
		}
		return name, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", fmt.Errorf("%w: the OS user is unknown: name yourself with --token-file and %s", errUsage, operatorTokenEnv)
}

// openForOperator opens the existing app database at path for an
// operator action.
func openForOperator(ctx context.Context, path string) (*system.Outbox, error) {
	if err := appMustExist(ctx, path); err != nil {
		return nil, err
	}
	return system.Open(ctx, path, system.Options{})
}
