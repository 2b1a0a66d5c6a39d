-- Version 1 to 2: an identity, made once, so that an app database can
-- tell this CRM from another file; the memory of keys apart from the
-- tasks, so that a key can be forgotten while its task stays. The times
-- the keys were stored are stamped after the step (see kind.stamp).
	CREATE TABLE meta (
		name  TEXT PRIMARY KEY,
		value TEXT NOT NULL
	) STRICT;
	INSERT INTO meta (name, value) VALUES ('identity', lower(hex(randomblob(16))));
	CREATE TABLE tasks_v2 (
		id      INTEGER PRIMARY KEY,
		key     TEXT NOT NULL,
		payload TEXT NOT NULL
	) STRICT;
	INSERT INTO tasks_v2 (id, key, payload) SELECT id, key, payload FROM tasks;
	DROP TABLE tasks;
	ALTER TABLE tasks_v2 RENAME TO tasks;
	CREATE TABLE keys (
		key       TEXT PRIMARY KEY,
		task_id   INTEGER NOT NULL REFERENCES tasks (id),
		stored_at INTEGER NOT NULL
	) STRICT;
	INSERT INTO keys (key, task_id, stored_at) SELECT key, id, 0 FROM tasks;
