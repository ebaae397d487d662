-- rcm's store on PostgreSQL, version 1: one row per value of the bbolt
-- layout (memory/doc.go), keyed by session. Values are the bytes bbolt
-- stores (JSON redacted, labels in their binary codec), so both backends
-- return the same reads.

-- updated_ns orders the inspector's pages and the sweep (Unix ns, as the
-- page cursor holds it).
-- Keys compare byte by byte (COLLATE "C"), as bbolt's do.
CREATE TABLE rcm_sessions (
	id         text COLLATE "C" PRIMARY KEY,
	updated_ns bigint NOT NULL,
	value      bytea NOT NULL
);
CREATE INDEX rcm_sessions_used ON rcm_sessions (updated_ns DESC, id);

CREATE TABLE rcm_labels (
	session text COLLATE "C" NOT NULL,
	fp      bytea NOT NULL,
	routed  boolean NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (session, fp)
);

CREATE TABLE rcm_tasks (
	session text COLLATE "C" NOT NULL,
	id      text COLLATE "C" NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (session, id)
);

CREATE TABLE rcm_records (
	session text COLLATE "C" NOT NULL,
	task    text COLLATE "C" NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (session, task)
);

-- seq orders a task's frozen messages (the oldest beyond 64 go); a session's
-- writes hold its lock, so one sequence for all keeps each session's order.
CREATE SEQUENCE rcm_frozen_seq;
CREATE TABLE rcm_frozen (
	session text COLLATE "C" NOT NULL,
	task    text COLLATE "C" NOT NULL,
	fp      bytea NOT NULL,
	seq     bigint NOT NULL,
	msg     bytea NOT NULL,
	PRIMARY KEY (session, task, fp)
);

CREATE TABLE rcm_events (
	session text COLLATE "C" NOT NULL,
	seq     bigint NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (session, seq)
);

-- The latest Pending each process (nonce) committed for a session.
CREATE TABLE rcm_committed (
	session text COLLATE "C" NOT NULL,
	nonce   bytea NOT NULL,
	id      bytea NOT NULL,
	PRIMARY KEY (session, nonce)
);

-- Calls under way whose writes are still to commit, so that a session's
-- next call on another replica waits for them (Store.Claim); live is the
-- advisory lock its store holds while it is open, pid the backend that held
-- it then (a reconnection, or a restart of the server, ends older claims).
CREATE TABLE rcm_claims (
	id      bigserial PRIMARY KEY,
	session text COLLATE "C" NOT NULL,
	nonce   bytea NOT NULL,
	live    bigint NOT NULL,
	pid     integer NOT NULL,
	at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rcm_claims_session ON rcm_claims (session, id);
