package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/inspector"
	"github.com/rcm-dev/rcm/internal/chattest"
	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/transcript"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// feedReader reads "call" events from the inspector's live feed.
func feedReader(t *testing.T, url string) (<-chan inspector.Call, func()) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("feed: %d %s", resp.StatusCode, ct)
	}
	calls := make(chan inspector.Call, 16)
	go func() {
		defer close(calls)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "call":
				var c inspector.Call
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c) == nil {
					calls <- c
				}
			}
		}
	}()
	return calls, func() { resp.Body.Close() }
}

func next(t *testing.T, calls <-chan inspector.Call) inspector.Call {
	t.Helper()
	select {
	case c, ok := <-calls:
		if !ok {
			t.Fatal("feed ended")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no call on the feed within 5s")
	}
	return inspector.Call{}
}

func commonPrefixLen(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestCallDetails runs a switch session in rcm mode and checks what the
// inspector is given for each call: the turns' tasks, sizes and drops, the
// injected record, the threshold and the cached-prefix share, both in the
// store and on the live feed, as they happen.
func TestCallDetails(t *testing.T) {
	rec := &recorder{}
	srv, h := setup(t, rec, nil)
	calls, stop := feedReader(t, srv.URL+"/rcm/feed?session=ses_calls")
	defer stop()
	// Another session's call is not on this stream.
	other := post(t, srv.URL+"/v1/chat/completions", sessionBody(t, switchRequests[:1], switchDirs), http.Header{"X-Session-Id": {"ses_other"}})
	io.Copy(io.Discard, other.Body)

	hdr := http.Header{"X-Session-Id": {"ses_calls"}, "X-Rcm-Mode": {"rcm"}}
	var body []byte
	var fed []inspector.Call
	for n := 1; n <= 3; n++ {
		body = sessionBody(t, switchRequests[:n], switchDirs)
		resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
		io.Copy(io.Discard, resp.Body)
		fed = append(fed, next(t, calls))
	}
	// A tool ran: the turn's next call.
	tc := `{"role":"assistant","content":"","tool_calls":[{"id":"call_9","type":"function","function":{"name":"bash","arguments":"{\"command\":\"go test ./...\",\"workdir\":\"/work/ws1\"}"}}]}`
	body, _ = sjson.SetRawBytes(body, "messages.-1", []byte(tc))
	body, _ = sjson.SetRawBytes(body, "messages.-1", []byte(`{"role":"tool","tool_call_id":"call_9","content":"ok"}`))
	resp := post(t, srv.URL+"/v1/chat/completions", body, hdr)
	io.Copy(io.Discard, resp.Body)
	fed = append(fed, next(t, calls))
	h.after.Wait()

	evs, err := h.store.Events("ses_calls", 0)
	if err != nil || len(evs) != 4 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, c := range fed {
		a, _ := json.Marshal(c.Event)
		b, _ := json.Marshal(evs[i])
		if c.Session != "ses_calls" || string(a) != string(b) {
			t.Fatalf("feed call %d of %s:\n%s\nstored:\n%s", i+1, c.Session, a, b)
		}
	}
	turns := func(e memory.Event) string {
		var s []string
		for _, tn := range e.Turns {
			d := ""
			if tn.Dropped {
				d = " dropped"
			}
			if tn.Tokens <= 0 {
				t.Errorf("turn without tokens: %+v", e.Turns)
			}
			s = append(s, tn.Task+d)
		}
		return strings.Join(s, ", ")
	}
	for i, want := range []string{"t1", "t1 dropped, t2", "t1, t2 dropped, t1", "t1, t2 dropped, t1"} {
		e := evs[i]
		if got := turns(e); got != want || e.Threshold != DefaultThreshold || e.SystemTokens <= 0 || e.Fallback != FallbackNone {
			t.Errorf("call %d: turns %q (want %q), threshold %v, system %d, fallback %s", i+1, got, want, e.Threshold, e.SystemTokens, e.Fallback)
		}
	}
	// t1's record goes into the calls of the turn that returns to it, as
	// forwarded; the first calls of t1 and t2 have none yet.
	for i, e := range evs {
		content := gjson.GetBytes(e.Record, "content").String()
		hasRecord := strings.HasPrefix(content, `<rcm-task-state task="t1">`) && strings.Contains(content, switchRequests[0])
		forwarded := false
		for _, m := range chattest.Messages(rec.bodies[i+1]) {
			forwarded = forwarded || gjson.Get(m, "content").String() == content
		}
		if hasRecord != (i >= 2) || hasRecord && !forwarded {
			t.Errorf("call %d: record %s", i+1, e.Record)
		}
	}
	// The cached-prefix share: unknown for the first call, then the longest
	// byte prefix the forwarded messages share with the session's earlier
	// ones (rec.bodies[0] is the other session's call).
	if evs[0].PrefixShare != nil {
		t.Errorf("first call: share %v", *evs[0].PrefixShare)
	}
	for i := 1; i < 4; i++ {
		cur, common := gjson.GetBytes(rec.bodies[i+1], "messages").Raw, 0
		for _, prev := range rec.bodies[1 : i+1] {
			common = max(common, commonPrefixLen(gjson.GetBytes(prev, "messages").Raw, cur))
		}
		want := float64(common) / float64(len(cur))
		if evs[i].PrefixShare == nil || fmt.Sprintf("%.6f", *evs[i].PrefixShare) != fmt.Sprintf("%.6f", want) {
			t.Errorf("call %d: share %v, want %.6f", i+1, evs[i].PrefixShare, want)
		}
	}
	// Within a turn the context is append-only: nearly all of it is cached.
	if s := *evs[3].PrefixShare; s < 0.8 || s >= 1 {
		t.Errorf("same-turn call: share %.3f", s)
	}
	// A switch back finds t1's first context, not all of its own.
	if *evs[2].PrefixShare >= *evs[3].PrefixShare {
		t.Errorf("return call: share %.3f, same-turn call %.3f", *evs[2].PrefixShare, *evs[3].PrefixShare)
	}
}

func TestSessionsPaged(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	// Recent: the store's sweeper, which runs as the handler starts,
	// deletes sessions older than --retain.
	t0 := time.Now().Add(-time.Hour)
	for i := range 5 {
		touch := func(w *memory.Tx) error {
			return w.Touch(fmt.Sprintf("s%d", i), "", t0.Add(time.Duration(i)*time.Minute))
		}
		if err := h.store.Update(touch); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	url, pages := "/rcm/sessions?limit=2", 0
	for url != "" {
		resp, err := http.Get(srv.URL + url)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", url, resp.Status, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, s := range gjson.ParseBytes(b).Array() {
			ids = append(ids, s.Get("id").String())
		}
		pages++
		url = ""
		if l := resp.Header.Get("Link"); l != "" {
			l, _, _ = strings.Cut(strings.TrimPrefix(l, "<"), ">")
			url = l
		}
	}
	if fmt.Sprint(ids) != "[s4 s3 s2 s1 s0]" || pages != 3 {
		t.Fatalf("%d pages: %v", pages, ids)
	}
	for _, q := range []string{"limit=0", "limit=x", "limit=100000", "after=%21%21"} {
		resp, err := http.Get(srv.URL + "/rcm/sessions?" + q)
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%s: %v %v", q, resp.Status, err)
		}
		resp.Body.Close()
	}
}

// TestInspectorRoutes checks that the page, its assets, the timeline and
// the per-task turn counts are served on the /rcm/ mux.
func TestInspectorRoutes(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	hdr := http.Header{"X-Session-Id": {"ses_page"}, "X-Rcm-Mode": {"router"}}
	for n := 1; n <= 3; n++ {
		resp := post(t, srv.URL+"/v1/chat/completions", sessionBody(t, switchRequests[:n], switchDirs), hdr)
		io.Copy(io.Discard, resp.Body)
	}
	h.after.Wait()
	for path, want := range map[string]string{
		"/rcm/":                                        "text/html",
		"/rcm/ui/app.js":                               "text/javascript",
		"/rcm/ui/style.css":                            "text/css",
		"/rcm/sessions/ses_page/timeline.svg":          "image/svg+xml",
		"/rcm/sessions/ses_page?events=5":              "application/json",
		"/rcm/sessions/nope/timeline.svg":              "404",
		"/rcm/sessions/ses_page/timeline.svg?events=x": "400",
		"/rcm/nope":                                    "404",
		"/rcm/ui/nope.js":                              "404",
		"/rcm/sessions/nope":                           "404",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := resp.Header.Get("Content-Type")
		if resp.StatusCode != 200 {
			got = fmt.Sprint(resp.StatusCode)
		}
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
		if resp.StatusCode != 200 {
			checkErrorShape(t, path, resp, b)
		}
		if path == "/rcm/sessions/ses_page?events=5" {
			var v SessionView
			json.Unmarshal(b, &v)
			if len(v.Tasks) != 2 || v.Tasks[0].Turns != 2 || v.Tasks[1].Turns != 1 {
				t.Errorf("task turns: %+v", v.Tasks)
			}
		}
	}
}

// TestEndStreams checks that shutting down ends the live streams, which
// would otherwise hold a graceful shutdown until its timeout.
func TestEndStreams(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	calls, stop := feedReader(t, srv.URL+"/rcm/feed")
	defer stop()
	h.EndStreams()
	select {
	case _, ok := <-calls:
		if ok {
			t.Fatal("a call on an ended stream")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
	resp, err := http.Get(srv.URL + "/rcm/feed")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("feed after shutdown: %v %v", resp.Status, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkErrorShape(t, "/rcm/feed", resp, b)
}

// checkErrorShape checks that an error answer under /rcm/ is rcm's own JSON
// error, as every other one there is.
func checkErrorShape(t *testing.T, path string, resp *http.Response, body []byte) {
	t.Helper()
	if resp.Header.Get("Content-Type") != "application/json" || gjson.GetBytes(body, "error.code").Str == "" || gjson.GetBytes(body, "error.message").Str == "" {
		t.Errorf("%s: error answered %q %s, want rcm's JSON error", path, resp.Header.Get("Content-Type"), body)
	}
}

// TestPrefixChainPerMode checks that a native call of the session (such as
// OpenCode's title call through its native small model) does not break the
// cached-prefix chain of the session's routed calls.
func TestPrefixChainPerMode(t *testing.T) {
	srv, h := setup(t, &recorder{}, nil)
	body := sessionBody(t, switchRequests[:1], switchDirs)
	longer, _ := sjson.SetRawBytes(body, "messages.-1", []byte(`{"role":"assistant","content":"on it"}`))
	longer, _ = sjson.SetRawBytes(longer, "messages.-1", []byte(`{"role":"user","content":"continue"}`))
	for _, c := range []struct {
		mode string
		body []byte
	}{{"rcm", body}, {"native", []byte(`{"model":"m","messages":[{"role":"user","content":"Generate a title"}]}`)}, {"rcm", longer}} {
		resp := post(t, srv.URL+"/v1/chat/completions", c.body, http.Header{"X-Session-Id": {"ses_modes"}, "X-Rcm-Mode": {c.mode}})
		io.Copy(io.Discard, resp.Body)
		h.after.Wait()
	}
	evs, err := h.store.Events("ses_modes", 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	if evs[1].PrefixShare != nil || evs[2].PrefixShare == nil || *evs[2].PrefixShare < 0.9 {
		t.Fatalf("shares: native %v, rcm after it %v", evs[1].PrefixShare, evs[2].PrefixShare)
	}
}

// TestPrefixShareOrder: shares are measured after the responses, in the
// order the answers ended, whatever order the measuring runs in, and a
// context let go (past maxPrefixBytes) leaves the next share unknown.
func TestPrefixShareOrder(t *testing.T) {
	var p prefixes
	call := func(session, msgs string) *assembly {
		return &assembly{mode: RCM, session: session, body: []byte(`{"model":"m","messages":[` + msgs + `]}`)}
	}
	first := p.take(call("s", `"aaaa"`))
	second := p.take(call("s", `"aaaa","bb"`))
	done := make(chan struct{})
	go func() { second.measure(); close(done) }()
	select {
	case <-done:
		t.Fatal("the second share was measured before the first context")
	case <-time.After(10 * time.Millisecond):
	}
	first.measure()
	<-done
	if first.share != nil || second.share == nil || *second.share != 7.0/13 {
		t.Fatalf("shares %v, %v", first.share, second.share)
	}
	if want := len(second.this.body); p.bytes != want {
		t.Fatalf("%d bytes held, want the latest body's %d", p.bytes, want)
	}
	// A context over the bound lets the session's earlier one go.
	big := p.take(call("other", `"`+strings.Repeat("x", maxPrefixBytes)+`"`))
	big.measure()
	third := p.take(call("s", `"aaaa","bb","c"`))
	third.measure()
	if third.share != nil {
		t.Fatalf("share %v after the previous context was let go", *third.share)
	}
}

// TestPrefixShareFromWhereBodiesDiffer: a body that repeats the previous one
// up to the end of its messages array is scanned only past it; every share
// is the longest prefix shared with an earlier messages array found whole.
func TestPrefixShareFromWhereBodiesDiffer(t *testing.T) {
	bodies := []string{
		`{"model":"m","messages":[{"role":"user","content":"fix [it]"}],"tools":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"fix [it]"},{"role":"assistant","content":"ok]"}],"tools":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"fix [it]"},{"role":"assistant","content":"ok]"}],"tools":[]}`,
		`{"model":"m2","messages":[{"role":"user","content":"fix [it]"},{"role":"assistant","content":"ok]"},"x"],"tools":[]}`,
		`{"model":"m2","messages":[{"role":"user","content":"fix [it] now"}],"tools":[]}`,
		`{"model":"m2","messages":[{"role":"user","content":"fix [it] now"}, [1, {"a":"]"}] ]  ,"tools":[]}`,
		`{"model":"m2","messages":[{"role":"user","content":"fix [it] now"}]}`,
		`{"model":"m2","messages":"none"}`,
		`{"model":"m2","messages":"none","more":1}`,
		`{"model":"m2","messages":[1,2,3]}`,
		`{"model":"m2","messages":[1,2,3,{"unclosed":"]`,
	}
	whole := func(b []byte) []byte {
		if s, e, ok := transcript.Span(b, "messages"); ok && b[s] == '[' {
			return b[s:e]
		}
		return b
	}
	var p prefixes
	for i, b := range bodies {
		ps := p.take(&assembly{mode: Router, session: "s", body: []byte(b)})
		ps.measure()
		if i == 0 {
			continue
		}
		next, common := whole([]byte(b)), 0
		for _, prev := range bodies[:i] {
			common = max(common, str.CommonPrefix(whole([]byte(prev)), next))
		}
		// A context a later one extends is let go: a body that repeats
		// it exactly then misses its closing bracket.
		want, bracket := float64(common)/float64(len(next)), 1/float64(len(next))
		if ps.share == nil || *ps.share > want || *ps.share < want-bracket-1e-12 {
			t.Errorf("body %d: share %v, want %v", i, ps.share, want)
		}
	}
}

// TestPrefixShareAnyEarlier: the share is what a provider's cache would
// serve: the longest prefix shared with any earlier context of the session
// still in the cache, so a return to a task after a switch finds the
// task's own context again; past the cache's lifetime it finds nothing.
func TestPrefixShareAnyEarlier(t *testing.T) {
	p := prefixes{ttl: 200 * time.Millisecond}
	share := func(msgs string) float64 {
		t.Helper()
		ps := p.take(&assembly{mode: RCM, session: "s", body: []byte(`{"model":"m","messages":[` + msgs + `]}`)})
		ps.measure()
		if ps.share == nil {
			return -1
		}
		return *ps.share
	}
	alpha := `{"role":"user","content":"alpha: fix the parser, its tests fail"}`
	beta := `{"role":"user","content":"beta: write the changelog for the release"}`
	share(alpha)
	share(alpha + `,"a1"`)
	if got := share(beta); got > 0.5 { // the messages' opening only
		t.Fatalf("switch to beta: share %v", got)
	}
	back := alpha + `,"a1","a2"`
	if got, want := share(back), float64(len(alpha)+len(`[,"a1"`))/float64(len(back)+2); got != want {
		t.Fatalf("back to alpha: share %v, want %v (alpha's last context, not beta's)", got, want)
	}
	if n := len(p.last["rcm s"].Value.(*chain).recent); n != 2 {
		t.Fatalf("%d contexts kept, want alpha's latest and beta's", n)
	}
	time.Sleep(250 * time.Millisecond)
	if got := share(back + `,"a3"`); got != 0 {
		t.Fatalf("past the cache's lifetime: share %v, want 0", got)
	}
}

// TestSessionViewIsOneSnapshot: the inspector reads a session in one
// transaction, so its records and events agree while calls commit: each
// write here updates the record and appends an event together.
func TestSessionViewIsOneSnapshot(t *testing.T) {
	h, srv, _ := newHandler(t, Config{Upstream: "http://127.0.0.1:9/v1"})
	const writes = 300
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			err := h.store.Update(func(w *memory.Tx) error {
				if err := w.Touch("ses_snap", "", time.Now()); err != nil {
					return err
				}
				if err := w.UpdateRecord("ses_snap", "t1", func(r *memory.Record) error {
					r.Progress = append(r.Progress, fmt.Sprint("step ", i))
					return nil
				}); err != nil {
					return err
				}
				return w.AppendEvent("ses_snap", &memory.Event{At: time.Now(), Task: "t1"})
			})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
		}
		resp, err := http.Get(srv.URL + "/rcm/sessions/ses_snap?events=1000")
		if err != nil {
			t.Fatal(err)
		}
		var v SessionView
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Records) != 1 || v.Records[0].Version != len(v.Events) {
			t.Fatalf("records and events disagree: records %+v, %d events", v.Records, len(v.Events))
		}
	}
}
