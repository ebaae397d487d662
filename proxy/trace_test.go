package proxy

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rcm-dev/rcm/internal/client/opencode"
	"github.com/rcm-dev/rcm/internal/npm/npmtest"
	"github.com/rcm-dev/rcm/internal/scripted"
)

// The client's trace context, as a traced harness would send it.
const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientParent = "00f067aa0ba902b7"
)

// TestTracesOpenCode runs a two-task session of the real OpenCode client
// through rcm with its OTLP exporter (http/protobuf) pointed at a receiver
// in the test, which decodes the protobuf it is sent. Each model call has
// one span, with the GenAI attributes (model, provider, usage from the
// upstream's answer), rcm's decision (the task, confidence, fallback,
// tokens) and child spans for routing, assembly and the upstream call; the
// client's trace is continued and passed upstream; no message text leaves.
func TestTracesOpenCode(t *testing.T) {
	ctx, bin := npmtest.OpenCode.Prepare(t, 5*time.Minute)

	var rx receiver
	col := httptest.NewServer(http.HandlerFunc(rx.serveHTTP))
	t.Cleanup(col.Close)
	up := scripted.New(ocScript)
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	cfg := Config{Upstream: upSrv.URL + "/v1", DB: filepath.Join(t.TempDir(), "rcm.db"), OTLPEndpoint: col.URL}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	rcm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Traceparent", "00-"+clientTrace+"-"+clientParent+"-01")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		rcm.Close()
		if !closed {
			h.Close()
		}
	})
	srv := ocStart(ctx, t, bin, opencode.Config{Proxy: rcm.URL, APIKey: "sk-client", Modes: []string{"rcm"}})
	dir := t.TempDir()
	s, err := srv.CreateSession(ctx, dir, "two tasks")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"[task: alpha] Please run the greeting tool.", "[task: beta] Now write the note file.", "[task: alpha] Please run the greeting tool once more."} {
		if _, err := srv.Prompt(ctx, s.ID, dir, "rcm", opencode.DefaultModelID, text); err != nil {
			t.Fatalf("%v\nopencode output:\n%s", err, srv.Output())
		}
	}
	srv.Close()
	rcm.Close()
	closed = true
	if err := h.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}

	spans := rx.all()
	var calls []*tracepb.Span
	for _, sp := range spans {
		if sAttr(sp, "rcm.session") == s.ID && sAttr(sp, "rcm.kind") == "agent" {
			calls = append(calls, sp)
		}
	}
	slices.SortFunc(calls, func(a, b *tracepb.Span) int { return int(a.StartTimeUnixNano - b.StartTimeUnixNano) })
	var tasks []string
	for _, sp := range calls {
		tasks = append(tasks, sAttr(sp, "rcm.task"))
	}
	if got := strings.Join(tasks, ","); got != "alpha,alpha,beta,beta,alpha,alpha" {
		t.Fatalf("agent call spans of tasks %s, want one per call, each turn's task (two calls a turn)", got)
	}
	upstream := up.Session(s.ID)
	agents := 0
	for _, r := range upstream {
		if r.Kind == "agent" {
			agents++
		}
	}
	if agents != len(calls) {
		t.Errorf("%d agent spans for %d agent calls upstream", len(calls), agents)
	}
	byID := map[string]*tracepb.Span{}
	for _, sp := range spans {
		byID[hex.EncodeToString(sp.SpanId)] = sp
	}
	sent := map[string]bool{} // the span ids upstream calls named as parent
	for _, r := range upstream {
		tp := strings.Split(r.Header.Get("Traceparent"), "-")
		if len(tp) != 4 || tp[1] != clientTrace {
			t.Fatalf("upstream traceparent %q, want the client's trace", r.Header.Get("Traceparent"))
		}
		sent[tp[2]] = true
	}
	for i, sp := range calls {
		if got := hex.EncodeToString(sp.TraceId); got != clientTrace || hex.EncodeToString(sp.ParentSpanId) != clientParent {
			t.Errorf("call %d: trace %s parent %x, want the client's", i, got, sp.ParentSpanId)
		}
		for _, kv := range []struct{ key, want string }{
			{"gen_ai.operation.name", "chat"}, {"gen_ai.provider.name", "openai"}, {"gen_ai.request.model", opencode.DefaultModelID},
			{"gen_ai.response.model", opencode.DefaultModelID}, {"rcm.mode", "rcm"}, {"rcm.fallback", "none"}, {"gen_ai.conversation.id", s.ID},
			{"server.address", "127.0.0.1"},
		} {
			if got := sAttr(sp, kv.key); got != kv.want {
				t.Errorf("call %d: %s = %q, want %q", i, kv.key, got, kv.want)
			}
		}
		for _, key := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "rcm.tokens.received", "rcm.tokens.forwarded"} {
			if iAttr(sp, key) <= 0 {
				t.Errorf("call %d: %s = %d", i, key, iAttr(sp, key))
			}
		}
		if iAttr(sp, "http.response.status_code") != 200 || fAttr(sp, "rcm.confidence") != 1 {
			t.Errorf("call %d: status %d confidence %v", i, iAttr(sp, "http.response.status_code"), fAttr(sp, "rcm.confidence"))
		}
		if _, ok := attr(sp, "gen_ai.usage.cache_read.input_tokens"); !ok {
			t.Errorf("call %d: no cached tokens", i)
		}
		children := map[string]*tracepb.Span{}
		for _, c := range spans {
			if bytes.Equal(c.ParentSpanId, sp.SpanId) {
				children[c.Name] = c
			}
		}
		up, asm := children["POST"], children["rcm.assemble"]
		if up == nil || asm == nil || !sent[hex.EncodeToString(up.SpanId)] {
			t.Fatalf("call %d: children %v; the upstream's traceparent must name the upstream span", i, children)
		}
		if fAttr(up, "gen_ai.response.time_to_first_chunk") <= 0 || up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("call %d: upstream span %v", i, up.Attributes)
		}
		route := false
		for _, c := range spans {
			route = route || c.Name == "rcm.route" && bytes.Equal(c.ParentSpanId, asm.SpanId)
		}
		if !route {
			t.Errorf("call %d: no routing span under the assembly", i)
		}
	}
	// The third turn's call is the returning task's: it carries its record.
	if iAttr(calls[4], "rcm.record.bytes") == 0 {
		t.Errorf("the returning task's call has no record bytes")
	}
	for _, sp := range spans {
		for _, a := range sp.Attributes {
			if v := a.Value.GetStringValue(); strings.Contains(v, "greeting") || strings.Contains(v, "note file") {
				t.Errorf("span %s exports message text in %s: %q", sp.Name, a.Key, v)
			}
		}
	}
}

