package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
)

// headerAgent marks a Claude Code subagent's calls, which carry the
// parent's session id.
const headerAgent = "X-Claude-Code-Agent-Id"

// parseKey is the key of a request's conversation in the parse cache: the
// session its headers name, in its format, and the subagent when Claude
// Code marks one (its subagents share the parent's session id but not its
// history); "" when the headers name no session: the body is then parsed
// whole.
func parseKey(h http.Header, f transcript.Format) string {
	if id := sessionID(h, nil); id != "" {
		return f.String() + " " + id + " " + h.Get(headerAgent)
	}
	return ""
}

// sessionID names the conversation a request belongs to: X-RCM-Session
// (the client's override), else OpenCode's x-session-id or
// x-session-affinity, else Claude Code's X-Claude-Code-Session-Id or the
// session_id inside its metadata.user_id (a JSON string), else Codex's
// session-id or thread-id, else the id the body names (the Responses API's
// prompt_cache_key), else an id derived from the conversation's first
// messages, which stay put while the session grows, and from the client's
// credential (Authorization, x-api-key), so that two clients who open with
// the same words never share a derived session. The credential enters only
// the SHA-256 the id is cut from; it is never stored. It returns "" when
// nothing identifies the request.
func sessionID(h http.Header, t *transcript.Transcript) string {
	for _, name := range sessionHeaders {
		if v := h.Get(name); v != "" {
			return v
		}
	}
	if t == nil {
		return ""
	}
	if t.Format == transcript.AnthropicMessages {
		if uid := gjson.GetBytes(t.Body, "metadata.user_id"); uid.Type == gjson.String {
			if id := gjson.Get(uid.Str, "session_id").String(); id != "" {
				return id
			}
		}
	}
	if t.SessionKey != "" {
		return t.SessionKey
	}
	if len(t.Turns) == 0 {
		return ""
	}
	sum := sha256.New()
	for _, name := range []string{"Authorization", "X-Api-Key"} {
		sum.Write([]byte(h.Get(name)))
		sum.Write([]byte{0})
	}
	for i := 0; i < t.Preamble; i++ {
		sum.Write([]byte(t.Messages[i].Text()))
		sum.Write([]byte{0})
	}
	sum.Write([]byte(t.Turns[0].Request(t).Text()))
	return "drv_" + hex.EncodeToString(sum.Sum(nil)[:12])
}
