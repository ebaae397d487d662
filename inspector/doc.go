// Package inspector is rcm's live web inspector: the page served at /rcm/
// (plain HTML, CSS and JavaScript embedded in the binary; no build step, no
// CDN, it works offline), a live feed of calls as server-sent events
// (GET /rcm/feed), and a per-session timeline plot rendered as SVG
// (GET /rcm/sessions/{id}/timeline.svg).
//
// It reads the store through Source (which *memory.Store satisfies) and
// learns of calls through Feed, which the proxy publishes to after each
// call's store write; it never imports the proxy. The page reads the
// proxy's JSON endpoints (/rcm/sessions, /rcm/sessions/{id}) for the rest.
// Register puts its routes on the proxy's /rcm/ mux, so that whatever guards
// that mux (access rules) guards them too, and it answers its errors with
// the Fail the proxy gives it, so that /rcm/ answers every error in one
// shape.
//
// Caveats:
//   - The feed is best effort: a subscriber whose buffer is full misses
//     calls (it is told how many, as an SSE "dropped" event, and the page
//     reloads the session); publishing never blocks the request path.
//   - A stream lasts until its client leaves or Feed.Close (server
//     shutdown); it sends a comment every 15 s so that a gone client is
//     noticed even when no call happens.
//   - Token figures are the proxy's estimates (bytes / 4), of the turns as
//     received: a turn condensed by the --context-tokens budget shows its
//     received size. A call's received tokens are its whole body's; its
//     bars hold the messages, and the page says how many tokens the other
//     fields (tools, options) hold.
//   - The cached-prefix share is the proxy's (the longest prefix shared
//     with an earlier call still in the provider's cache, --cache-ttl);
//     task titles, a session's client and first request too.
package inspector
