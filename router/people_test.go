package router

import (
	"math"
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// session replays turns through the router one model call at a time, as a
// harness sends them (a call at each request and after each tool result),
// with the proxy's label store, and returns the plan of every call of the
// last turn.
func session(t *testing.T, r *Router, sys chat.Message, turns ...[]chat.Message) []Plan {
	t.Helper()
	st := store{}
	ms := []chat.Message{sys}
	var last []Plan
	for _, turn := range turns {
		last = nil
		for k, m := range turn {
			ms = append(ms, m)
			// A call goes out after the request and after each tool
			// result, never after an assistant message.
			if m.Role == chat.RoleAssistant || k+1 < len(turn) && turn[k+1].Role == chat.RoleTool {
				continue
			}
			_, p := st.route(t, r, chattest.Body(ms...), Options{})
			last = append(last, p)
		}
	}
	return last
}

// answered is a request with the agent's edits of files and its answer.
func answered(req, answer string, files ...string) []chat.Message {
	ms := []chat.Message{chattest.User(req)}
	for k, f := range files {
		id := "call_" + string(rune('a'+k))
		ms = append(ms, chattest.ToolCall(id, "edit", map[string]string{"filePath": f}), chattest.ToolResult(id, "ok"))
	}
	return append(ms, chattest.Assistant(answer))
}

// keepsAll reports whether a plan forwards every turn.
func keepsAll(p Plan) bool { return len(p.Keep) == len(p.Turns) }

// TestPeoplesFollowUps are the follow-ups of issue 24 that used to open a
// task: in one repository, after a second task was opened, each continues
// the task just worked on, in several languages. It may fall back (all
// turns forwarded); it may never open a task or route to the other one.
func TestPeoplesFollowUps(t *testing.T) {
	const proj = "/home/dev/shop"
	plan := "Here is the plan:\n1. Add the Order model\n2. Add the checkout view\n3. Wire the /checkout route\n4. Add tests\n\nShall I start?"
	options := "Two ways to do it:\n1. Keep the cart in the session\n2. Store the cart in the database\n\nWhich do you prefer?"
	first := answered("Add a /health endpoint to the API server in server/health.go that returns the build version.", "Added the endpoint.", proj+"/server/health.go")
	second := answered("Build a checkout flow for the shop: an order model, a checkout view and its route.", plan, proj+"/shop/orders.py")
	optionsTurn := answered("How should the cart be kept between requests?", options)
	for _, c := range []struct {
		name string
		last []chat.Message
	}{
		{"step 3", answered("go on with step 3 of the plan", "Done.", proj+"/shop/urls.py")},
		{"option 2", answered("use option 2", "Done.", proj+"/shop/cart.py")},
		{"requirements changed", answered("the requirements changed a little: the checkout must also ask for a delivery date, and orders need a status field.", "Done.", proj+"/shop/orders.py")},
		{"pasted snippet", answered("```python\nclass Order(models.Model):\n    total = models.DecimalField(max_digits=8)\n```\nthis fails on migrate", "Fixed.", proj+"/shop/orders.py")},
		{"stack trace", answered("Traceback (most recent call last):\n  File \"shop/views.py\", line 12, in checkout\n    order.save()\ndjango.db.utils.IntegrityError: NOT NULL constraint failed: shop_order.status", "Fixed.", proj+"/shop/views.py")},
		{"that didn't work", answered("that didn't work, still the same error", "Fixed.", proj+"/shop/views.py")},
		{"review comment", answered("Review comment from the bot on shop/views.py line 14: `order.total` is computed before the discount is applied; compute it after.", "Fixed.", proj+"/shop/views.py")},
		{"es", answered("sigue con el paso 3 del plan", "Hecho.", proj+"/shop/urls.py")},
		{"de", answered("Das hat nicht funktioniert, immer noch derselbe Fehler", "Behoben.", proj+"/shop/views.py")},
		{"zh", answered("还是报错，请再看一下", "已修复。", proj+"/shop/views.py")},
		{"ja", answered("それでもエラーが出ます", "修正しました。", proj+"/shop/views.py")},
	} {
		t.Run(c.name, func(t *testing.T) {
			prev := second
			if c.name == "option 2" {
				prev = append(append([]chat.Message(nil), second...), optionsTurn...)
			}
			ps := session(t, mustNew(t, Config{}), env(proj, true), first, prev, c.last)
			for k, p := range ps {
				// Routed, it keeps the turn it follows up, as that
				// turn's task (a new task takes along the turns
				// before it that fell back: router.absorb).
				d := p.Current
				prev := len(p.Turns) - 2
				if !p.Fallback && (d.Task != p.Turns[prev].Task || !slices.Contains(p.Keep, prev)) {
					t.Fatalf("call %d: routed to %s (%s %.2f), not the task it follows up", k, d.Task, d.Method, d.Confidence)
				}
				t.Logf("call %d: %s %.2f %s fallback=%v", k, d.Task, d.Confidence, d.Method, p.Fallback)
			}
		})
	}
}

// TestPeoplesCrossTask: new work that builds on earlier tasks' work keeps
// that work (it falls back), and harness artifacts never open a task.
func TestPeoplesCrossTask(t *testing.T) {
	const proj = "/home/dev/shop"
	first := answered("Add a /health endpoint to the API server in server/health.go that returns the build version.", "Added the endpoint.", proj+"/server/health.go")
	second := answered("Build a checkout flow for the shop: an order model, a checkout view and its route.", "Done: model, view and route.", proj+"/shop/orders.py", proj+"/shop/views.py")
	for _, req := range []string{
		"add what you found to the README",
		"commit everything",
		"review both changes",
		"Write a short changelog entry for today's work",
	} {
		t.Run(req, func(t *testing.T) {
			ps := session(t, mustNew(t, Config{}), env(proj, true), first, second, []chat.Message{chattest.User(req)})
			p := ps[0]
			if !p.Fallback && !keepsAll(p) {
				t.Fatalf("%q routed to %s (%s %.2f), dropping the other task's work", req, p.Current.Task, p.Current.Method, p.Current.Confidence)
			}
		})
	}
	for _, a := range []string{
		"<local-command-stdout>Bye!</local-command-stdout>",
		"<command-message>review</command-message>\n<command-name>/review</command-name>",
		"Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.",
		"[Request interrupted by user]",
		"<task-notification>\n<task-id>bd0afab</task-id>\n<status>completed</status>\n<summary>Background command \"Run the test suite\" completed (exit code 0)</summary>\n</task-notification>",
	} {
		t.Run(a, func(t *testing.T) {
			ps := session(t, mustNew(t, Config{}), env(proj, true), first, second, []chat.Message{chattest.User(a)})
			if d := ps[0].Current; d.Task != ps[0].Turns[1].Task || d.Method == MethodNew {
				t.Fatalf("artifact %q labelled %s (%s): want the task it sits in", a, d.Task, d.Method)
			}
		})
	}
}

// TestAfterNamedTasks: once two tasks are named by tag, an untagged
// request is the model's. A follow-up may only go to the task it follows,
// a return only to the task it names, and work across both keeps both.
func TestAfterNamedTasks(t *testing.T) {
	const proj = "/home/dev/shop"
	health := answered("[task: health] Add a /health endpoint to the API server in server/health.go that returns the build version.", "Added the endpoint.", proj+"/server/health.go")
	checkout := answered("[task: checkout] Build a checkout flow for the shop: an order model, a checkout view and its route.", "Done: model, view and route.", proj+"/shop/orders.py", proj+"/shop/views.py")
	for _, c := range []struct {
		req, want string // want: the task it may be routed to; "" keeps both
	}{
		{"go on", "checkout"},
		{"the tests fail now", "checkout"},
		{"sigue, por favor", "checkout"},
		{"back to the health endpoint: add the git sha", "health"},
		{"volvamos al endpoint de health: que devuelva también el sha de git", "health"},
		{"review both changes", ""},
		{"commit everything", ""},
		{"add what you found to the README", ""},
		{"revisa los dos cambios", ""},
		{"提交所有更改", ""},
	} {
		t.Run(c.req, func(t *testing.T) {
			p := session(t, mustNew(t, Config{}), env(proj, true), health, checkout, []chat.Message{chattest.User(c.req)})[0]
			d := p.Current
			switch {
			case p.Fallback:
			case c.want == "" && !keepsAll(p):
				t.Fatalf("routed to %s (%s %.2f) keeping %v: work across both tasks lost one", d.Task, d.Method, d.Confidence, p.Keep)
			case c.want != "" && d.Task != c.want:
				t.Fatalf("routed to %s (%s %.2f), want %s or a fallback", d.Task, d.Method, d.Confidence, c.want)
			}
			t.Logf("%s %s %.2f fallback=%v", d.Task, d.Method, d.Confidence, p.Fallback)
		})
	}
}

// TestAfterLocalCommand: a command the harness ran itself (Claude Code's
// local command and its output, aider's /model) leaves a turn the model
// never answered; the person's next request is not an addendum to it and
// is decided on its own, while the expansion of an invoked command still
// continues the task the command sits in. With two named tasks open, a
// return after such a command is never routed to the task the command
// sat in (replayed with tags, session 020's return after five /models
// was routed there at 1.0 and lost the task it returned to).
func TestAfterLocalCommand(t *testing.T) {
	const proj = "/home/dev/shop"
	health := answered("[task: health] Add a /health endpoint to the API server in server/health.go that returns the build version.", "Added the endpoint.", proj+"/server/health.go")
	checkout := answered("[task: checkout] Build a checkout flow for the shop: an order model, a checkout view and its route.", "Done: model, view and route.", proj+"/shop/orders.py", proj+"/shop/views.py")
	for name, cmd := range map[string][][]chat.Message{
		"aider /model":  {{chattest.User("/models gpt")}, {chattest.User("/architect")}},
		"claude /model": {{chattest.User("<command-name>/model</command-name>\n<command-message>model</command-message>")}, {chattest.User("<local-command-stdout>Set model to opus</local-command-stdout>")}},
		"claude caveat": {{chattest.User("Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.")}, {chattest.User("<local-command-stdout>Bye!</local-command-stdout>")}},
		"bare /cost":    {{chattest.User("/cost")}},
	} {
		for lang, back := range map[string]string{
			"en": "during the health check it still reports an old version, I have to restart the server each time",
			"es": "el health check sigue mostrando una versión vieja, tengo que reiniciar el servidor cada vez",
		} {
			t.Run(name+" "+lang, func(t *testing.T) {
				turns := append([][]chat.Message{health, checkout}, cmd...)
				for k, p := range session(t, mustNew(t, Config{}), env(proj, true), append(turns, []chat.Message{chattest.User(back)})...) {
					if d := p.Current; !p.Fallback && d.Task == "checkout" {
						t.Fatalf("call %d: the request after the command routed to %s (%s %.2f), the task the command sat in", k, d.Task, d.Method, d.Confidence)
					}
				}
			})
		}
	}
	// An invoked command's expansion, sent before any answer, continues
	// the task the invocation sits in.
	expansion := []chat.Message{chattest.User("Review the pending changes on this branch for bugs, missing tests and unclear names, and report each finding with its file and line.")}
	invoke := []chat.Message{chattest.User("<command-message>review is running…</command-message>\n<command-name>/review</command-name>")}
	p := session(t, mustNew(t, Config{}), env(proj, true), health, checkout, invoke, expansion)[0]
	if d := p.Current; d.Task != "checkout" || d.Method != MethodFollowUp {
		t.Fatalf("the expansion of /review: %s (%s %.2f), want the checkout task it follows", d.Task, d.Method, d.Confidence)
	}
}

// TestOpeningAfterCommands: a Claude Code session that opens with its own
// messages (the caveat, a /clear and its empty output) has its first
// request after them, which is the first task's: it is routed there, not
// scored against the harness's text (a real session's first prompt fell
// back at 0.56 so, and a replayed one at 0.72). A request after a real one
// is still scored.
func TestOpeningAfterCommands(t *testing.T) {
	const proj = "/home/dev/shop"
	opening := [][]chat.Message{
		{chattest.User("<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.</local-command-caveat>")},
		{chattest.User("<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>")},
		{chattest.User("<local-command-stdout></local-command-stdout>")},
	}
	for _, req := range []string{
		"please run the tests",
		"找一下这个文件的修改历史，以及它影响了哪些地方",
		"Fix the date parser in dateparse/parser.py: it drops the time zone.",
	} {
		t.Run(req, func(t *testing.T) {
			ps := session(t, mustNew(t, Config{}), env(proj, true), append(opening, answered(req, "Done.", proj+"/shop/views.py"))...)
			if p := ps[0]; p.Fallback || p.Current.Task != p.Turns[0].Task || p.Current.Confidence != 1 {
				t.Fatalf("first request after the commands: %s (%s %.2f) fallback %v, want the session's task at 1", p.Current.Task, p.Current.Method, p.Current.Confidence, p.Fallback)
			}
		})
	}
	after := answered("Add a /health endpoint to the API server in server/health.go.", "Added.", proj+"/server/health.go")
	ps := session(t, mustNew(t, Config{}), env(proj, true), append(append(opening, after), []chat.Message{chattest.User("now something else entirely: a CSV export of the orders")})...)
	if d := ps[0].Current; d.Method == MethodNew && d.Confidence == 1 && d.Task == ps[0].Turns[0].Task {
		t.Fatalf("a request after a real one taken as the session's first: %+v", d)
	}
}

// TestContinuingAGuess: with two named tasks open, a request that falls
// back is labelled with a guess, and the follow-ups that continue it are at
// most as sure as that guess: none of them is routed into the guessed task
// (which, were the guess wrong, would drop the task they continue). The
// runs of session 043 of the corpus, replayed with tags, did this.
func TestContinuingAGuess(t *testing.T) {
	const proj = "/home/dev/app"
	tests := answered("[task: e2e] Set up Playwright end-to-end tests for the settings screen and write the first three tests.", "Added playwright.config.ts and three tests.", proj+"/e2e/settings.spec.ts")
	npm := answered("[task: npm] How do I use the npm version command?", "Run `npm version patch` to bump the patch version.")
	turns := [][]chat.Message{tests, npm}
	for _, req := range []string{
		"Is the test-results folder supposed to be committed?",
		"ok, add it to .gitignore",
		"yes please",
		"go on",
		"continue",
		"commit this",
	} {
		turns = append(turns, answered(req, "Done."))
		ps := session(t, mustNew(t, Config{}), env(proj, true), turns...)
		for k, p := range ps {
			d := p.Current
			if !p.Fallback && !keepsAll(p) && p.Turns[len(p.Turns)-2].Task == d.Task && !p.Turns[len(p.Turns)-2].Routed {
				t.Fatalf("%q call %d: routed to %s (%s %.2f), continuing a guess, keeping %v", req, k, d.Task, d.Method, d.Confidence, p.Keep)
			}
			t.Logf("%q: %s %s %.2f fallback=%v", req, d.Task, d.Method, d.Confidence, p.Fallback)
		}
	}
}

// TestDateParserAndCache: two short requests in one checkout, then a
// return to the first by its file, in words, and in Spanish. The fitted
// model does not tell the pair apart (docs/router-fit.md: on people's
// sessions it rarely opens a task at a short request), so what must hold
// is that nothing is routed wrong: the cache's turn never goes to the date
// parser's task routed, and a return is never routed to the cache's.
func TestDateParserAndCache(t *testing.T) {
	const proj = "/home/dev/utils"
	dates := answered("Fix the date parser in dateparse/parser.py: two-digit years before 1970 come out a century late.", "Fixed the century window and added a test.", proj+"/dateparse/parser.py", proj+"/dateparse/test_parser.py")
	lru := answered("Implement an LRU cache in cache/lru.py with get, put and a fixed capacity.", "Implemented the cache with tests.", proj+"/cache/lru.py", proj+"/cache/test_lru.py")
	r := mustNew(t, Config{})
	for k, p := range session(t, r, env(proj, true), dates, lru) {
		if !p.Fallback && p.Current.Task == p.Turns[0].Task {
			t.Fatalf("call %d: the cache's turn routed to the date parser's task: %+v", k, p.Current)
		}
	}
	for _, c := range []struct {
		name string
		back []chat.Message
	}{
		{"by file", answered("In dateparse/parser.py also accept ISO week dates like 2024-W05.", "Done.", proj+"/dateparse/parser.py")},
		{"in words", answered("Back to the date parser: it should also handle time zones.", "Done.", proj+"/dateparse/parser.py")},
		{"es", answered("Volvamos al parser de fechas: que acepte zonas horarias.", "Hecho.", proj+"/dateparse/parser.py")},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, p := range session(t, r, env(proj, true), dates, lru, c.back) {
				d := p.Current
				if !p.Fallback && d.Task != p.Turns[0].Task {
					t.Fatalf("call %d: routed to %s (%s %.2f), not the date parser's %s", k, d.Task, d.Method, d.Confidence, p.Turns[0].Task)
				}
				if !p.Fallback && p.Turns[1].Task != d.Task && slices.Contains(p.Keep, 1) {
					t.Fatalf("call %d: the cache's turn kept while routed to the date parser", k)
				}
				t.Logf("call %d: %s %.2f %s fallback=%v keep=%v", k, d.Task, d.Confidence, d.Method, p.Fallback, p.Keep)
			}
		})
	}
}

