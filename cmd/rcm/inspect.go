package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/proxy"
)

// inspect asks a running proxy (which holds the store's lock) for its
// sessions, or one session's tasks, records and routing decisions.
func inspect(args []string) error {
	// The proxy's own listen address, when set in the environment, is
	// where a user's rcm runs.
	addr := proxy.DefaultListen
	if l := os.Getenv("RCM_LISTEN"); l != "" {
		addr = l
	}
	asJSON := false
	events, limit, after := "30", "", ""
	opts := []option{
		{flag: "addr", env: "RCM_INSPECT_ADDR", help: "the running proxy, host:port or URL (default $RCM_LISTEN, else " + proxy.DefaultListen + ")", set: stringOpt(&addr)},
		{flag: "json", env: "RCM_INSPECT_JSON", help: "print the JSON the proxy serves, for scripts (--json, or true/false)", set: boolOpt(&asJSON)},
		{flag: "events", env: "RCM_INSPECT_EVENTS", help: "how many of the latest routing decisions to show (default 30)", set: stringOpt(&events)},
		{flag: "limit", env: "RCM_INSPECT_LIMIT", help: "sessions per page (default 50)", set: stringOpt(&limit)},
		{flag: "after", env: "RCM_INSPECT_AFTER", help: "list the sessions after this cursor (printed when there are more)", set: stringOpt(&after)},
	}
	flags, rest, err := splitArgs(args, "json")
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if len(rest) > 1 {
		return fmt.Errorf("inspect: unexpected arguments %q (want at most one session id)", rest[1:])
	}
	if err := parseOptions("inspect", flags, opts, false, "Usage: rcm inspect [SESSION] [flags]\n\nLists the sessions of a running rcm, or shows one session's tasks, task records and routing decisions.\nFlags may come before or after SESSION. The same, live, in a browser: http://ADDR/rcm/"); err != nil {
		return err
	}
	base, err := baseURL(addr)
	if err != nil {
		return err
	}
	var session string
	if len(rest) == 1 {
		session = rest[0]
	}
	u := base + "/rcm/sessions"
	if session != "" {
		u += "/" + url.PathEscape(session) + "?events=" + url.QueryEscape(events)
	} else {
		q := url.Values{}
		if limit != "" {
			q.Set("limit", limit)
		}
		if after != "" {
			q.Set("after", after)
		}
		if len(q) > 0 {
			u += "?" + q.Encode()
		}
	}
	body, next, err := fetch(u)
	if err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(os.Stderr, "more sessions: rcm inspect --after %s\n", next)
	}
	if asJSON {
		_, err = os.Stdout.Write(body)
		return err
	}
	if session == "" {
		var ss []memory.Session
		if err := json.Unmarshal(body, &ss); err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		printSessions(os.Stdout, ss)
		return nil
	}
	var v proxy.SessionView
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	printSession(os.Stdout, v)
	return nil
}

// splitArgs separates flags (with their values) from positional arguments
// wherever they appear, so that "rcm inspect --addr URL ses_X" and
// "rcm inspect ses_X --addr URL" mean the same. Every flag takes a value
// except those named in bools, which may stand alone; "--" ends the flags.
func splitArgs(args []string, bools ...string) (flags, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(rest, args[i+1:]...), nil
		case len(a) < 2 || a[0] != '-':
			rest = append(rest, a)
		case strings.Contains(a, "="):
			flags = append(flags, a)
		case slices.Contains(bools, strings.TrimLeft(a, "-")):
			flags = append(flags, a+"=true")
		case a == "-h" || a == "-help" || a == "--help":
			flags = append(flags, a)
		case i+1 < len(args):
			flags = append(flags, a, args[i+1])
			i++
		default:
			return nil, nil, fmt.Errorf("flag %s needs a value", a)
		}
	}
	return flags, rest, nil
}

// baseURL turns --addr (host:port, or an http(s) URL) into the proxy's
// base URL.
func baseURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("inspect: --addr %q: want host:port (such as %s) or an http(s) URL", addr, proxy.DefaultListen)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// fetch GETs u and returns its body and the cursor of the next page (from
// a Link rel="next" header), if any.
func fetch(u string) (body []byte, next string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("inspect: %w", err)
	}
	if t := os.Getenv("RCM_AUTH_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("inspect: is rcm serving there? %w", err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("inspect: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(body, &e)
		return nil, "", fmt.Errorf("inspect: %s: %s", resp.Status, e.Error.Message)
	}
	if l := resp.Header.Get("Link"); strings.HasSuffix(l, `rel="next"`) {
		ref, _, _ := strings.Cut(strings.TrimPrefix(l, "<"), ">")
		if r, err := url.Parse(ref); err == nil {
			next = r.Query().Get("after")
		}
	}
	return body, next, nil
}

func printSessions(w io.Writer, ss []memory.Session) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tCALLS\tUPDATED\tPARENT")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.ID, s.Calls, s.Updated.Format(time.RFC3339), s.Parent)
	}
	tw.Flush()
}

func printSession(w io.Writer, v proxy.SessionView) {
	fmt.Fprintf(w, "session %s: %d calls, %d tasks\n", v.Session.ID, v.Session.Calls, len(v.Tasks))
	records := map[string]memory.Record{}
	for _, r := range v.Records {
		records[r.Task] = r
	}
	for _, t := range v.Tasks {
		fmt.Fprintf(w, "\n== task %s (turns: %d, since %s)\n", t.ID, t.Turns, t.Created.Format(time.RFC3339))
		if r, ok := records[t.ID]; ok {
			fmt.Fprintln(w, memory.Render(r, 0))
		} else {
			fmt.Fprintln(w, "(no record yet)")
		}
	}
	fmt.Fprintf(w, "\n== routing decisions (latest %d)\n", len(v.Events))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tMODE\tTASK\tCONF\tMETHOD\tFALLBACK\tTOKENS IN>OUT\tCACHED")
	for _, e := range v.Events {
		cached := "-"
		if e.PrefixShare != nil {
			cached = fmt.Sprintf("%.0f%%", 100**e.PrefixShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%d>%d\t%s\n", e.At.Format("15:04:05"), e.Kind, e.Mode, e.Task, e.Confidence, e.Method, e.Fallback, e.TokensIn, e.TokensOut, cached)
	}
	tw.Flush()
}
