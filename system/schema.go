package system

import "embed"

// schemaFiles are the schemas of the databases as SQL files, one folder
// per backend and database under schema/ (sqlite/app, sqlite/crm,
// postgres/app). A file NNN_name.sql is the step that takes a database
// from version NNN-1 to NNN; create.sql, where a backend has one, makes
// a new database at the latest version in one step, where a new SQLite
// file runs every step from 001 instead. Each backend's Go code names the
// file of each of its version steps in one place (appDatabase and
// crmDatabase, postgresSchema and migrations), and TestSchemaFiles checks
// that it names every file.
//
// A statement keeps, down to the indentation inside its parentheses,
// the text that made the databases already in use: SQLite keeps the text
// of every CREATE in the file (sqlite_schema), so a reindented statement
// would make new files differ from older ones. Comments stand at the top
// of a file, outside every statement, for the same reason.
//
//go:embed schema
var schemaFiles embed.FS

// schemaFile is the SQL of the file at name under schema/. It runs as
// the package loads, with names written in the code: a name that is not
// there is a mistake in the code, and panics, as a regexp.MustCompile of
// a pattern that does not compile does.
func schemaFile(name string) string {
	b, err := schemaFiles.ReadFile("schema/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}
