package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/progress"
	benchspec "github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/tidwall/gjson"
)

// standIn is a proxy stand-in: native forwards the body unchanged; any other
// mode keeps the system prompt and the messages from the last user message
// on, and names the task by the checkout the last request mentions. It
// answers with the wire contract's headers, as the real proxy does.
func standIn(t *testing.T, upstream string) *httptest.Server {
	ws := regexp.MustCompile(`/work/(ws\d)`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mode := r.Header.Get("X-RCM-Mode")
		if mode != "native" {
			var req map[string]json.RawMessage
			var msgs []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			var raw []json.RawMessage
			if json.Unmarshal(body, &req) != nil || json.Unmarshal(req["messages"], &raw) != nil || json.Unmarshal(req["messages"], &msgs) != nil {
				http.Error(w, "bad body", 400)
				return
			}
			last := 0
			for i, m := range msgs {
				if m.Role == "user" {
					last = i
				}
			}
			req["messages"], _ = json.Marshal(append(raw[:1:1], raw[last:]...))
			body, _ = json.Marshal(req)
			w.Header().Set("X-RCM-Task", "t-"+ws.FindStringSubmatch(msgs[last].Content)[1])
			w.Header().Set("X-RCM-Confidence", "0.900")
		}
		w.Header().Set("X-RCM-Fallback", "none")
		out, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream+r.URL.Path, bytes.NewReader(body))
		out.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
}

