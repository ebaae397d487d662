// Package router decides which task each turn of a session belongs to and
// which turns a call forwards.
//
// Route is a pure function of the parsed transcript, the labels the store
// holds for its turns (Prior, by turn fingerprint) and per-call Options,
// plus the optional model classifier. It never writes to the store: the
// proxy persists the returned decisions (Decision.Prior).
//
// # Labels
//
// Task ids are stable within a session: "t1", "t2", ... in order of
// appearance, or the name of an explicit tag. A turn routed once keeps its
// label forever (the forwarded prefix of a task stays stable); a turn that
// fell back (Routed false) is classified again while it is the current turn,
// so that its tool calls can reveal the task. Earlier fallback turns keep
// their guess and are always forwarded. Summary turns (the harness's
// post-compaction recap) belong to every task and are always forwarded.
//
// # Signals, cheapest first
//
//   - Tag: the X-RCM-Task header (Options.Task), or the written convention
//     "[task: NAME]" anywhere in the request ("[task: auth-fix] add a test").
//     NAME is 1 to 64 letters, digits, '-', '_', '.', '/', case-folded. A new
//     name opens a task; "[task: t2]" returns to an automatically named one.
//   - Workspace: the checkouts the turn names or works in. A checkout is the
//     first two components of an absolute path ("/work/ws3"), three under
//     /home or /Users ("/home/dev/project"); system directories (/tmp, /usr,
//     /dev, ...) never count. Roots named by the request, a bash "workdir" or
//     a "cd" target decide first; paths tool calls merely touch after. A root
//     no task has used, named by the request or used as working directory,
//     opens a task; merely touched paths never do.
//   - Follow-up: a slash command, a reply of at most four words, or at most
//     eight opening with a reply word ("yes please", "go ahead", "commit,
//     push") continues the task of the previous request turn.
//   - Files and words: BM25 of the turn's words and file paths against each
//     task's turns (file paths weigh double). With a single task and no sign
//     of another, the turn stays on it.
//   - Model: when the above are below the threshold and Config.Model is set,
//     an OpenAI-compatible model answers {"task", "confidence"}; a timeout or
//     bad answer keeps the cheap decision, which then falls back.
//
// Without a tag, a workspace or the model, a request never opens a task: in a
// session in one checkout all work stays on one task unless the user tags it.
//
// # Cost
//
// Only the head of each request (4 KiB), the head of tool-call arguments (320
// bytes, 16 calls a turn) and, per task, its first and five latest routed
// turns are read; tool results never. Routing a call whose earlier turns are
// labelled costs O(turns) bookkeeping plus O(tasks) text, whatever the size
// of the history.
//
// Confidences are calibrated on interleaved sessions of real trajectories
// (TestInterleaved): at the default threshold 0.8 routed decisions are right
// at least 95% of the time.
package router
