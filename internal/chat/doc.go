// Package chat is the chat message model shared by the bench and the tests
// of the core packages: an OpenAI chat-completions message with native tool
// calls, and a recorded agent run (Trajectory) as a list of such messages
// per human request, laid out as the model calls a harness makes, its
// compactions included (Lay). The bench's importers produce it, its replay encodes it for
// each API, and tests build request bodies from it (internal/chattest).
//
// Caveats: it models what OpenCode sends (string content, tool calls with
// JSON-string arguments, role "tool" results), not every shape the APIs
// accept; the proxy itself never uses it: the request path works on raw
// bytes (package transcript).
package chat