func smallSpec(t *testing.T) *benchspec.Spec {
	t.Helper()
	s, err := benchspec.Load("testdata/replay_small.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func replayRig(t *testing.T) (Options, *scripted.Server) {
	up := scripted.New(scripted.Script{})
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	px := standIn(t, upSrv.URL)
	t.Cleanup(px.Close)
	return Options{Proxy: px.URL, Upstream: up, Direct: upSrv.URL + "/v1", Modes: []string{benchspec.ModeNative, benchspec.ModeRouter}, Thresholds: []float64{0.8}}, up
}

func TestReplayStandIn(t *testing.T) {
	spec := smallSpec(t)
	opts, up := replayRig(t)
	res, err := Replay(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(spec.Sessions) || res.Interrupted || len(res.Summaries) != 2 {
		t.Fatalf("completed %d of %d, interrupted %v, %d rows", res.Completed, len(spec.Sessions), res.Interrupted, len(res.Summaries))
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the upstream still holds %d requests: the driver must take them", n)
	}
	native, routed := res.Summaries[0], res.Summaries[1]
	if native.FocusRecall != 1 || native.TokensRatio != 1 || native.FocusRecallBase != 1 || native.Contamination <= 0 || native.Contamination >= 1 {
		t.Errorf("native: recall %v, tokens ratio %v, contamination %v", native.FocusRecall, native.TokensRatio, native.Contamination)
	}
	if !math.IsNaN(float64(native.RoutingAccuracy)) || native.Routed != 0 || native.FallbackRate != 0 {
		t.Errorf("native: routing %v, routed %v, fallback %v", native.RoutingAccuracy, native.Routed, native.FallbackRate)
	}
	if math.IsNaN(float64(native.OverheadP50)) || native.Near.N+native.Far.N != native.N || native.Near.N == 0 || native.Far.N == 0 {
		t.Errorf("native: overhead %v, near %d + far %d of %d", native.OverheadP50, native.Near.N, native.Far.N, native.N)
	}
	for _, r := range res.PerSession {
		if r.ContaminationBase != 0 {
			t.Errorf("%s %s: contamination %v in S_base, which holds only the focus task", r.Session, r.Mode, r.ContaminationBase)
		}
		if r.FocusCall != 4 {
			t.Errorf("%s: %d focus calls, want 4", r.Session, r.FocusCall)
		}
	}
	// Keeping only the current request: the focus calls are two of stage 1
	// (1 of 1 request kept), one of stage 2 (1 of 2) and the submit (1 of 3).
	want := (1 + 1 + 0.5 + 1.0/3) / 4
	if math.Abs(float64(routed.FocusRecall)-want) > 1e-6 || routed.Contamination != 0 || routed.TokensRatio >= 1 {
		t.Errorf("router stand-in: recall %v (want %v), contamination %v, tokens ratio %v", routed.FocusRecall, want, routed.Contamination, routed.TokensRatio)
	}
	// After the first switch (stage 2 and the submit), native carries the
	// other tasks' turns: more contamination than over all focus calls.
	post := routed.PostSwitch
	if want := (0.5 + 1.0/3) / 2; post.N != native.N || math.Abs(float64(post.FocusRecall)-want) > 1e-6 || post.Contamination != 0 || post.TokensRatio >= routed.TokensRatio {
		t.Errorf("router stand-in post-switch: %+v, want recall %v, no contamination, fewer tokens than over all focus calls (%v)", post, want, routed.TokensRatio)
	}
	if np := native.PostSwitch; np.FocusRecall != 1 || np.TokensRatio != 1 || !(np.Contamination > native.Contamination) || np.TokensVsBase <= 1 {
		t.Errorf("native post-switch: %+v; want recall 1, ratio 1, contamination above %v, more tokens than S_base", np, native.Contamination)
	}
	for _, r := range res.PerSession {
		if r.PostSwitch.FocusCalls != 2 {
			t.Errorf("%s %s: %d post-switch focus calls, want 2", r.Session, r.Mode, r.PostSwitch.FocusCalls)
		}
	}
	if routed.RoutingAccuracy != 1 || routed.Routed != 1 || len(routed.Calibration) != 1 || math.Abs(float64(routed.ECE)-0.1) > 1e-9 {
		t.Errorf("router stand-in: routing %v, routed %v, calibration %+v, ECE %v", routed.RoutingAccuracy, routed.Routed, routed.Calibration, routed.ECE)
	}
	if fs := routed.FalseSwitches; fs.Count != 0 || fs.Routed == 0 || fs.Rate != 0 {
		t.Errorf("router stand-in false switches: %+v, want none over some routed S_base calls", fs)
	}
	if fs := native.FalseSwitches; fs.Routed != 0 || !math.IsNaN(float64(fs.Rate)) {
		t.Errorf("native false switches: %+v, want no routed calls", fs)
	}
	if !(routed.PrefixStability < native.PrefixStability) {
		t.Errorf("prefix stability: router %v, native %v", routed.PrefixStability, native.PrefixStability)
	}
	// The small sessions fit OpenCode's default tail whole: its compaction
	// prompt then holds the whole conversation. No mode asks for sections;
	// no records without rcm.
	for _, s := range res.Summaries {
		if s.CompactionCoverage != 1 || s.CompactionSections != 0 || !math.IsNaN(float64(s.RecordBytes.Mean)) || len(s.RecordBytes.ByTurn) != 0 {
			t.Errorf("%s: compaction coverage %v, sections %v, record bytes %+v", s.Mode, s.CompactionCoverage, s.CompactionSections, s.RecordBytes)
		}
	}

	dir := t.TempDir()
	if err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, dir)
}

// checkOutputs checks results.json's required keys and that report.md
// links plots that exist.
func checkOutputs(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	rows, _ := got["results"].([]any)
	if len(rows) == 0 {
		t.Fatalf("results.json: no results")
	}
	for _, row := range rows {
		obj := row.(map[string]any)
		for _, k := range []string{"mode", "threshold", "n", "focus_recall", "contamination", "tokens_ratio", "routing_accuracy",
			"fallback_rate", "false_switches", "prefix_stability", "overhead_ms_p50", "focus_recall_ci", "near", "far",
			"compaction_coverage", "compaction_sections", "record_bytes"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("results.json: %v: no %q", obj["mode"], k)
			}
		}
		post, _ := obj["post_switch"].(map[string]any)
		for _, k := range []string{"n", "focus_recall", "contamination", "tokens_ratio", "tokens_ratio_ci"} {
			if _, ok := post[k]; !ok {
				t.Errorf("results.json: %v: no post_switch.%s", obj["mode"], k)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("## Post-switch focus calls")) {
		t.Error("report.md has no post-switch table")
	}
	if !bytes.Contains(md, []byte("## Compaction and state records")) {
		t.Error("report.md has no compaction and records table")
	}
	for _, svg := range []string{ModesSVG, SweepSVG} {
		if !bytes.Contains(md, []byte("]("+svg+")")) {
			t.Errorf("report.md does not link %s", svg)
		}
		b, err := os.ReadFile(filepath.Join(dir, svg))
		if err != nil || !bytes.HasPrefix(b, []byte("<svg ")) || !bytes.HasSuffix(b, []byte("</svg>\n")) {
			t.Errorf("%s: %v %.40q", svg, err, b)
		}
	}
	return got
}

// TestReplayCompactionTail: with a 300-token tail the compaction prompt
// leaves out the submit turn and the last two distractor turns, so two of
// the four unfinished distractors miss a request (native and the stand-in
// router forward the prompt as built); with no tail it holds everything.
func TestReplayCompactionTail(t *testing.T) {
	spec := smallSpec(t)
	for _, c := range []struct {
		tail int
		want stat.Num
	}{{300, 0.5}, {-1, 1}} {
		opts, _ := replayRig(t)
		opts.Direct, opts.CompactionTail = "", c.tail
		res, err := Replay(context.Background(), spec, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.PerSession {
			if r.CompactionCoverage != c.want {
				t.Errorf("tail %d: %s %s: compaction coverage %v, want %v", c.tail, r.Session, r.Mode, r.CompactionCoverage, c.want)
			}
		}
	}
}

func TestReplayCancelKeepsFinishedSessions(t *testing.T) {
	spec := smallSpec(t)
	opts, _ := replayRig(t)
	opts.Concurrency = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts.Progress = func(p progress.Progress) {
		if p.Sessions >= 1 {
			cancel()
		}
	}
	res, err := Replay(ctx, spec, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res == nil || !res.Interrupted || res.Completed != 1 || len(res.Errors) != 0 {
		t.Fatalf("results %+v", res)
	}
	for _, s := range res.Summaries {
		if s.N != 1 {
			t.Errorf("%s: %d sessions, want the one that finished", s.Mode, s.N)
		}
	}
	dir := t.TempDir()
	if err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	got := checkOutputs(t, dir)
	if got["interrupted"] != true || got["completed_sessions"] != 1.0 {
		t.Errorf("results.json: interrupted %v, completed %v", got["interrupted"], got["completed_sessions"])
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(md), "Interrupted") {
		t.Error("report.md does not say it was interrupted")
	}
}

func TestReplayProxyErrorFailsTheSession(t *testing.T) {
	spec := smallSpec(t)
	opts, _ := replayRig(t)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusBadGateway)
	}))
	defer bad.Close()
	opts.Proxy = bad.URL
	res, err := Replay(context.Background(), spec, opts)
	if err == nil || !strings.Contains(err.Error(), "status 502") {
		t.Fatalf("err %v, want the proxy's 502 named", err)
	}
	if res.Completed != 0 || len(res.Errors) == 0 {
		t.Errorf("completed %d, errors %d", res.Completed, len(res.Errors))
	}
}

