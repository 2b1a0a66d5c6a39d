-- Version 1 of the SQLite CRM database: tasks by key. A new file runs
-- every step from this one, in one transaction.
	CREATE TABLE tasks (
		id      INTEGER PRIMARY KEY,
		key     TEXT NOT NULL UNIQUE,
		payload TEXT NOT NULL
	) STRICT;
