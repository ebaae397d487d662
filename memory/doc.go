// Package memory owns rcm's persistent state: one bbolt file holding the
// sessions the proxy has seen, the task label of every turn (keyed by session
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
// It also builds the records: Record.Observe folds one model call (the
// parsed request, the task's turns, the upstream answer, which transcript.ParseReply
// reassembles from an SSE stream or a JSON completion) into a task's
// record, deterministically and idempotently; Render and Message turn a
// record into the bounded memory message; Summarizer optionally asks a
// model (go-openai, the only HTTP here, off the request path) for a terse
// progress summary. It never serves HTTP.
//
// Layout (schema version 1): a "meta" bucket with the schema version, a
// "sessions" bucket (session id -> Session as JSON) and a "data" bucket with
// one nested bucket per session, which holds "labels" (fingerprint -> compact
// binary Label), "tasks" and "records" (task id -> JSON) and "events"
// (big-endian sequence -> JSON), and the key "committed": the id of the
// latest Pending a committed transaction made (Tx.Commits).
//
// Caveats:
//   - bbolt holds an exclusive file lock, so one process at a time opens a
//     store; a second gets ErrLocked after Options.Timeout instead of hanging.
//     Tools such as an inspector must ask the running proxy, not the file.
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
//   - Secrets are never stored: every JSON value and frozen message passes
//     package redact on its way into the file, and Message renders records
//     redacted.
//   - The store forgets: with Options.Retain or MaxStore a background
//     sweeper (every DefaultSweepEvery, and once at Open) deletes sessions
//     unused for Retain and then the least recently used ones while the
//     live data exceeds MaxStore, each with everything keyed by it. bbolt
//     reuses the freed pages but never shrinks the file; Compact (rcm store
//     compact, with no proxy running) copies the live data into a new file
//     and renames it over the old one.
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