func TestOptionsRefuseBadModesAndThresholds(t *testing.T) {
	up := scripted.New(scripted.Script{})
	for _, o := range []Options{
		{Upstream: up},
		{Proxy: "http://x"},
		{Proxy: "http://x", Upstream: up, Modes: []string{"fast"}},
		{Proxy: "http://x", Upstream: up, Thresholds: []float64{1.5}},
		{Proxy: "http://x", Upstream: up, Thresholds: []float64{math.NaN()}},
	} {
		if _, err := Replay(context.Background(), &benchspec.Spec{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestPlanBodiesAndDecoding: the bodies built as the history grows are
// OpenCode-shaped and hold exactly each call's history; the decodings the
// plan keeps for its sent messages are what decoding them again gives.
func TestPlanBodiesAndDecoding(t *testing.T) {
	spec, err := benchspec.Demo()
	if err != nil {
		t.Fatal(err)
	}
	for i := range spec.Sessions[:2] {
		p, err := newPlan(spec, &spec.Sessions[i], APIChat)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range []benchspec.Schedule{benchspec.ScheduleBase, benchspec.ScheduleSwitch} {
			sp := p.sched[sc]
			parts := newBodyParts("m", APIChat)
			for k, c := range sp.calls {
				b := parts.body(sp.messages, 1, len(c.Messages))
				body := append(append([]byte{}, b[0]...), b[1]...)
				var req struct {
					Model    string
					Messages []chat.Message
					Tools    []json.RawMessage
					Stream   bool
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatalf("%s %s call %d: %v", p.sess.ID, sc, k, err)
				}
				if req.Model != "m" || !req.Stream || len(req.Tools) == 0 || len(req.Messages) != len(c.Messages) ||
					req.Messages[len(req.Messages)-1].Content != c.Messages[len(c.Messages)-1].Content {
					t.Fatalf("%s %s call %d: model %q, stream %v, %d tools, %d messages, want %d", p.sess.ID, sc, k, req.Model, req.Stream, len(req.Tools), len(req.Messages), len(c.Messages))
				}
			}
			for raw, f := range sp.known.msgs {
				got := parseForwarded([]byte(`{"messages":[` + raw + `]}`))
				if len(got) != 1 || got[0] != f {
					t.Fatalf("%s %s: kept decoding %+v, decoding again gives %+v", p.sess.ID, sc, f, got)
				}
			}
			if len(sp.keys) != len(sp.messages) {
				t.Fatalf("%d keys for %d messages", len(sp.keys), len(sp.messages))
			}
		}
	}
}

// BenchmarkForwardedDecoding: decoding the forwarded messages of a demo
// session's longest call, all forwarded unchanged (native): from scratch,
// and with the plan's decodings of what it sent.
func BenchmarkForwardedDecoding(b *testing.B) {
	spec, err := benchspec.Demo()
	if err != nil {
		b.Fatal(err)
	}
	p, err := newPlan(spec, &spec.Sessions[0], APIChat)
	if err != nil {
		b.Fatal(err)
	}
	sp := p.sched[benchspec.ScheduleSwitch]
	parts := newBodyParts("m", APIChat)
	body := parts.body(sp.messages, 1, len(sp.calls[len(sp.calls)-1].Messages))
	full := append(append([]byte{}, body[0]...), body[1]...)
	msgs := gjson.GetBytes(full, "messages")
	for _, known := range []map[string]Forwarded{nil, sp.known.msgs} {
		name := "scratch"
		if known != nil {
			name = "known"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msgs.Raw)))
			for b.Loop() {
				parseMessages(msgs, known)
			}
		})
	}
}