// TestTracesGRPC: with OTEL_EXPORTER_OTLP_PROTOCOL's grpc, a call's span
// reaches a gRPC receiver, continuing the client's trace.
func TestTracesGRPC(t *testing.T) {
	var rx receiver
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collector.RegisterTraceServiceServer(gs, &rx)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	srv, h := setup(t, &recorder{}, func(c *Config) {
		c.OTLPEndpoint, c.OTLPProtocol = "http://"+ln.Addr().String(), ProtocolGRPC
	})
	body, hdr, path := load(t, "continue_request")
	hdr = hdr.Clone()
	hdr.Set("Traceparent", "00-"+clientTrace+"-"+clientParent+"-01")
	resp := post(t, srv.URL+path, body, hdr)
	io.Copy(io.Discard, resp.Body)
	h.after.Wait()
	if err := h.tracing.provider.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var call *tracepb.Span
	for _, sp := range rx.all() {
		if sAttr(sp, "gen_ai.operation.name") == "chat" {
			call = sp
		}
	}
	if call == nil || hex.EncodeToString(call.TraceId) != clientTrace || sAttr(call, "rcm.session") != resp.Header.Get(HeaderSession) {
		t.Fatalf("call span %v", call)
	}
}

// TestTracesWebSocket: each response of Codex's WebSocket connection is a
// model call with its span, continuing the handshake's traceparent, with
// the usage its response.completed event reports.
func TestTracesWebSocket(t *testing.T) {
	var rx receiver
	col := httptest.NewServer(http.HandlerFunc(rx.serveHTTP))
	t.Cleanup(col.Close)
	u := &wsUpstream{}
	srv, h := setup(t, u, func(c *Config) { c.Mode, c.OTLPEndpoint = RCM, col.URL })
	hdr := http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientParent + "-01"}}
	c, _, err := dialCodexWith(t, srv.URL, hdr)
	if err != nil {
		t.Fatal(err)
	}
	pre, _, _ := codexPreamble(t)
	c.send(frameOf(t, append(pre, userItem(switchRequests[0]))...), false)
	c.send(frameOf(t, userItem(switchRequests[1])), true)
	c.c.Close()
	h.after.Wait()
	if err := h.tracing.provider.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var calls []*tracepb.Span
	for _, sp := range rx.all() {
		if sAttr(sp, "gen_ai.operation.name") == "chat" {
			calls = append(calls, sp)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d call spans, want one per response", len(calls))
	}
	for i, sp := range calls {
		if hex.EncodeToString(sp.TraceId) != clientTrace || iAttr(sp, "gen_ai.usage.input_tokens") != 10 || iAttr(sp, "gen_ai.usage.output_tokens") != 1 ||
			sAttr(sp, "rcm.format") != "openai-responses" || sAttr(sp, "rcm.mode") != "rcm" {
			t.Errorf("call %d: trace %x, attributes %v", i, sp.TraceId, sp.Attributes)
		}
		// The exchange with the upstream: the response's frame and the
		// events answering it, timed to its first event.
		var up *tracepb.Span
		for _, o := range rx.all() {
			if bytes.Equal(o.ParentSpanId, sp.SpanId) && o.Name == "response.create" {
				up = o
			}
		}
		if up == nil || up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("call %d: no upstream span of kind client: %v", i, up)
		} else if !hasAttr(up, "gen_ai.response.time_to_first_chunk") {
			t.Errorf("call %d: upstream span without its time to the first event: %v", i, up.Attributes)
		}
	}
	// And in the histograms of what rcm adds and of the time to first byte.
	body := string(metricsText(t, srv.URL))
	for _, series := range []string{`rcm_added_latency_seconds_count{mode="rcm"} 2`, `rcm_upstream_ttfb_seconds_count{mode="rcm"} 2`} {
		if !strings.Contains(body, series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}

func hasAttr(sp *tracepb.Span, key string) bool {
	for _, kv := range sp.Attributes {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// receiver is an OTLP trace receiver over HTTP (protobuf) and gRPC.
type receiver struct {
	collector.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (rx *receiver) serveHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req collector.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	rx.Export(r.Context(), &req)
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Write(out)
}

func (rx *receiver) Export(_ context.Context, req *collector.ExportTraceServiceRequest) (*collector.ExportTraceServiceResponse, error) {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rx.spans = append(rx.spans, ss.Spans...)
		}
	}
	return &collector.ExportTraceServiceResponse{}, nil
}

func (rx *receiver) all() []*tracepb.Span {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	return slices.Clone(rx.spans)
}

func attr(sp *tracepb.Span, key string) (*common.AnyValue, bool) {
	for _, a := range sp.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return nil, false
}

func sAttr(sp *tracepb.Span, key string) string {
	v, _ := attr(sp, key)
	return v.GetStringValue()
}

func iAttr(sp *tracepb.Span, key string) int64 {
	v, _ := attr(sp, key)
	return v.GetIntValue()
}

func fAttr(sp *tracepb.Span, key string) float64 {
	v, _ := attr(sp, key)
	return v.GetDoubleValue()
}