// TestReturnQuotingSubject: a return that quotes an earlier task's subject
// line whole is routed to it, in one checkout with four tasks open (named
// by the X-RCM-Task header, so that only the return is the model's), in
// whatever language the rest of the request is.
func TestReturnQuotingSubject(t *testing.T) {
	const proj = "/home/dev/app"
	open := []struct {
		task string
		msgs []chat.Message
	}{
		{"export", answered("Add CSV export to the reports page\nEach report gets a download button that writes its rows as CSV.", "Added the button and the writer.", proj+"/reports/export.py")},
		{"limit", answered("Rate limit the login endpoint to five attempts a minute\nUse the existing Redis client and return 429 with a Retry-After header.", "Added the limiter.", proj+"/auth/limit.py")},
		{"forms", answered("Migrate the settings screen to the new form library\nKeep the field order and the validation messages as they are.", "Migrated the screen.", proj+"/ui/settings.tsx")},
		{"search", answered("Add full-text search to the help center\nIndex the article titles and bodies, and rank exact title matches first.", "Added the index and the ranking.", proj+"/help/search.py")},
	}
	for lang, back := range map[string]string{
		"en": `Back to "Rate limit the login endpoint to five attempts a minute": lock the account out for ten minutes after the fifth failure.`,
		"es": `Volvamos a «Rate limit the login endpoint to five attempts a minute»: bloquea la cuenta diez minutos tras el quinto fallo.`,
		"de": `Zurück zu „Rate limit the login endpoint to five attempts a minute“: nach dem fünften Fehlversuch das Konto zehn Minuten sperren.`,
	} {
		t.Run(lang, func(t *testing.T) {
			r := mustNew(t, Config{})
			st := store{}
			ms := []chat.Message{env(proj, true)}
			for _, turn := range open {
				ms = append(ms, turn.msgs[0])
				st.route(t, r, chattest.Body(ms...), Options{Task: turn.task})
				ms = append(ms, turn.msgs[1:]...)
			}
			_, p := st.route(t, r, chattest.Body(append(ms, chattest.User(back))...), Options{})
			if d := p.Current; p.Fallback || d.Task != "limit" {
				t.Fatalf("return routed to %s (%s %.2f, fallback %v), want limit", d.Task, d.Method, d.Confidence, p.Fallback)
			}
			t.Logf("return: %s %.2f %v", p.Current.Task, p.Current.Confidence, p.Current.Scores)
		})
	}
}

