package proxy

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// TestSecretsNeverStored sends rcm-mode calls whose request, commands, tool
// output and upstream answer hold credentials, and scans the raw bytes of
// the bbolt file: none of them may be there, while the forwarded requests
// still carry the client's own messages untouched.
func TestSecretsNeverStored(t *testing.T) {
	secrets := []string{
		"sk-proj-Zk3vQ9xR2mL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5tHnMk2L", // in the request
		"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",                  // AWS secret, in the request
		"ghp_R2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5t",                  // in a command
		"hunter2hunter2", // password= in a command
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", // in tool output
		"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",                                             // in the closing text
		"sk-ant-api03-Qm9xR2vL7pT1wN8cB4yH6dJ0fG5sAaUoPiXqVr5tHnMk",                                    // in the upstream's answer
	}
	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Configured the client with `+secrets[6]+` as asked."},"finish_reason":"stop"}]}`)
	}}
	srv, h := setup(t, rec, nil)
	hdr := http.Header{"X-Session-Id": {"ses_secret"}, "X-Rcm-Mode": {"rcm"}}
	turn1 := []chat.Message{
		chattest.User("In /work/ws1 deploy the billing service with OPENAI_API_KEY " + secrets[0] + " and aws_secret_access_key=" + secrets[1]),
		chattest.ToolCall("call_1", "bash", map[string]string{
			"command": "curl -H 'Authorization: Bearer " + secrets[2] + "' https://api.github.com/user && mysql --password=" + secrets[3] + " -e 'select 1'",
			"workdir": "/work/ws1",
		}),
		chattest.ToolResult("call_1", "token: "+secrets[4]+"\nexit code: 0"),
		chattest.Assistant("Deployed; notify with " + secrets[5]),
	}
	// Another task, then a return to the first: the record goes at the
	// start of the returning run (a run of one task carries none).
	other := []chat.Message{chattest.User("In /work/ws2 write the README of the docs site"), chattest.Assistant("Written.")}
	back := chattest.User("Back to /work/ws1: now also deploy the invoices service")
	bodies := [][]byte{
		chattest.OpenCodeBody(t, turn1[:1]...),
		chattest.OpenCodeBody(t, turn1...),
		chattest.OpenCodeBody(t, append(slices.Clone(turn1), other[0])...),
		chattest.OpenCodeBody(t, append(append(slices.Clone(turn1), other...), back)...),
	}
	for i, body := range bodies {
		resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
		io.Copy(io.Discard, resp.Body)
		if fb := resp.Header.Get(HeaderFallback); fb != FallbackNone {
			t.Fatalf("call %d: fallback %s", i, fb)
		}
		got, _ := rec.last(t)
		if i == 2 {
			continue // the other task's call: the first task's turn is not forwarded
		}
		if !bytes.Contains(got, body[bytes.Index(body, []byte(`"messages"`)):bytes.Index(body, []byte(secrets[0]))+len(secrets[0])]) {
			t.Fatalf("call %d: the client's own messages were not forwarded untouched", i)
		}
	}
	h.after.Wait()
	raw, err := os.ReadFile(h.cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("store file holds %q", s)
		}
	}
	// What surrounds them is stored, so the scan looked at real records.
	for _, want := range []string{"deploy the billing service", "[redacted:openai-key]", "[redacted:bearer]", "[redacted:password]"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("store file lacks %q", want)
		}
	}
	// The record rcm forwards with the returning call is redacted too.
	got, _ := rec.last(t)
	mem := ""
	for _, m := range chattest.Messages(got) {
		if strings.Contains(m, "rcm-task-state") {
			mem = m
		}
	}
	if mem == "" || !strings.Contains(mem, "[redacted:openai-key]") || strings.Contains(mem, secrets[0]) {
		t.Errorf("forwarded record:\n%s", mem)
	}
}

// TestLongHistoryLabelsInChunks: a call whose history has more new turns
// than one label transaction takes still stores a label for every turn
// (written in chunks before the call's own transaction) and its record.
func TestLongHistoryLabelsInChunks(t *testing.T) {
	// More turns than memory's 4096 labels a transaction, and more
	// messages than --route-messages' default routes: allow them.
	const turns = 5096
	srv, h := setup(t, &recorder{}, func(c *Config) { c.RouteMessages = 4 * turns })
	var ms []chat.Message
	for i := range turns {
		ms = append(ms, chattest.User("In /work/ws1 step "+strconv.Itoa(i)+": fix the parser"), chattest.Assistant("done"))
	}
	body := chattest.OpenCodeBody(t, append(ms, chattest.User("In /work/ws1 now run the tests"))...)
	resp := post(t, srv.URL+"/v1/chat/completions", body, http.Header{"X-Session-Id": {"ses_long"}, "X-Rcm-Mode": {"rcm"}})
	io.Copy(io.Discard, resp.Body)
	if fb := resp.Header.Get(HeaderFallback); fb != FallbackNone {
		t.Fatalf("fallback %s", fb)
	}
	h.after.Wait()
	tr := chattest.Parse(t, body)
	labels, found, err := h.store.Labels("ses_long", tr.Fingerprints())
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range found {
		if !ok || labels[i].Task == "" {
			t.Fatalf("turn %d of %d has no label", i, len(found))
		}
	}
	recs, err := h.store.Records("ses_long")
	if err != nil || len(recs) == 0 || recs[0].Omitted == 0 {
		t.Fatalf("records %v %v", len(recs), err)
	}
}

// TestRetriedCallKeepsRecord: a call that teaches the record nothing (the
// same call retried) does not rewrite it.
func TestRetriedCallKeepsRecord(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	body := sessionBody(t, switchRequests[:1], switchDirs)
	hdr := http.Header{"X-Session-Id": {"ses_retry"}, "X-Rcm-Mode": {"rcm"}}
	version := func() int {
		h.after.Wait()
		r, ok, err := h.store.Record("ses_retry", "t1")
		if err != nil || !ok {
			t.Fatalf("record: %v %v", ok, err)
		}
		return r.Version
	}
	io.Copy(io.Discard, post(t, srv.URL+"/v1/chat/completions", body, hdr).Body)
	first := version()
	io.Copy(io.Discard, post(t, srv.URL+"/v1/chat/completions", body, hdr).Body)
	if v := version(); v != first {
		t.Fatalf("retried call rewrote the record: version %d -> %d", first, v)
	}
	// A call with something new does.
	body = sessionBody(t, []string{switchRequests[0], switchRequests[2]}, []string{"/work/ws1", "/work/ws1"})
	io.Copy(io.Discard, post(t, srv.URL+"/v1/chat/completions", body, hdr).Body)
	if v := version(); v != first+1 {
		t.Fatalf("new turn: version %d -> %d", first, v)
	}
}
