// Package proxy is rcm's HTTP server: it sits between a harness and the
// model API and rebuilds every model call's context.
//
// It owns the request pipeline (Handler.ServeHTTP → assemble → forward →
// done): access checks (auth.go), reading the body within --max-body and
// decoding a compressed one (input.go), picking the mode (path prefix,
// X-RCM-Mode, --mode) and threshold, naming the session, parsing the body
// through package transcript, routing it through package router, adding
// the task's record and fitting the budget (rcm mode, packages memory and
// compaction), splicing the kept messages back into the original bytes,
// forwarding upstream through httputil.ReverseProxy (which aborts the
// client's response when the upstream breaks off mid-answer), streaming the
// answer back one SSE event at a time,
// and, after the answer, writing what the call taught rcm to the store in
// one transaction. The Responses API's WebSocket mode goes through the same
// pipeline frame by frame in router and rcm mode (websocket.go: each
// connection's conversation expands frames chained on previous_response_id
// into self-contained requests); native mode relays it byte for byte
// (upgrade.go). It also owns the upstream client, the WebSocket relay,
// the error mapping (502 upstream unreachable, 504 timeout, 499 client gone,
// all in the OpenAI error shape), the JSON inspector endpoints (with a
// session's status for rcm statusline, status.go) and metrics
// (client_golang, metrics.go) under /rcm/, where it mounts the web
// inspector (package inspector) and publishes each stored call, with its
// details, to the inspector's feed, and the OpenTelemetry span of each
// model call (trace.go: off without an OTLP endpoint; it continues the
// client's traceparent and passes its own upstream; it exports sizes,
// decisions and usage, never message contents).
//
// Caveats:
//   - It fails open: any internal error (parse, store, router, compaction,
//     even a panic) forwards the client's bytes unchanged with
//     X-RCM-Fallback: error. Only rcm's own checks answer the client
//     directly: 401/403 (access), 413, 415 and 400 (a bad X-RCM-Mode,
//     X-RCM-Threshold, session id or an unreadable body).
//   - Routing is skipped for calls above Config.RouteMessages (too-large)
//     and for clients already gone: the router itself does not watch ctx.
//   - It never parses JSON by hand: bodies are read through transcript.
//   - A call is complete, and recorded, once its answer's terminal event
//     (transcript.Format.Final: response.completed, message_stop, [DONE])
//     has been written and flushed to the client, or a non-streamed body
//     whole, whatever the client does next (Codex closes its connection
//     on response.completed, which cancels the rest of the upstream's
//     stream). A client that leaves before that cancels the upstream call.
//   - Store writes happen after the answer, off the request path, 3 ms
//     after it (so that on few cores they do not compete with answers being
//     delivered), but a session's next call waits (at most 2 s) for its
//     previous call's writes, ending that delay, so that it routes on them.
//     memory owns that order (memory.Store.Begin and memory.Call); this
//     package works out what a call writes (memory.Write) and hands it
//     over (memory.Call.Commit).
//     It waits until they are worked out (the record update), not for their
//     commit: it reads the store through a memory.Pending of them, and so
//     forwards what it would forward after their fsync. Back to back, each
//     call's writes are worked out on the uncommitted ones before them and
//     queued after them (memory.Store.Queue), in the same commit or a later
//     one, so no call waits for an fsync, unless more than 8 of its
//     session's writes are still to commit (a session called faster than
//     the store commits): then it waits for the oldest. If the transaction then
//     fails, the next call has routed on writes the store lacks; later calls
//     re-derive the labels and tasks, and render anew a record that was not
//     frozen. Calls of other sessions never wait. On a store shared by
//     replicas (PostgreSQL, Config.Store) each ordered call also claims its
//     session (in memory.Store.Begin) and waits, at most 2 s, for the writes of
//     the session's calls that other replicas claimed before it: those it
//     cannot read ahead; the claim is released in the call's write
//     transaction. A store that cannot be reached is counted
//     (rcm_store_unavailable_total), not logged per call; GET /rcm/readyz
//     answers 503 meanwhile.
//   - rcm mode places a task's record before the first request of each run
//     of the task (after another task's turn or a compaction summary) and
//     freezes it there, so a run's calls forward append-only contexts; the
//     record briefs the other tasks whose turns the call leaves out (read
//     with it in one read), and a new task's first run gets a record for
//     that brief alone; a run whose first calls fell back (the full
//     history went out) gets its record on its first routed call, whose
//     prefix changes before it anyway, and a task's 65th run start pushes
//     out its oldest record.
//     The call is read into its task's record before the write transaction
//     (at most 5 s), and labels beyond 4096 new turns go in transactions of
//     their own, so that one huge call holds the store's single writer only
//     briefly. Durability: a call whose answer completed more than 1 s
//     before a crash (even kill -9) is recorded (cmd/rcm's crash-tagged
//     trials check it).
//   - Nothing it stores or logs holds a secret (package redact); the
//     client's own messages are forwarded untouched.
//   - Credentials (Authorization, x-api-key) are forwarded, never stored or
//     logged; --upstream-key is added only when the client sends none.
//   - /v1/messages (Anthropic) goes to --anthropic-upstream, everything
//     else to --upstream. A Claude Code subagent's call (its parent's
//     session id plus x-claude-code-agent-id) is forwarded as sent and
//     counts for the parent's current task; count_tokens passes through.
package proxy