// TestCodexIDEContext: Codex's IDE extension sends each request after the
// editor's state (the active file, the open tabs); the router reads the
// request alone, so a session decides as the same session typed bare.
func TestCodexIDEContext(t *testing.T) {
	const proj = "/home/dev/shop"
	ide := func(req string) string {
		return "# Context from my IDE setup:\n\n## Active file: billing/invoice.py\n\n## Open tabs:\n- invoice.py: billing/invoice.py\n- README.md: README.md\n- settings.py: config/settings.py\n\n## My request for Codex:\n" + req
	}
	reqs := []string{"Add a /health endpoint to the API server in server/health.go that returns the build version.",
		"Build a checkout flow for the shop: an order model, a checkout view and its route.",
		"go on with the next step"}
	run := func(wrap func(string) string) []Plan {
		var turns [][]chat.Message
		for i, r := range reqs {
			turns = append(turns, answered(wrap(r), "Done.", proj+[]string{"/server/health.go", "/shop/orders.py", "/shop/views.py"}[i]))
		}
		return session(t, mustNew(t, Config{}), env(proj, true), turns...)
	}
	bare, wrapped := run(func(s string) string { return s }), run(ide)
	if len(bare) != len(wrapped) {
		t.Fatalf("%d and %d calls", len(bare), len(wrapped))
	}
	for k := range bare {
		b, w := bare[k].Current, wrapped[k].Current
		if b.Task != w.Task || b.Method != w.Method || math.Abs(b.Confidence-w.Confidence) > 1e-9 {
			t.Errorf("call %d: bare %s %s %.3f, in the IDE's context %s %s %.3f", k, b.Task, b.Method, b.Confidence, w.Task, w.Method, w.Confidence)
		}
	}
	tr := chattest.Parse(t, chattest.Body(chattest.User(ide("fix it")), chattest.User("## My request for Codex: is how Codex marks it")))
	if got := asked(tr, tr.Turns[0]); got != "fix it" {
		t.Errorf("asked %q", got)
	}
}

