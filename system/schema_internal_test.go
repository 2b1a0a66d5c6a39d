package system

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stepName is the name of a schema file that takes a database to the
// version it starts with.
var stepName = regexp.MustCompile(`^([0-9]{3})_[a-z0-9_]+\.sql$`)

// TestSchemaFiles: every embedded schema file is applied by a version step
// of its backend's code, and every step applies the file named for it: a
// file NNN_name.sql is the step to version NNN, create.sql what a new
// database runs where it does not run every step. A file added without
// its step, a step without its file, or a file named for another step
// fails here, instead of a database taking a step the files do not say.
func TestSchemaFiles(t *testing.T) {
	t.Parallel()
	steps := func(from map[int]string) map[int]string { // by the version they take a database to
		to := map[int]string{}
		for v, sql := range from {
			to[v+1] = sql
		}
		return to
	}
	sqliteSteps := func(k kind) map[int]string { return steps(maps.Collect(slices.All(k.migrations))) }
	for _, tt := range []struct {
		dir     string
		oldest  int            // the version the first step starts from
		version int            // the version the code makes
		create  string         // what a new database runs; "" when it runs every step from oldest
		records string         // what create says to record the version; "" without create
		steps   map[int]string // the SQL of the step to each version, by that version
	}{
		{dir: "sqlite/app", oldest: 0, version: int(appDatabase.version()), steps: sqliteSteps(appDatabase)},
		{dir: "sqlite/crm", oldest: 0, version: int(crmDatabase.version()), steps: sqliteSteps(crmDatabase)},
		{dir: "postgres/app", oldest: 1, version: postgresVersion, create: postgresSchema,
			records: fmt.Sprintf("INSERT INTO handoff_version (kind, version) VALUES ('app', %d);", postgresVersion), steps: steps(migrations)},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			entries, err := fs.ReadDir(schemaFiles, "schema/"+tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			applied := map[int]string{} // the file of each step, by its version
			created := false
			for _, e := range entries {
				name := e.Name()
				sql := schemaFile(tt.dir + "/" + name)
				m := stepName.FindStringSubmatch(name)
				switch {
				case name == "create.sql" && tt.create != "":
					created = true
					if sql != tt.create {
						t.Errorf("%s is not what a new database runs", name)
					}
					if !strings.Contains(sql, tt.records) {
						t.Errorf("%s does not record version %d: want %q", name, tt.version, tt.records)
					}
					continue
				case m == nil:
					t.Errorf("%s is neither NNN_name.sql nor a create.sql that a new database runs: no step applies it", name)
					continue
				}
				v, _ := strconv.Atoi(m[1]) // three digits
				switch {
				case applied[v] != "":
					t.Errorf("%s and %s are both the step to version %d", applied[v], name, v)
				case v <= tt.oldest || v > tt.version:
					t.Errorf("%s is the step to version %d, but the code takes databases from version %d to %d", name, v, tt.oldest, tt.version)
				case tt.steps[v] != sql:
					t.Errorf("the step to version %d does not apply %s", v, name)
				}
				applied[v] = name
			}
			for v := tt.oldest + 1; v <= tt.version; v++ {
				if applied[v] == "" {
					t.Errorf("no file is the step to version %d", v)
				}
			}
			if len(tt.steps) != tt.version-tt.oldest {
				t.Errorf("the code has %d steps, want one to each version from %d to %d", len(tt.steps), tt.oldest+1, tt.version)
			}
			if tt.create != "" && !created {
				t.Errorf("no create.sql, which a new database runs")
			}
		})
	}
}

// lastErrorCheck is the CHECK of an outbox's last_error column: the list
// of last errors, and the operator and pattern of a local cause.
var lastErrorCheck = regexp.MustCompile(`last_error\s+TEXT\s+CHECK\s*\(last_error IN \(([^)]*)\)(?:\s+OR last_error (\w+) '([^']*)')?\)`)

// TestLastErrorChecks: the last_error CHECK of each backend's outbox, as a
// database of the current version has it, allows exactly the last errors
// of the LastError constants in the package's Go files, and a local cause:
// LastErrorLocalPrefix and at least one character. A constant added,
// removed or changed without the SQL of every backend, or the other way
// round, fails here.
func TestLastErrorChecks(t *testing.T) {
	t.Parallel()
	want := lastErrors(t)
	for _, tt := range []struct {
		backend   string
		sql       string // what makes the outbox of a new database
		op, local string // how the CHECK must allow a local cause
		wildcards string // the characters that the pattern language of op reads as more than themselves
	}{
		{"sqlite", strings.Join(appDatabase.migrations, "\n"), "GLOB", LastErrorLocalPrefix + "?*", `*?[`},
		{"postgres", postgresSchema, "LIKE", LastErrorLocalPrefix + "_%", `%_\`},
	} {
		t.Run(tt.backend, func(t *testing.T) {
			checks := lastErrorCheck.FindAllStringSubmatch(tt.sql, -1)
			if len(checks) == 0 {
				t.Fatal("no last_error CHECK in the SQL")
			}
			check := checks[len(checks)-1] // the one the outbox has
			got := map[string]bool{}
			for item := range strings.SplitSeq(check[1], ",") {
				item = strings.TrimSpace(item)
				v, opened := strings.CutPrefix(item, "'")
				v, closed := strings.CutSuffix(v, "'")
				if !opened || !closed || strings.Contains(v, "'") {
					t.Errorf("%s in the last_error list is not a plain SQL string", item)
				}
				got[v] = true
			}
			for v, name := range want {
				if !got[v] {
					t.Errorf("the last_error CHECK does not allow %q, the value of %s", v, name)
				}
			}
			for v := range got {
				if want[v] == "" {
					t.Errorf("the last_error CHECK allows %q, which is no LastError constant", v)
				}
			}
			if check[2] != tt.op || check[3] != tt.local {
				t.Errorf("the last_error CHECK allows a local cause as %s %q, want %s %q (LastErrorLocalPrefix and at least one character)",
					check[2], check[3], tt.op, tt.local)
			}
			if strings.ContainsAny(LastErrorLocalPrefix, tt.wildcards) {
				t.Errorf("LastErrorLocalPrefix %q holds a character that %s reads as a wildcard (%s)", LastErrorLocalPrefix, tt.op, tt.wildcards)
			}
		})
	}
}

// lastErrors are the values of the LastError constants that the
// package's Go files declare, but LastErrorLocalPrefix (a prefix, not a
// last error), with the name of each: read from the source, so that a
// constant added anywhere is among them.
func lastErrors(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			d, ok := decl.(*ast.GenDecl)
			if !ok || d.Tok != token.CONST {
				continue
			}
			for _, spec := range d.Specs {
				s := spec.(*ast.ValueSpec)
				for i, name := range s.Names {
					if !strings.HasPrefix(name.Name, "LastError") || name.Name == "LastErrorLocalPrefix" {
						continue
					}
					var lit *ast.BasicLit
					if i < len(s.Values) {
						lit, _ = s.Values[i].(*ast.BasicLit)
					}
					if lit == nil || lit.Kind != token.STRING {
						t.Errorf("%s (%s) is not a string literal; the test cannot read its value", name.Name, fset.Position(name.Pos()))
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					values[v] = name.Name
				}
			}
		}
	}
	if values[LastErrorTransient] != "LastErrorTransient" {
		t.Fatalf("read the LastError constants %v, without LastErrorTransient", values)
	}
	return values
}
