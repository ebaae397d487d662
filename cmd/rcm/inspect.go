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
	addr := "http://" + proxy.DefaultListen
	if l := os.Getenv("RCM_LISTEN"); l != "" {
		addr = "http://" + l
	}
	asJSON := "false"
	events := "30"
	opts := []option{
		{flag: "addr", env: "RCM_INSPECT_ADDR", help: "the running proxy (default http://$RCM_LISTEN, else http://" + proxy.DefaultListen + ")", set: stringOpt(&addr)},
		{flag: "json", env: "RCM_INSPECT_JSON", help: "print the raw JSON (true/false)", set: stringOpt(&asJSON)},
		{flag: "events", env: "RCM_INSPECT_EVENTS", help: "how many of the latest routing decisions to show (default 30)", set: stringOpt(&events)},
	}
	var session string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		session, args = args[0], args[1:]
	}
	if err := parseOptions("inspect", args, opts, false, "Usage: rcm inspect [SESSION] [flags]\n\nLists the sessions of a running rcm, or shows one session's tasks, task records and routing decisions."); err != nil {
		return err
	}
	path := "/rcm/sessions"
	if session != "" {
		path += "/" + url.PathEscape(session) + "?events=" + url.QueryEscape(events)
	}
	body, err := fetch(strings.TrimRight(addr, "/") + path)
	if err != nil {
		return err
	}
	if asJSON == "true" {
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

func fetch(u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if t := os.Getenv("RCM_AUTH_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("inspect: is rcm serving there? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(body, &e)
		return nil, fmt.Errorf("inspect: %s: %s", resp.Status, e.Error.Message)
	}
	return body, nil
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
		fmt.Fprintf(w, "\n== task %s (since %s)\n", t.ID, t.Created.Format(time.RFC3339))
		if r, ok := records[t.ID]; ok {
			fmt.Fprintln(w, memory.Render(r, 0))
		} else {
			fmt.Fprintln(w, "(no record yet)")
		}
	}
	fmt.Fprintf(w, "\n== routing decisions (latest %d)\n", len(v.Events))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tMODE\tTASK\tCONF\tMETHOD\tFALLBACK\tTOKENS IN>OUT")
	for _, e := range v.Events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%d>%d\n", e.At.Format("15:04:05"), e.Kind, e.Mode, e.Task, e.Confidence, e.Method, e.Fallback, e.TokensIn, e.TokensOut)
	}
	tw.Flush()
}
