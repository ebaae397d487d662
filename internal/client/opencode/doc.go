// Package opencode runs the real OpenCode client (npm package opencode-ai)
// headless and offline, so that tests and `rcm bench run` can drive it
// against rcm as a user would.
//
// It owns four things:
//   - Install: `npm i opencode-ai@VERSION` into a per-version cache
//     directory, reused once complete;
//   - Env: the environment that isolates a run from the user's own OpenCode
//     (private HOME and XDG directories, no auto-update, no model list
//     fetch, no plugin installs from the network);
//   - Config: the opencode.json that points OpenCode at rcm, with one
//     provider per rcm mode (native, router, rcm), so that an A/B arm is
//     chosen by choosing the model ("native/m1" vs "rcm/m1");
//   - Run and Server: `opencode run` for one-shot prompts, and `opencode
//     serve` driven through its HTTP API (sessions, prompts, messages,
//     summarize, abort) for multi-turn sessions.
//
// A typical driver:
//
//	bin, _ := opencode.Install(ctx, "", opencode.Version)
//	env, _ := opencode.Env(home)
//	opencode.Config{Proxy: "http://127.0.0.1:8787"}.Write(opencode.GlobalConfig(home))
//	srv, _ := opencode.Start(ctx, bin, dir, env, 0)
//	defer srv.Close()
//	s, _ := srv.CreateSession(ctx, dir, "")
//	msg, err := srv.Prompt(ctx, s.ID, dir, "rcm", "m1", "fix the failing test")
//
// Caveats: OpenCode's HTTP API is not versioned; the types here decode
// only the fields rcm uses and were checked against Version. Even with
// Env, OpenCode starts a background `npm install @opencode-ai/plugin`;
// Env's .npmrc points that at a closed loopback port so it fails at once
// instead of reaching the network. Process-group handling (killing the
// server and everything it spawned) is Unix only; elsewhere only the
// OpenCode process itself is killed.
package opencode
