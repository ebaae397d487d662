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
package proxy
