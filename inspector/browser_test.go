//go:build unix

package inspector_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rcm-dev/rcm/internal/ci"
	"github.com/rcm-dev/rcm/internal/proxytest"
	"github.com/rcm-dev/rcm/proxy"
)

// TestBrowser drives the page in a real headless Chromium over the Chrome
// DevTools protocol: the page loads and connects to the live feed, a
// two-task session replayed through a real proxy (before a scripted
// upstream) appears as it happens, a call's details open on a click, and a
// screenshot shows the session. RCM_SCREENSHOT=FILE keeps the screenshot.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	srv, forwarded := serveProxy(t)
	b := launch(t, bin)
	b.call(t, "Runtime.enable", nil)
	b.call(t, "Log.enable", nil)
	b.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false})
	// Earlier sessions, one more than a page of the list holds.
	for i := range 31 {
		send(t, srv.URL, fmt.Sprintf("ses_old_%02d", i), `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	}
	// Sessions are stored after their answers: wait for all of them.
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(srv.URL + "/rcm/sessions?limit=100")
		if err != nil {
			t.Fatal(err)
		}
		var ss []json.RawMessage
		json.NewDecoder(resp.Body).Decode(&ss)
		resp.Body.Close()
		if len(ss) == 31 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d sessions stored, want 31", len(ss))
		}
	}
	b.call(t, "Page.navigate", map[string]any{"url": srv.URL + "/rcm/"})
	b.wait(t, "the page connects to the live feed", `document.querySelector("#live.on") !== null`)
	b.wait(t, "a page of sessions, newest first", `document.querySelectorAll("#sessions li").length === 30 && document.querySelector("#sessions li").dataset.id === "ses_old_30" && !document.querySelector("#more").hidden`)
	b.click(t, "#more")
	b.wait(t, "the next page", `document.querySelectorAll("#sessions li").length === 31 && document.querySelector("#more").hidden`)

	// The session's first call appears in the list while the page is open.
	calls := twoTaskSession()
	send(t, srv.URL, "ses_browser", calls[0])
	b.wait(t, "the new session at the top of the list", `document.querySelector("#sessions li").dataset.id === "ses_browser"`)
	b.click(t, `#sessions li[data-id="ses_browser"]`)
	b.wait(t, "the session's first call", `document.querySelectorAll("#calls tbody tr").length === 1`)

	// The rest arrive live: rows, then the timeline with the switches.
	for _, c := range calls[1:] {
		send(t, srv.URL, "ses_browser", c)
	}
	b.wait(t, "every call in the table", fmt.Sprintf(`document.querySelectorAll("#calls tbody tr").length === %d`, len(calls)))
	b.wait(t, "the timeline", fmt.Sprintf(`document.querySelectorAll("#timeline rect.call").length === %d && document.querySelectorAll("#timeline line.switch").length === 2`, len(calls)))
	b.wait(t, "both tasks with their records", `document.querySelectorAll("#tasks .task-card").length === 2 && document.querySelector('#tasks [data-task="t1"] pre').textContent.includes("fix the crash in the ORM query compiler")`)

	// The call that returns to t1: its details, with a dropped turn and
	// the record rcm injected.
	b.click(t, `#calls tbody tr[data-seq="3"]`)
	b.wait(t, "the call's details", `!document.querySelector("#detail").hidden && document.querySelector("#detail-body h3") !== null`)
	detail := b.eval(t, `document.querySelector("#detail-body").textContent`)
	for _, want := range []string{"t1", "workspace", "none", "0.80 in effect", "falls back", "cached prefix", "Injected record", `<rcm-task-state task="t1">`} {
		if !strings.Contains(detail, want) {
			t.Errorf("details lack %q:\n%s", want, detail)
		}
	}
	if n := b.eval(t, `String(document.querySelectorAll("#detail .bar .seg.dropped").length)`); n != "1" {
		t.Errorf("%s dropped turns greyed, want 1 (t2's)", n)
	}
	if n := b.eval(t, `String(document.querySelectorAll("#detail .bar .seg.record").length)`); n != "1" {
		t.Errorf("%s record segments, want 1", n)
	}
	if row := b.eval(t, `document.querySelector('#calls tbody tr[data-seq="3"]').innerText`); !strings.Contains(row, "> 1.00") && !strings.Contains(row, "> 0.") {
		t.Errorf("the row does not say where the call falls back: %q", row)
	}
	inspectNames(t, b, forwarded("ses_browser"))

	shot := b.screenshot(t)
	if path := os.Getenv("RCM_SCREENSHOT"); path != "" {
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkScreenshot(t, shot)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("the page logged an error (script, network or content policy): %s", e)
	}
}

// inspectNames checks what the page names and explains, with the details
// of the call returning to t1 open: each task's title beside its id; the
// session's client, first request, tasks, calls and last use in the list;
// a calls table that fits beside the details at 1400 px; the received
// tokens of the header and the bars reconciled; and the cached-prefix
// share of the return, which finds t1's earlier context (not t2's, the
// previous call's).
func inspectNames(t *testing.T, b *browser, forwarded [][]byte) {
	t.Helper()
	for task, want := range map[string]string{"t1": "In /work/ws1 fix the crash in the ORM query compiler", "t2": "In /work/ws2 add a regression test for the URL validator"} {
		if got := b.eval(t, `document.querySelector('#tasks [data-task="`+task+`"] summary').innerText`); !strings.Contains(got, task) || !strings.Contains(got, want) {
			t.Errorf("task %s shows %q, want its id and title %q", task, got, want)
		}
	}
	b.wait(t, "the session's client, first request, tasks and calls in the list",
		`(() => { const li = document.querySelector('#sessions li[data-id="ses_browser"]');
		  return li.querySelector(".first").textContent === "OpenCode · In /work/ws1 fix the crash in the ORM query compiler" &&
		    /^2 tasks · 4 calls · \d+s ago$/.test(li.querySelector(".meta").textContent); })()`)
	if fits := b.eval(t, `(() => { const m = document.querySelector("main"), c = document.querySelector("#calls");
	    return String(!document.querySelector("#detail").hidden && m.scrollWidth <= m.clientWidth && c.getBoundingClientRect().right <= m.getBoundingClientRect().right); })()`); fits != "true" {
		t.Errorf("the calls table scrolls sideways beside the details: main %s wide, table %s", b.eval(t, `String(document.querySelector("main").clientWidth)`),
			b.eval(t, `String(document.querySelector("#calls").scrollWidth)`))
	}
	// The header's received tokens, the bars' and the note between them.
	got := b.eval(t, `JSON.stringify([document.querySelector("#detail-body dl").innerText, document.querySelector("#detail .bar-label.received").textContent, document.querySelector("#detail .tokens-note").textContent])`)
	var texts []string
	json.Unmarshal([]byte(got), &texts)
	header := regexp.MustCompile(`(\d+) received → \d+ forwarded`).FindStringSubmatch(texts[0])
	bars := regexp.MustCompile(`^received: (\d+) tokens`).FindStringSubmatch(texts[1])
	note := regexp.MustCompile(`^Of the (\d+) tokens the call received, the other (\d+) are the body's fields besides the messages`).FindStringSubmatch(texts[2])
	if header == nil || bars == nil || note == nil || note[1] != header[1] || atoi(bars[1])+atoi(note[2]) != atoi(header[1]) {
		t.Errorf("received tokens do not add up: %q", texts)
	}
	// Call 3 returns to t1: its share is the longest prefix its messages
	// share with any earlier call's (t1's first), not only the previous
	// call's (t2's).
	if len(forwarded) != 4 {
		t.Fatalf("%d calls forwarded", len(forwarded))
	}
	messages := func(b []byte) []byte {
		var v struct{ Messages json.RawMessage }
		json.Unmarshal(b, &v)
		return v.Messages
	}
	ret := messages(forwarded[2])
	common := func(i int) int {
		p := messages(forwarded[i])
		n := 0
		for n < len(p) && n < len(ret) && p[n] == ret[n] {
			n++
		}
		return n
	}
	if common(0) <= common(1) {
		t.Fatalf("the return shares %d bytes with t1's call, %d with t2's: not the session this test needs", common(0), common(1))
	}
	want := fmt.Sprintf("%d%%", int(math.Round(100*float64(common(0))/float64(len(ret)))))
	if got := b.eval(t, `document.querySelector('#calls tbody tr[data-seq="3"] td:last-child').textContent`); got != want ||
		!strings.Contains(b.eval(t, `document.querySelector("#detail-body").textContent`), "provider's cache") {
		t.Errorf("cached prefix of the return %s, want %s (t1's context in the cache)", got, want)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return -1
	}
	return n
}

// checkScreenshot decodes the PNG and checks its size and that it shows
// the page: the dark header, and t1's and t2's colours (timeline, chips).
func checkScreenshot(t *testing.T, shot []byte) {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 1000 {
		t.Fatalf("screenshot %v, want 1400x1000", b)
	}
	counts := map[string]int{}
	colours := map[uint32]bool{}
	for y := 0; y < 1000; y++ {
		for x := 0; x < 1400; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			colours[r<<16|g<<8|bl] = true
			switch {
			case near(r, g, bl, 0x1f, 0x29, 0x33):
				counts["header"]++
			case near(r, g, bl, 0x4e, 0x79, 0xa7):
				counts["t1"]++
			case near(r, g, bl, 0xf2, 0x8e, 0x2b):
				counts["t2"]++
			}
		}
	}
	if counts["header"] < 1400*20 || counts["t1"] < 500 || counts["t2"] < 200 || len(colours) < 50 {
		t.Errorf("screenshot pixels %v, %d colours: not the page with a two-task session", counts, len(colours))
	}
}

