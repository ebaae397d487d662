// Package router decides which task each turn of a session belongs to and
// which turns a call forwards.
//
// Route is a pure function of the parsed transcript, the labels the store
// holds for its turns (Prior, by turn fingerprint) and per-call Options,
// plus the optional model classifier. It never writes to the store: the
// proxy persists the returned decisions as the turns' labels.
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
//   - Frame: the harness's working directory, read from its own system
//     prompt (harnessCWD: OpenCode's "Working directory:", Claude Code's
//     "Primary working directory:", Codex's latest <cwd>) with whether it is
//     a git repository (Codex: whether its turn metadata lists a repository
//     holding it; a repository when it sends no metadata); when no harness
//     says, the parent of the first folder the first turns work in. Paths
//     are taken relative to it.
//   - Workspace: the folder below the working directory a turn names or
//     works in (a bash "workdir", a "cd" target, a path of a tool call), or
//     a git worktree inside a repository (".worktrees/NAME"); inside a
//     repository opened directly everything is one workspace, so this
//     signal is silent there. A workspace no task has used, named by the
//     request or worked in, opens a task; one used by a single task routes
//     to it. System directories (/usr, /dev, ...) count only when the
//     working directory is under them (/tmp/x when the harness is in /tmp).
//   - Interruption: a message sent while the agent has not yet answered
//     the previous request in words (a slash command's expansion, a
//     harness's tool notice or skill text) continues that request's task.
//   - Words, phrases, files, subjects (lexical.go): the request and the
//     turn's tool-call arguments against each task's routed turns (their
//     requests, tool-call arguments and last answer). Terms are words (any
//     script: Cyrillic words lower-cased; Han, Kana, Hangul, Thai as
//     character pairs), word pairs and three-word phrases, and file paths
//     relative to the working directory. P(new): the request names little
//     of any task's subject line (the first line of its first request with
//     three words: an issue's title) and most of its weight is in terms no
//     task has; discounted for short requests, replies ("and ...", "yes,
//     ..."), requests whose opening line refers back ("back to", "more
//     on", "that issue": refersBack), and in folders of checkouts (where
//     the workspace places new work); it also falls as the best task's
//     score grows against the unseen mass (a pasted discussion of earlier
//     work repeats its terms). A line ending in a colon introduces the
//     text below it and is never a subject. A request naming a task's
//     subject goes to that task; else the best BM25 score, by its margin
//     over the second and its share of the query. Confidence = P(not new)
//     x P(this task), or P(new).
//   - Follow-up: a slash command, a reply of at most four words (two
//     characters of a spaceless script count one word), or at most eight
//     opening with a reply word, continues the previous request's task,
//     unless the words point at another task.
//   - Model: when the above are below the threshold and Config.Model is set,
//     an OpenAI-compatible model answers {"task", "confidence"}; a timeout or
//     bad answer keeps the cheap decision, which then falls back.
//
// A confidence that is not finite is 0: the call falls back. Opening a task
// needs P(new) at or above the threshold; below it the turn stays a guess
// on the likeliest known task, so a fallback never invents a task.
//
// # Cost
//
// Only the head of each request (4 KiB), the head of tool-call arguments (320
// bytes, 16 calls a turn), an earlier turn's last answer (2 KiB) and, per
// task, its first and five latest routed turns are read; tool results never. Routing a call whose earlier turns are
// labelled costs O(turns) bookkeeping plus O(tasks) text, whatever the size
// of the history.
//
// The constants of lexical.go were set by hand on the shared data's
// interleaved sessions in the shared layout; TestInterleaved checks them
// there and in the checkout layout: at the default threshold 0.8 routed
// decisions must be right at least 98% of the time in the shared layout,
// with or without the title in returning requests (bench.ReturnsUntitled).
package router
