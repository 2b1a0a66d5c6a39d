-- Version 1 to 2: approvals.title TEXT becomes BYTEA, the title's UTF-8
-- bytes, since TEXT cannot hold NUL. Every table is qualified by the
-- placeholder SCHEMA, which the app database's schema replaces when the
-- step runs.
	ALTER TABLE SCHEMA.approvals ALTER COLUMN title TYPE BYTEA USING convert_to(title, 'UTF8');
	UPDATE SCHEMA.handoff_version SET version = 2;
