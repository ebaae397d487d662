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
//     In a repository a folder outside it that a request or a tool call
//     merely mentions counts only once a tool call of the session has
//     worked outside it (before that it is a pasted log's, a stack
//     trace's, a URL's).
//   - Harness artifacts: a message sent while the agent has not yet
//     answered the previous request, a harness's own message (Claude
//     Code's <command-name>, <local-command-stdout>, its caveat before
//     local commands' output, "[Request interrupted by user", a loaded
//     tool's notice, a skill's text, its <task-notification> that a
//     background command finished; Cursor's <system_notification>; VS
//     Code Copilot's "[Terminal ... notification:") or a bare slash
//     command continues
//     that request's task and never opens one; the first request after
//     only such messages is the session's first task's (opening). The message after a
//     command that ran without the model (its output, a notice, aider's
//     bare /model) is not an addendum to it: it is decided on its own
//     (ranLocally); an invoked command's expansion still continues. The
//     request is what the person wrote (asked): Codex's IDE extension
//     puts the editor's state before its "## My request for Codex:".
//   - The scored model (score.go) decides everything else. For the
//     current turn it scores, with three logistic heads over the same
//     features, each decision it could make: continue the previous
//     request's task, return to each earlier task, or open a new one
//     (compared with the task its words are most like). Each head gives
//     the probability that its decision is safe: the turn is that
//     task's, and every earlier request it needs stays in the forwarded
//     context (a new task keeps none). The features: the request's length
//     and shape (short, a reply word, a back reference, pasted code or a
//     log, a title line over a body as an issue is pasted, a question, a
//     numbered item of the agent's last answer, the agent having asked),
//     the share of its term mass no task holds, the share the previous
//     turn holds (a follow-up takes up its words), the number of other
//     tasks and the length of the current run, the turn's tool calls so
//     far and how many of the files they touch no task has, and against
//     the candidate: its share of the request's terms, the share of its
//     subject line named (and its square: naming the whole subject says
//     more than naming its parts), its BM25 lead over the other tasks,
//     the files the request names and the turn touches that it holds or
//     only others hold, and how long ago it last ran. Terms are words
//     (any script: Cyrillic words lower-cased; Han, Kana, Hangul, Thai as
//     character pairs), word pairs and three-word phrases, and
//     file paths relative to the working directory. The word classes
//     (reply and back words, in several languages) are features whose
//     weights the fit sets, not rules. The likeliest safe decision is
//     taken; at or above the threshold it is routed, below it the turn
//     falls back on a guess at the likeliest known task (a fallback never
//     opens a task), and is scored again on its next call, when its tool
//     calls may show where it works. Continuing a request that fell back
//     continues its guess: with other tasks open, that decision is no
//     surer than the guess was, so a run of follow-ups after a fallback
//     falls back too until a return, a new task or a tag places it.
//   - After compaction: the history holds the summary and the turns
//     since, so tasks with no turn left are profiled from their seeds
//     (Options.Seeds: a record's checkout and requests in rcm mode, the
//     task's name in router mode, which writes no records), and the
//     request just after the summary continues the task the session was
//     in when it compacted (Options.Last). The fit has no compacted
//     session, so these decisions are the model's extrapolation.
//   - Model: when the above are below the threshold and Config.Model is set,
//     an OpenAI-compatible model answers {"task", "confidence"}; a timeout or
//     bad answer keeps the cheap decision, which then falls back.
//
// A confidence that is not finite is 0: the call falls back.
//
// # Fitted, not set by hand
//
// The coefficients (coef_gen.go) are fitted by `go run ./cmd/rcm bench
// fit` (bench/fit) on the hand-labelled real sessions of
// testdata/real-sessions and the bench's synthetic sessions in the shared
// layout, cross-validated with whole repositories held out; the report
// (docs/router-fit.md) gives the measures in-sample and held out and the
// reliability of the confidence. The structural signals' confidences
// (workspace, tag) are not fitted: they are checked on the bench's
// checkout layout (TestInterleaved in bench/spec).
//
// # Cost
//
// Only the head of each request (4 KiB), the head of tool-call arguments (320
// bytes, 16 calls a turn), an earlier turn's last answer (2 KiB) and, per
// task, its first and five latest routed turns, and the turn before the
// current one, are read; tool results never. Routing a call whose earlier
// turns are labelled costs O(turns) bookkeeping plus O(tasks) text,
// whatever the size of the history.
package router