func near(r, g, b, wr, wg, wb uint32) bool {
	d := func(a, b uint32) uint32 {
		if a > b {
			return a - b
		}
		return b - a
	}
	return d(r, wr) < 8 && d(g, wg) < 8 && d(b, wb) < 8
}

// chromium finds Debian's chromium. Without it the test fails under CI
// (.ci/run installs it) and is skipped elsewhere.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	ci.Missing(t, "chromium is not installed (apt-get install chromium; .ci/run installs it)")
	return ""
}

// serveProxy runs rcm (rcm mode) before an upstream that streams "done";
// forwarded returns the bodies it received of a session, in order.
func serveProxy(t *testing.T) (srv *httptest.Server, forwarded func(session string) [][]byte) {
	var mu sync.Mutex
	bodies := map[string][][]byte{}
	return proxytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies[r.Header.Get("X-Session-Id")] = append(bodies[r.Header.Get("X-Session-Id")], b)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			for _, chunk := range []string{
				`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`[DONE]`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", chunk)
			}
		})), func(session string) [][]byte {
			mu.Lock()
			defer mu.Unlock()
			return bodies[session]
		}
}

// twoTaskSession is OpenCode's calls of a session that works on t1 (in
// checkout ws1), switches to t2 (ws2), then returns to t1 and runs a tool.
func twoTaskSession() []string {
	sys := `{"role":"system","content":"You are opencode, an interactive CLI tool that helps users with software engineering tasks."}`
	turn := func(i int, req, dir string) []string {
		call := fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"bash","arguments":"{\"command\":\"git status\",\"workdir\":\"%s\"}"}}]}`, i, dir)
		return []string{
			fmt.Sprintf(`{"role":"user","content":%q}`, req), call,
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"On branch main, work of request %d"}`, i, i),
			fmt.Sprintf(`{"role":"assistant","content":"Done with step %d"}`, i),
		}
	}
	t1 := turn(1, "In /work/ws1 fix the crash in the ORM query compiler", "/work/ws1")
	t2 := turn(2, "In /work/ws2 add a regression test for the URL validator", "/work/ws2")
	back := turn(3, "Back to /work/ws1: also handle empty lookups in the compiler", "/work/ws1")
	history := [][]string{
		{sys, t1[0]},
		append(append([]string{sys}, t1...), t2[0]),
		append(append(append([]string{sys}, t1...), t2...), back[0]),
		append(append(append([]string{sys}, t1...), t2...), back[:3]...),
	}
	var bodies []string
	for _, ms := range history {
		bodies = append(bodies, `{"model":"m","stream":true,"messages":[`+strings.Join(ms, ",")+`]}`)
	}
	return bodies
}

// send posts one call of session in rcm mode; it must be routed.
func send(t *testing.T, base, session, body string) {
	t.Helper()
	if fb := proxytest.Send(t, base+"/rcm/v1/chat/completions", session, body).Get(proxy.HeaderFallback); fb != proxy.FallbackNone {
		t.Fatalf("call fell back: %s", fb)
	}
}

// browser is a headless Chromium and a DevTools connection to its page.
type browser struct {
	conn    *websocket.Conn
	mu      sync.Mutex
	id      int
	pending map[int]chan cdpReply
	errors  []string // the page's uncaught exceptions and console errors
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

var devtools = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

func launch(t *testing.T, bin string) *browser {
	// Not t.TempDir: Chromium's helpers may still be writing into its
	// profile while the test ends, which would fail TempDir's cleanup.
	profile, err := os.MkdirTemp("", "rcm-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-quic", "--hide-scrollbars", "--user-data-dir="+profile, "--remote-debugging-port=0", "about:blank")
	// Its own process group, so that its helper processes end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		os.RemoveAll(profile)
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtools.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not open its DevTools port within 30s")
	}
	// The browser's endpoint lists its targets; connect to the page.
	host := strings.TrimPrefix(wsURL, "ws://")
	host, _, _ = strings.Cut(host, "/")
	resp, err := http.Get("http://" + host + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	page := ""
	for _, tg := range targets {
		if tg.Type == "page" {
			page = tg.WS
		}
	}
	if page == "" {
		t.Fatalf("no page target: %+v", targets)
	}
	conn, _, err := websocket.DefaultDialer.Dial(page, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20) // screenshots
	b := &browser{conn: conn, pending: map[int]chan cdpReply{}}
	t.Cleanup(func() { conn.Close() })
	go b.read()
	return b
}

// read hands each reply to its caller; events are ignored.
func (b *browser) read() {
	for {
		var m struct {
			ID     int    `json:"id"`
			Method string `json:"method"`
			Params json.RawMessage
			cdpReply
		}
		if err := b.conn.ReadJSON(&m); err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		b.mu.Lock()
		switch m.Method {
		case "Runtime.exceptionThrown":
			b.errors = append(b.errors, string(m.Params))
		case "Log.entryAdded", "Runtime.consoleAPICalled":
			if strings.Contains(string(m.Params), `"error"`) {
				b.errors = append(b.errors, string(m.Params))
			}
		}
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

func (b *browser) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	b.id++
	id := b.id
	b.pending[id] = ch
	err := b.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params})
	b.mu.Unlock()
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the browser went away", method)
		}
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no reply within 30s", method)
	}
	return nil
}

// eval evaluates a JavaScript expression in the page and returns its
// value as a string (JSON for non-strings).
func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	raw := b.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Exception != nil {
		t.Fatalf("%s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	var s string
	if json.Unmarshal(r.Result.Value, &s) == nil {
		return s
	}
	return string(r.Result.Value)
}

// wait polls a condition in the page for up to 15 s.
func (b *browser) wait(t *testing.T, what, cond string) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(50 * time.Millisecond) {
		if b.eval(t, cond) == "true" {
			return
		}
	}
	t.Fatalf("waited 15s for %s (%s); page text:\n%s", what, cond, b.eval(t, `document.body.innerText`))
}

// click presses the mouse on the middle of the element, as a user would.
func (b *browser) click(t *testing.T, selector string) {
	t.Helper()
	b.wait(t, selector, fmt.Sprintf(`document.querySelector(%q) !== null`, selector))
	var r struct{ X, Y float64 }
	pos := b.eval(t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()`, selector))
	if err := json.Unmarshal([]byte(pos), &r); err != nil {
		t.Fatalf("position of %s: %s", selector, pos)
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.call(t, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": r.X, "y": r.Y, "button": "left", "clickCount": 1})
	}
}

func (b *browser) screenshot(t *testing.T) []byte {
	t.Helper()
	raw := b.call(t, "Page.captureScreenshot", map[string]any{"format": "png"})
	var r struct {
		Data string `json:"data"`
	}
	json.Unmarshal(raw, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	return png
}