// TestPastedOutputStaysPut: output people paste after the agent's work
// (shapes seen in real exports, in my own wording) does not open a task
// of its own: an Android crash whose first line is a log level over an
// indented trace, a build's output pasted indented, and a request in
// Chinese whose first line is a sentence, over a pasted log.
func TestPastedOutputStaysPut(t *testing.T) {
	const proj = "/home/dev/downloader"
	work := []chat.Message{}
	work = append(work, answered("Move the download library to the new listener API and update MainActivity.", "Moved the listeners and updated MainActivity.", proj+"/lib/DownloadManager.kt", proj+"/app/MainActivity.kt")...)
	work = append(work, answered("Store the tasks in the Room database too.", "Added the entity, the DAO and the database.", proj+"/lib/db/TaskDao.kt", proj+"/lib/db/AppDatabase.kt")...)
	trace := "                                Process: com.example.downloader, PID: 24357\n" +
		"                                java.lang.IllegalStateException: A migration from 2 to 3 was required but not found.\n" +
		"                                \tat androidx.room.RoomOpenHelper.onUpgrade(RoomOpenHelper.kt:109)\n" +
		"                                \tat com.example.downloader.db.TaskDao_Impl.query(TaskDao_Impl.java:274)"
	for name, req := range map[string]string{
		"crash":        "E  FATAL EXCEPTION: main\n" + trace,
		"build output": "    lib/build.gradle.kts:14:18:\n      14 │   kapt(libs.room.compiler)\n  The kapt plugin is deprecated for this module.\n  BUILD FAILED in 903 ms",
		"zh":           "一打开就崩溃了，下载列表也是空的。\n请看日志：\n```\n" + trace + "\n```",
	} {
		t.Run(name, func(t *testing.T) {
			r := mustNew(t, Config{})
			turn := answered(req, "The migration was missing; added it.", proj+"/lib/db/AppDatabase.kt")
			for k, p := range session(t, r, env(proj, true), work, turn) {
				if !p.Fallback && p.Current.Method == MethodNew {
					t.Fatalf("call %d: opened a task of its own at %.2f", k, p.Current.Confidence)
				}
			}
		})
	}
}
