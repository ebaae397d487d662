package inspector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/memory"
)

// TestPublishNeverBlocks fills a subscriber's buffer and checks that
// publishing goes on (counting what the subscriber missed).
func TestPublishNeverBlocks(t *testing.T) {
	var f Feed
	s, _, ok := f.subscribe("")
	if !ok {
		t.Fatal("subscribe")
	}
	done := make(chan struct{})
	go func() {
		for i := range subscriberBuffer + 10 {
			f.Publish(Call{Session: "s", Event: memory.Event{Seq: uint64(i)}})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a full subscriber")
	}
	if len(s.ch) != subscriberBuffer || s.dropped.Load() != 10 {
		t.Fatalf("buffered %d, dropped %d", len(s.ch), s.dropped.Load())
	}
	f.unsubscribe(s)
	f.Publish(Call{Session: "s"}) // no subscriber: nothing to do
}

func readEvents(t *testing.T, r io.Reader, n int) []string {
	t.Helper()
	sc := bufio.NewScanner(r)
	var out []string
	var cur strings.Builder
	for len(out) < n && sc.Scan() {
		if sc.Text() == "" {
			if cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			continue
		}
		cur.WriteString(sc.Text() + "\n")
	}
	return out
}

// TestFeedStream checks the SSE stream: the session filter and the end of
// the handler when the client leaves.
func TestFeedStream(t *testing.T) {
	var f Feed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.Serve(w, r) }))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "?session=a")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	if got := readEvents(t, br, 1); len(got) != 1 || got[0] != "retry: 2000\n" {
		t.Fatalf("first event %q", got)
	}
	f.Publish(Call{Session: "b", Event: memory.Event{Seq: 1}})
	f.Publish(Call{Session: "a", Event: memory.Event{Seq: 2, Task: "t1"}})
	got := readEvents(t, br, 1)
	if len(got) != 1 || !strings.HasPrefix(got[0], "event: call\ndata: {\"session\":\"a\",\"event\":{\"seq\":2,") {
		t.Fatalf("call event %q", got)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.subs)
		f.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream outlived its client")
		}
		f.Publish(Call{Session: "a"}) // a write notices the client is gone
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDroppedNotice checks that a subscriber that fell behind is told how
// many calls it missed before the next one it gets.
func TestDroppedNotice(t *testing.T) {
	var f Feed
	s, done, _ := f.subscribe("")
	for range subscriberBuffer + 2 {
		f.Publish(Call{Session: "a"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/rcm/feed", nil).WithContext(ctx)
	ended := make(chan struct{})
	go func() { f.stream(w, r, s, done); close(ended) }()
	for len(s.ch) > 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-ended
	events := readEvents(t, w.Body, subscriberBuffer+3)
	if len(events) != subscriberBuffer+2 || events[1] != "event: dropped\ndata: 2\n" || !strings.HasPrefix(events[2], "event: call\n") {
		t.Fatalf("%d events, starting %q", len(events), events[:min(3, len(events))])
	}
}

func TestTimeline(t *testing.T) {
	tasks := []memory.Task{{ID: "t1"}, {ID: "t2<x>"}}
	events := []memory.Event{
		{Seq: 1, Kind: "agent", Mode: "rcm", Task: "t1", Confidence: 1, Method: "new", Fallback: "none", Threshold: 0.8},
		{Seq: 2, Kind: "title", Mode: "rcm", Fallback: "side-call"},
		{Seq: 3, Kind: "agent", Mode: "rcm", Task: "t2<x>", Confidence: 0.95, Method: "workspace", Fallback: "none", Threshold: 0.8},
		{Seq: 4, Kind: "agent", Mode: "rcm", Task: "t1", Confidence: 0.5, Method: "lexical", Fallback: "threshold", Threshold: 0.8},
		{Seq: 5, Kind: "agent", Mode: "rcm", Task: "t1", Confidence: 0.9, Method: "prior", Fallback: "none", Threshold: 0.8},
	}
	svg := Timeline(tasks, events)
	var doc struct {
		XMLName xml.Name
		Rects   []struct {
			Class string `xml:"class,attr"`
			Seq   string `xml:"data-seq,attr"`
			Fill  string `xml:"fill,attr"`
		} `xml:"rect"`
		Lines []struct {
			Class string `xml:"class,attr"`
		} `xml:"line"`
		Circles []struct {
			Class string `xml:"class,attr"`
			Fill  string `xml:"fill,attr"`
		} `xml:"circle"`
		Polylines []struct {
			Class  string `xml:"class,attr"`
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, svg)
	}
	var fills []string
	for _, r := range doc.Rects {
		if r.Class == "call" {
			fills = append(fills, r.Seq+":"+r.Fill)
		}
	}
	// Tasks take the palette in order; the side call is grey.
	if want := "[1:#4e79a7 2:#d0d0d0 3:#f28e2b 4:#4e79a7 5:#4e79a7]"; fmt.Sprint(fills) != want {
		t.Errorf("calls %v, want %s", fills, want)
	}
	switches := 0
	for _, l := range doc.Lines {
		if l.Class == "switch" {
			switches++
		}
	}
	if switches != 2 { // t1 -> t2, t2 -> t1
		t.Errorf("%d switches, want 2", switches)
	}
	var dots []string
	for _, c := range doc.Circles {
		if c.Class == "conf" {
			dots = append(dots, c.Fill)
		}
	}
	if fmt.Sprint(dots) != "[#4e79a7 #f28e2b #fff #4e79a7]" {
		t.Errorf("confidence dots %v", dots)
	}
	lines := map[string]string{}
	for _, p := range doc.Polylines {
		lines[p.Class] = p.Points
	}
	// The threshold 0.8 is drawn at y = 66 + 120*0.2 = 90.
	if !strings.Contains(lines["threshold"], ",90.0 ") || strings.Count(lines["conf-line"], ",") != 4 {
		t.Errorf("polylines %v", lines)
	}
	if !strings.Contains(string(svg), "t2&lt;x&gt;") || strings.Contains(string(svg), "t2<x>") {
		t.Error("task names are not escaped")
	}
	if err := xml.Unmarshal(Timeline(nil, nil), &doc); err != nil || !strings.Contains(fmt.Sprint(doc.Texts), "no calls yet") {
		t.Errorf("empty timeline: %v %v", err, doc.Texts)
	}
}

// TestAssets checks that the page works offline (no URL outside rcm) and
// that the page's palette is the timeline's.
func TestAssets(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(files, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(files, path)
		// A namespace is a name, not something fetched.
		b = bytes.ReplaceAll(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil)
		if m := external.Find(b); m != nil {
			t.Errorf("%s refers to %s: the page must work offline", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := fs.ReadFile(files, "ui/app.js")
	m := regexp.MustCompile(`const palette = \[([^\]]*)\]`).FindSubmatch(js)
	if m == nil || string(m[1]) != `"`+strings.Join(palette, `", "`)+`"` {
		t.Fatalf("app.js palette %q, timeline.go %q", m, palette)
	}
	html, _ := fs.ReadFile(files, "ui/index.html")
	for _, want := range []string{`src="ui/app.js"`, `href="ui/style.css"`, `id="sessions"`, `id="calls"`, `id="timeline"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
}
