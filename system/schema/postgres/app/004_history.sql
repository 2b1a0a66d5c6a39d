-- Version 3 to 4: each row's history (see the SQLite schema's
-- 004_history.sql), read a key at a time through its index.
	CREATE TABLE SCHEMA.history (
		seq    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at     BIGINT NOT NULL,
		key    TEXT NOT NULL,
		actor  TEXT NOT NULL,
		event  TEXT NOT NULL,
		detail TEXT NOT NULL
	);
	CREATE INDEX history_key ON SCHEMA.history (key, seq);
	UPDATE SCHEMA.handoff_version SET version = 4;
