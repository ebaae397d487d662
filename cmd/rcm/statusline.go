package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/proxy"
)

// statusTimeout bounds the whole question to the proxy: Claude Code
// refreshes its status line at most every 300 ms.
const statusTimeout = 200 * time.Millisecond

// statusline prints one line about the Claude Code session named on stdin
// (the JSON Claude Code passes a statusLine command): the current task,
// its confidence, the session's tasks and what the last call saved. When
// rcm is not running, or does not know the session, it prints nothing:
// a status line is no place for errors.
func statusline(args []string, stdin io.Reader, stdout io.Writer) error {
	addr := proxy.DefaultListen
	if l := os.Getenv("RCM_LISTEN"); l != "" {
		addr = l
	}
	opts := []option{
		{flag: "addr", env: "RCM_STATUSLINE_ADDR", help: "the running proxy, host:port or URL (default $RCM_LISTEN, else " + proxy.DefaultListen + ")", set: stringOpt(&addr)},
	}
	if err := parseOptions("statusline", args, opts, false, `Usage: rcm statusline [flags]

Prints a status line for Claude Code: reads the session JSON Claude Code passes on stdin
and asks the running rcm about that session. In ~/.claude/settings.json:
  "statusLine": {"type": "command", "command": "rcm statusline"}`); err != nil {
		return err
	}
	base, err := baseURL(addr)
	if err != nil {
		return err
	}
	var in struct {
		SessionID string `json:"session_id"`
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil || json.Unmarshal(b, &in) != nil || in.SessionID == "" {
		return nil
	}
	st, ok := askStatus(base + "/rcm/sessions/" + url.PathEscape(in.SessionID) + "/status")
	if ok {
		fmt.Fprintln(stdout, statusText(st))
	}
	return nil
}

// askStatus GETs a session's status; ok is false when rcm did not answer
// it in time.
func askStatus(u string) (st proxy.Status, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return st, false
	}
	if t := os.Getenv("RCM_AUTH_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return st, false
	}
	return st, true
}

// statusText is the line: `rcm t2 "Fix the login bug" · 0.93 · 2 open
// tasks · saved 41%`; "full history" stands for the confidence of a call
// that fell back.
func statusText(st proxy.Status) string {
	parts := []string{"rcm: no task yet"}
	if st.Task != "" {
		head := "rcm " + st.Task
		if st.Title != "" {
			head += " " + fmt.Sprintf("%q", st.Title)
		}
		conf := fmt.Sprintf("%.2f", st.Confidence)
		if st.Fallback != proxy.FallbackNone {
			conf = "full history"
		}
		parts = []string{head, conf}
	}
	tasks := fmt.Sprintf("%d open tasks", st.Tasks)
	if st.Tasks == 1 {
		tasks = "1 open task"
	}
	parts = append(parts, tasks, fmt.Sprintf("saved %.0f%%", 100*st.Saved))
	return strings.Join(parts, " · ")
}
