// Package memory owns rcm's persistent state, on one of two backends behind
// one interface (backend.go): a bbolt file that one process holds (Open,
// the default), or a PostgreSQL database that any number of rcm replicas
// share (OpenPostgres, pgx and its pool). Either holds the sessions the
// proxy has seen, the task label of every turn (keyed by session
// and transcript.Fingerprint), each session's tasks, the per-task state
// records M_z, and an append-only, bounded log of calls and their routing
// decisions (events) for the inspector (each with the call's details: a few
// bytes per turn, plus the record message injected, which --memory-tokens
// bounds), and the memory messages frozen per turn (FrozenAt, PutFrozen):
// the record placed before a turn (the start of a run of its task) stays
// the same bytes in every later call. A Pending holds one transaction's
// writes as they will read once committed, so that a session's next call
// routes on them without waiting for the fsync (ViewWith).
//
// It owns the order of each session's writes (call.go, order.go): a call
// begins (Store.Begin) by waiting for its session's earlier writes, at
// most 2 s for this process's (read ahead of their commit) and 2 s for
// another replica's (claims), and takes the next place; its writes, worked
// out after its answer, are published for the next call and queued after
// the earlier ones (Call.Commit), the claim ending in their transaction.
// A session called faster than its writes commit reads
// through at most 8 of them, then waits for the oldest. What a call
// writes comes as one Write (its tasks, labels, frozen record messages,
// what it shows of its task's work, a compaction's summary by task), which
// Call.Commit stores with the call's event: the same values readable ahead
// (a Pending) and in the transaction, on either backend.
//
// It also builds the records: Record.Observe folds one model call (the
// parsed request, the task's turns, the upstream answer, which transcript.ParseReply
// reassembles from an SSE stream or a JSON completion) into a task's
// record, deterministically and idempotently; Render and Message turn a
// record, with a brief of the other tasks a routed call leaves out (their
// requests verbatim, unfinished items, files changed, progress; at most
// half the bound), into the bounded memory message; Summarizer optionally asks a
// model (go-openai, the only HTTP here, off the request path) for a terse
// progress summary. It never serves HTTP.
//
// Store, View and Tx hold what both backends share: the commit order
// (Queue), reads through Pending writes, id checks, encodings and
// redaction; each backend stores the same bytes (JSON redacted, labels in
// their binary codec) and returns them, so that the same writes read the
// same on both (the conformance tests, eachStore, run on both).
//
// bbolt layout (schema version 1): a "meta" bucket with the schema version, a
// "sessions" bucket (session id -> Session as JSON) and a "data" bucket with
// one nested bucket per session, which holds "labels" (fingerprint -> compact
// binary Label), "tasks" and "records" (task id -> JSON) and "events"
// (big-endian sequence -> JSON), and the key "committed": the id of the
// latest Pending a committed transaction made (Tx.Commits).
//
// PostgreSQL layout: versioned migrations embedded in the binary
// (migrations/NNNN_name.sql), applied by OpenPostgres and Migrate under an
// advisory lock, one replica at a time; a table per bucket (rcm_sessions,
// indexed by last use for the inspector's pages and the sweep; rcm_labels,
// rcm_tasks, rcm_records, rcm_frozen, rcm_events keyed by session), the
// committed mark per process (rcm_committed), and rcm_claims. A write
// transaction takes the advisory lock of each session it writes before
// writing it (only if free; a busy one runs the transaction again with it
// taken first, in key order, so replicas never wait in a cycle): a
// session's writes commit one after the other whichever replica makes
// them. What a call routes on is one statement per session (one snapshot).
// A call claims its session (Store.Claim) and waits, at most a bound, for
// the writes of the calls other replicas claimed before it, which it
// cannot read ahead of their commit; claims end in the call's write
// transaction, or with the liveness lock of their store's listening
// connection (a killed process, a restarted server); OpenPostgres returns
// once that lock is held, and a claim made while it is not (the
// connection down) counts for claimUnwatched. That connection also
// LISTENs for the events other replicas commit (Follow). An unreachable
// database fails operations at once for 1 s after each failed connection
// (ErrUnavailable), logged once per 10 s and counted (Outages); the pool
// reconnects by itself. The sweep runs on one replica at a time.
//
// Caveats:
//   - bbolt holds an exclusive file lock, so one process at a time opens a
//     store; a second gets ErrLocked after Options.Timeout instead of hanging.
//     Tools such as an inspector must ask the running proxy, not the file.
//     Several replicas need PostgreSQL.
//   - Byte slices handed out by bbolt are valid only inside their
//     transaction. Every read here decodes (and so copies) what it keeps
//     before the transaction ends; code added to this package must do the
//     same and never return or retain a slice obtained from a bucket.
//   - A write queued while no commit is under way commits at once; writes
//     queued during a commit gather for 50 ms and then share one commit
//     and its fsync (Queue). Writes commit in the order they are queued,
//     so a session's writes can share a commit too. A write may run more
//     than once (when another of its commit fails), so the functions
//     given to Queue, Update and UpdateRecord must only modify their
//     argument.
//     A write returns after the data is on disk; a crash (even kill -9)
//     loses at most the writes still in flight and never corrupts the file.
//     On PostgreSQL a group is one transaction; when the database cannot
//     be reached, the group's writes fail together (they are lost: the
//     calls were served, their records miss them).
//   - Secrets are never stored: every JSON value and frozen message passes
//     package redact on its way into the file, and Message renders records
//     redacted.
//   - The store forgets: with Options.Retain or MaxStore a background
//     sweeper (every DefaultSweepEvery, and once at Open) deletes sessions
//     unused for Retain and then the least recently used ones while the
//     live data exceeds MaxStore, each with everything keyed by it. bbolt
//     reuses the freed pages but never shrinks the file; Compact (rcm store
//     compact, with no proxy running) copies the live data into a new file
//     and renames it over the old one. PostgreSQL measures the bytes of a
//     session's rows (not the table files: VACUUM gives space back) and
//     sweeps on one replica at a time (an advisory lock).
//   - A task keeps at most maxRequirements requirements: the first
//     keepFirst and the latest; Record.Omitted counts the cut ones and the
//     rendered record says so.
//   - A value that does not decode yields an error naming its key; it never
//     panics and never causes other data to be dropped. PutLabels repairs an
//     undecodable label by overwriting it.
//   - A label stored with Routed set never changes (DESIGN.md's invariant);
//     PutLabels silently keeps it.
//   - Observe is a heuristic reader of what the agent did: files and
//     commands come from known tools and a small shell lexer (no
//     interpreter), exit codes only when the output shows them, amendments
//     from a short list of phrases. OpenCode's todo list belongs to the
//     session, not the task, so a record may show another task's todos.
//     A turn is read when new, when current and once more after it ends;
//     a turn the proxy never observed while it ran keeps only what its
//     messages show at that point.
package memory
