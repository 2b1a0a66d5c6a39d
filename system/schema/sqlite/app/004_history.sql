-- Version 3 to 4: each row's history, which the row itself does not
-- keep (it holds its latest attempt and error only): every claim with
-- the attempt it counted, what each attempt came to as far as this
-- database recorded it, a block at a claim and its reason, and every
-- repair, with who and why and what it cleared. Read a key at a time,
-- through its index (see Outbox.History).
	CREATE TABLE history (
		seq    INTEGER PRIMARY KEY,
		at     INTEGER NOT NULL,
		key    TEXT NOT NULL,
		actor  TEXT NOT NULL,
		event  TEXT NOT NULL,
		detail TEXT NOT NULL
	) STRICT;
	CREATE INDEX history_key ON history (key, seq);
