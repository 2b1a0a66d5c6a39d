package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

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

// operatorFlags are the flags every operator action takes: the app
// database, who acts and why.
type operatorFlags struct {
	app, reason, actor *string
}

// addOperatorFlags defines the flags on fs.
func addOperatorFlags(fs *flag.FlagSet) operatorFlags {
	return operatorFlags{
		app:    fs.String("app", "", "app database (must exist)"),
		reason: fs.String("reason", "", "why, for the audit log"),
		actor:  fs.String("actor", "", "who acts, for the audit log (default: the OS user)"),
	}
}

// check refuses missing or empty flags and returns who acts: --actor, or
// the OS user.
func (f operatorFlags) check(fs *flag.FlagSet) (string, error) {
	if err := required(fs, "app", "reason"); err != nil {
		return "", err
	}
	if strings.TrimSpace(*f.reason) == "" {
		return "", fmt.Errorf("%w: --reason is empty: say why, for the audit log", errUsage)
	}
	given := false
	fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == "actor" })
	actor := strings.TrimSpace(*f.actor)
	switch {
	case given && actor == "":
		return "", fmt.Errorf("%w: --actor is empty: say who acts", errUsage)
	case actor != "":
		return actor, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", fmt.Errorf("%w: the OS user is unknown: say who acts with --actor", errUsage)
}

// openForOperator opens the existing app database at path for an
// operator action.
func openForOperator(ctx context.Context, path string) (*system.Outbox, error) {
	if err := appMustExist(ctx, path); err != nil {
		return nil, err
	}
	return system.Open(ctx, path, system.Options{})
}
