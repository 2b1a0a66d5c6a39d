package sim

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxlab/handoff/faults"
)

// damage commits an index whose entries do not match its table: what
// SQLite's integrity check reports (and its quick check does not).
var damage = []string{
	`CREATE TABLE damaged (a INTEGER PRIMARY KEY, s TEXT, u TEXT)`,
	`CREATE INDEX damaged_s ON damaged (s)`,
	`INSERT INTO damaged VALUES (1, 'a', 'z')`,
	`PRAGMA writable_schema = ON`,
	`UPDATE sqlite_schema SET sql = 'CREATE INDEX damaged_s ON damaged (u)' WHERE name = 'damaged_s'`,
	`PRAGMA writable_schema = RESET`,
}

// harmless commits a table of nothing.
var harmless = []string{`CREATE TABLE harmless (a INTEGER)`}

// TestIntegrityCheckAfterADatabaseFault runs a step under a full app
// database while another connection commits to the file, or not: SQLite's
// integrity check runs exactly when something was committed under the
// fault, so damage committed then is reported, and so is earlier damage
// that a commit under the fault comes upon; a step that commits nothing
// left the file as it was and is not checked. It does so on an Env of
// its own, which asks SQLite's data_version, and on a renewable one,
// whose lane reads the file's wal-index.
func TestIntegrityCheckAfterADatabaseFault(t *testing.T) {
	for _, renewable := range []bool{false, true} {
		t.Run(map[bool]string{false: "data_version", true: "wal-index"}[renewable], func(t *testing.T) {
			integrityCheckAfterADatabaseFault(t, renewable)
		})
	}
}

func integrityCheckAfterADatabaseFault(t *testing.T, renewable bool) {
	for _, c := range []struct {
		name           string
		before, during []string // what another connection commits before the step, and under its fault
		damaged        bool     // the step must report damage
	}{
		{"damage committed under the fault", nil, damage, true},
		{"a commit under the fault after earlier damage", damage, harmless, true},
		{"nothing committed under the fault after earlier damage", damage, nil, false},
		{"a harmless commit under the fault", nil, harmless, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, done, err := NewEnvIn(t.Context(), EnvOptions{Dir: t.TempDir(), Renewable: renewable})
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			if marked := env.lane.walIndexOf(appFile) != nil; marked != renewable {
				t.Fatalf("the Env reads the wal-index: %t, want %t", marked, renewable)
			}
			other, err := sql.Open("sqlite", filepath.Join(env.cfg.Dir, appFile))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			other.SetMaxOpenConns(1) // writable_schema is the connection's
			commit := func(queries []string) error {
				for _, q := range queries {
					if _, err := other.ExecContext(t.Context(), q); err != nil {
						return err
					}
				}
				return nil
			}
			if err := commit(c.before); err != nil {
				t.Fatal(err)
			}
			var during error
			err = env.withDatabaseFault(t.Context(), faults.AppFull, env.app, func() { during = commit(c.during) })
			if during != nil {
				t.Fatal(during)
			}
			if reported := err != nil && strings.Contains(err.Error(), "fails SQLite's integrity check"); reported != c.damaged || !reported && err != nil {
				t.Errorf("got %v; want damage reported: %t", err, c.damaged)
			}
		})
	}
}
