// Package scripted is a fake model server that answers from a script, on
// the OpenAI chat-completions API, Anthropic's Messages API and OpenAI's
// Responses API. The proxy's tests, the real-client end-to-end tests
// (OpenCode, Claude Code, Codex), `rcm bench replay` and the bench
// runner's CI use it as the upstream model.
//
// It serves
//
//	POST .../chat/completions       streamed (SSE) when the body says "stream": true, else one JSON object
//	POST .../messages               the same choice of reply as an Anthropic Messages stream
//	POST .../messages/count_tokens  an estimate of the body's tokens (Claude Code asks now and then)
//	POST .../responses              the same choice of reply as an OpenAI Responses stream: a message
//	                                item and function_call (or custom_tool_call) items, each announced,
//	                                filled by its deltas and done, then response.completed with all of them
//	GET  .../responses              upgraded to the Responses WebSocket (Codex's): each response.create
//	                                frame is a call, answered with those events, one frame each; a frame
//	                                continuing the connection's last response (previous_response_id) is
//	                                read with its history, as the API remembers it
//	GET  .../models                 the script's model ids
//
// (any path prefix, so a base URL with or without /v1 works) and answers
// every other path with 404 in the OpenAI error shape. Every request, and
// every WebSocket frame, is recorded with its body exactly as received. A
// Responses call with "generate": false (Codex's warm-up) is answered with
// no output, whatever the script says.
//
// # Choosing a reply
//
// For each model call the server takes, in order:
//  1. the next reply queued with Server.Enqueue for the call's x-session-id,
//     then one queued for any session (""); title calls are never served
//     from the queue, because OpenCode sends them concurrently with the
//     first agent call of a session and would race it for queued replies;
//  2. the first rule whose Match holds and whose Times is not used up (a
//     rule built in Go may make its reply from the call: Rule.Answer);
//  3. the script's default reply.
//
// A Match's fields must all hold (an empty field always holds):
//
//	user     substring of the last user message's text
//	tool     substring of the last tool result after the last user message
//	system   substring of the system prompt (all system/developer messages,
//	         the Messages API's system field, the Responses API's instructions)
//	kind     the call's kind: agent, title, compaction or subagent
//	         (as package transcript classifies it)
//	last     role of the final message that is no system prompt: user, tool
//	         or assistant
//	session  the x-session-id header, exactly
//
// Each API's body is read as the proxy reads it (package transcript): a
// Messages user message's tool_result blocks are tool results, its text
// (less Claude Code's reminders) a user message after them; a Responses
// *_output item is a tool result, Codex's own context messages are system
// prompts.
//
// Put side-call rules (kind title, compaction) first: a title call's user
// message repeats the user's request, so a rule matching on user text alone
// also matches it.
//
// In a reply's text and tool-call arguments, {{workdir}} is replaced by the
// working directory named in OpenCode's system prompt ("Working directory:
// /path" inside <env>), JSON-escaped in arguments; it stays as is when the
// prompt names none. Edit and write tools need absolute paths.
//
// Marked is a script for driving real clients: the user's request says what
// the model does ("RUN: cmd" runs cmd through the client's shell tool, and
// so on).
//
// # Script JSON
//
//	{
//	  "models": ["m1"],
//	  "rules": [
//	    {"when": {"kind": "title"}, "reply": {"text": "Scripted title"}},
//	    {"when": {"user": "fix the bug", "last": "user"},
//	     "reply": {"tool_calls": [{"name": "edit", "arguments":
//	       {"filePath": "{{workdir}}/a.go", "oldString": "x", "newString": "y"}}]},
//	     "times": 1},
//	    {"when": {"tool": "Edit applied"}, "reply": {"text": "Done."}}
//	  ],
//	  "default": {"text": "ok"}
//	}
//
// Top level: models (ids listed by /models), rules (tried in order), default
// (a reply; absent means an empty text reply), hold (a Go duration: how
// long an HTTP stream stays open after its last event unless the client
// leaves, as an API's may). A rule: when (a Match, the
// keys above; absent matches every call), reply, times (how many calls the
// rule may answer; 0 or absent means unlimited). A reply:
//
//	text         assistant text
//	tool_calls   [{"id": "call_1", "name": "bash", "arguments": ...}]; arguments
//	             is a JSON string holding the arguments' JSON text, or the
//	             arguments object itself; id defaults to call_<n>,
//	             arguments to {}
//	status       HTTP status; 0 or 200 is success, anything else (up to 599)
//	             answers an error
//	error        the error reply's body, verbatim (default: an OpenAI error
//	             object naming the status)
//	delay        wait before the response headers, a Go duration ("250ms")
//	chunk_delay  wait between SSE events
//	usage        {"prompt": n, "completion": n}; absent means an estimate of
//	             about four bytes per token
//	hang         send the headers and the first chunk, then block until the
//	             client goes away (for disconnect tests)
//
// Unknown keys and bad values are refused with an error naming the rule
// index and the field.
//
// A chat stream is: a role chunk, content deltas, for each tool call a delta with
// index, id, type and name followed by deltas with argument fragments, a
// chunk with finish_reason ("stop" or "tool_calls"), a usage chunk (empty
// choices) when stream_options.include_usage is true, then "data: [DONE]".
//
// # Running it
//
//	script, err := scripted.LoadScriptFile(path) // validated; errors name rule and field
//	s := scripted.New(script)                     // an http.Handler; panics on an invalid script
//	ln, err := net.Listen("tcp", addr)            // ":0" picks a port: print ln.Addr()
//	err = s.Serve(ctx, ln)                        // until ctx is done; or httptest.NewServer(s)
//
// Tests then read s.Requests() or s.Session(id) (each Recorded says which
// rule answered: its index, AnsweredByQueue, AnsweredByDefault or
// AnsweredEmpty) and may s.Enqueue replies or s.Reset() between cases.
//
// Caveats: it is a test double, not a model. Token counts are estimates
// unless the script gives them. Request bodies over 64 MiB are refused
// with 413. A WebSocket lives until its client closes it: Serve's shutdown
// does not wait for it.
package scripted
