// Package proxy is rcm's HTTP server: it sits between a harness and the
// model API and rebuilds every model call's context.
//
// It owns the request pipeline (Handler.ServeHTTP → assemble → forward →
// done): reading the body within --max-body, picking the mode (path prefix,
// X-RCM-Mode, --mode) and threshold, naming the session, parsing the body
// through package transcript, routing it through package router, adding
// the task's record and fitting the budget (rcm mode, packages memory and
// compaction), splicing the kept messages back into the original bytes,
// forwarding upstream, streaming the answer back one SSE event at a time,
// and, after the answer, writing what the call taught rcm to the store in
// one transaction. It also owns the upstream client, the WebSocket relay,
// the error mapping (502 upstream unreachable, 504 timeout, 499 client gone,
// all in the OpenAI error shape), the inspector under /rcm/ and the metrics.
//
// Caveats:
//   - It fails open: any internal error (parse, store, router, compaction,
//     even a panic) forwards the client's bytes unchanged with
//     X-RCM-Fallback: error. Only rcm's own input checks (413, 400 for a
//     bad X-RCM-Mode or X-RCM-Threshold) answer the client directly.
//   - It never parses JSON by hand: bodies are read through transcript.
//   - Store writes happen after the answer, off the request path, but a
//     session's next call waits (at most 2 s) for its previous call's
//     writes, so that it routes on them; calls of other sessions never wait.
//   - rcm mode places a task's record before the first request of each run
//     of the task (after another task's turn or a compaction summary) and
//     freezes it there, so a run's calls forward append-only contexts; a
//     run whose first turn fell back (the full history went out) gets no
//     record, and a task's 65th run start pushes out its oldest record.
//   - Credentials (Authorization, x-api-key) are forwarded, never stored or
//     logged; --upstream-key is added only when the client sends none.
package proxy
