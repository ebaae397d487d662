package router

import (
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// TestWordingNeeds: requests worded for this test alone (in no session the
// model was fitted on), in fifteen languages, after two tasks of one
// checkout, each with the earlier turns it needs: follow-ups of the latest
// task (an option or a step picked, a pasted assertion, a lint error, a
// review comment, "why?"), follow-ups of the earlier one, and work across
// both. Whether the two tasks were named by tag, were never told apart, or
// the second was a pasted issue, a routed call keeps every turn its
// request needs; anything unsure falls back.
func TestWordingNeeds(t *testing.T) {
	const proj = "/home/me/webapp"
	reset := "Add password reset to the login flow: a /reset form that emails a one-time link valid for 30 minutes."
	steps := "Added the form, the token model and the email.\n\nNext steps:\n1. Rate limit the form\n2. Add tests\n3. Translate the email"
	weeks := "The revenue chart on the dashboard shows wrong totals for weeks that cross a month boundary."
	options := "Fixed the week bucketing in the aggregation. Options now:\n1. Keep ISO weeks\n2. Use Sunday-start weeks\nWhich one?"
	issue := "Export fails for large reports\n\nWhen a report has more than 10k rows the CSV export times out after 30s. Steps to reproduce:\n1. Open Reports\n2. Pick the 2023 sales report\n3. Click Export\n\nExpected: a CSV file. Actual: 504 Gateway Timeout."
	layouts := map[string][][]chat.Message{
		"tagged": {
			answered("[task: auth] "+reset, steps, proj+"/auth/reset.py", proj+"/auth/templates/reset.html"),
			answered("[task: chart] "+weeks, options, proj+"/dashboard/revenue.py"),
		},
		"untagged": {
			answered(reset, steps, proj+"/auth/reset.py", proj+"/auth/templates/reset.html"),
			answered(weeks, options, proj+"/dashboard/revenue.py"),
		},
		"issue": {
			answered(reset, steps, proj+"/auth/reset.py"),
			answered("the email has no subject line", "Added a subject.", proj+"/auth/email.py"),
			answered(issue, "Streamed the CSV instead of building it in memory.", proj+"/reports/export.py"),
		},
	}
	// needs: the layout's turns of the latest task, of the earlier one, or all.
	latest := map[string][]int{"tagged": {1}, "untagged": {1}, "issue": {2}}
	earlier := map[string][]int{"tagged": {0}, "untagged": {0}, "issue": {0, 1}}
	all := map[string][]int{"tagged": {0, 1}, "untagged": {0, 1}, "issue": {0, 1, 2}}
	var cases []struct {
		req   string
		needs map[string][]int
	}
	add := func(needs map[string][]int, reqs ...string) {
		for _, r := range reqs {
			cases = append(cases, struct {
				req   string
				needs map[string][]int
			}{r, needs})
		}
	}
	add(latest, "do 2", "number 1 please", "go with the second one", "ok ship it", "hmm, the totals are still off by one week",
		"can you double check the edge case at new year?", "```\nAssertionError: expected 1520.00, got 1498.50\n  at test_revenue.py:44\n```",
		"el total sigue mal en diciembre", "La deuxième option, s'il te plaît", "Nimm Option 1", "usa la opzione 2",
		"Ainda está errado para a última semana do ano", "всё ещё неправильно для последней недели", "第二个方案吧", "2番でお願いします",
		"두 번째 옵션으로 해줘", "hâlâ yanlış, aralık ayında", "nadal źle liczy grudzień", "nog steeds fout in december",
		"vẫn sai ở tuần cuối năm", "still wrong. see screenshot", "why?", "explain the fix", "revert that", "add a regression test for it",
		"PR review: revenue.py L30 - avoid the magic number 7, use a named constant",
		"the CI fails: `ruff: E501 line too long (dashboard/revenue.py:31)`")
	add(earlier, "the reset link from before expires too early, it says expired after 5 minutes", "el enlace de reseteo caduca antes de tiempo",
		"der Reset-Link läuft zu früh ab", "重置密码的链接过期太快了", "パスワードリセットのリンクがすぐ切れる", "now rate limit the reset form",
		"step 1 of the next steps please", "go back to the password reset: make the link single use")
	add(all, "write release notes for both", "commit all of it with a good message", "update the docs for what we did today",
		"run the whole test suite", "did any of today's changes touch the settings page?", "escribe las notas de la versión de todo",
		"fasse alle Änderungen zusammen", "把今天的修改都提交", "今日の変更をまとめて", "open a PR with everything", "squash these into one commit")
	for name, turns := range layouts {
		for _, c := range cases {
			t.Run(name+"/"+c.req, func(t *testing.T) {
				last := []chat.Message{chattest.User(c.req), chattest.Assistant("Done.")}
				for k, p := range session(t, mustNew(t, Config{}), env(proj, true), append(slices.Clone(turns), last)...) {
					d := p.Current
					for _, n := range c.needs[name] {
						if !p.Fallback && !slices.Contains(p.Keep, n) {
							t.Fatalf("call %d: routed to %s (%s %.2f) keeping %v, without turn %d it needs", k, d.Task, d.Method, d.Confidence, p.Keep, n)
						}
					}
				}
			})
		}
	}
}
