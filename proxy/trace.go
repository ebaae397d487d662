package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rcm-dev/rcm/transcript"
)

// OTLP protocols of Config.OTLPProtocol, as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	ProtocolHTTP = "http/protobuf" // the default, as the OpenTelemetry spec has it
	ProtocolGRPC = "grpc"
)

// tracing exports a span per model call over OTLP. Its spans carry sizes,
// decisions and usage, never message contents.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// propagator reads the client's traceparent and writes rcm's upstream.
var propagator = propagation.TraceContext{}

// newTracing returns the exporter of cfg's OTLP endpoint, nil without one.
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the process (the
// service is "rcm" otherwise), and the SDK reads its other OTEL_ variables
// (sampler, batch sizes) itself.
func newTracing(cfg *Config) (*tracing, error) {
	if cfg.OTLPEndpoint == "" {
		return nil, nil
	}
	ctx := context.Background()
	var exp sdktrace.SpanExporter
	var err error
	switch cfg.OTLPProtocol {
	case "", ProtocolHTTP:
		// Like OTEL_EXPORTER_OTLP_ENDPOINT, the endpoint is the base the
		// signal's path goes below.
		var u string
		if u, err = url.JoinPath(cfg.OTLPEndpoint, "v1/traces"); err == nil {
			exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u))
		}
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
	default:
		return nil, fmt.Errorf("otlp-protocol %q: want %s or %s", cfg.OTLPProtocol, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", cfg.OTLPEndpoint, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("rcm")), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{provider: tp, tracer: tp.Tracer("github.com/rcm-dev/rcm/proxy")}, nil
}

// close sends the spans still batched (within ctx).
func (t *tracing) close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// callTrace is a model call's span, open from its request's arrival to
// its answer's end, and the upstream call's.
type callTrace struct {
	ctx      context.Context // with the call's span
	span     trace.Span
	upstream trace.Span
	meter    *transcript.Meter // the answer's model and usage
	server   string            // the upstream's host, port
	port     int
}

// startTrace opens the call's span, continuing the client's traceparent
// (the span's start is the request's arrival).
func (h *Handler) startTrace(r *http.Request, a *assembly, format transcript.Format, path string, body []byte) {
	if h.tracing == nil {
		return
	}
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	provider := semconv.GenAIProviderNameOpenAI
	target := h.target
	if anthropic(path) {
		provider, target = semconv.GenAIProviderNameAnthropic, h.anthropicTarget
	}
	model := transcript.RequestModel(body)
	name := "chat"
	if model != "" {
		name += " " + model
	}
	ct := &callTrace{server: target.Hostname()}
	ct.port, _ = strconv.Atoi(target.Port())
	if ct.port == 0 {
		ct.port = map[string]int{"http": 80, "https": 443}[target.Scheme]
	}
	ct.ctx, ct.span = h.tracing.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(a.clock.in),
		trace.WithAttributes(semconv.GenAIOperationNameChat, provider, semconv.GenAIRequestModel(model),
			semconv.ServerAddress(ct.server), semconv.ServerPort(ct.port), attribute.String("rcm.format", format.String())))
	a.trace = ct
}

// traceUpstream opens the upstream call's span and hands its context to
// the upstream in r's traceparent (r's headers are the upstream request's).
func (h *Handler) traceUpstream(r *http.Request, a *assembly) {
	if ctx := h.openUpstream(a, "POST", semconv.HTTPRequestMethodPost); ctx != nil {
		r.Header.Del("tracestate")
		propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	}
}

// openUpstream opens the span of the call's exchange with the upstream,
// named name, and returns its context (nil for an untraced call). A
// WebSocket response's exchange is its frame and the events that answer
// it, and its frame carries no traceparent.
func (h *Handler) openUpstream(a *assembly, name string, attrs ...attribute.KeyValue) context.Context {
	ct := a.trace
	if ct == nil {
		return nil
	}
	var ctx context.Context
	ctx, ct.upstream = h.tracing.tracer.Start(ct.ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, semconv.ServerAddress(ct.server), semconv.ServerPort(ct.port))...))
	return ctx
}

// tee returns the writer that receives a copy of the answer: the memory
// observer's in rcm mode, the meter of a traced call; nil for neither.
func (a *assembly) tee(sse bool) io.Writer {
	var ws []io.Writer
	if a.mode == RCM {
		// Only rcm mode learns from answers (task records, summaries).
		ws = append(ws, a.response())
	}
	if a.trace != nil {
		a.trace.meter = transcript.NewMeter(sse)
		ws = append(ws, a.trace.meter)
	}
	switch len(ws) {
	case 0:
		return nil
	case 1:
		return ws[0]
	}
	return io.MultiWriter(ws...)
}

// endTrace closes the call's spans once its answer is over: the upstream
// call's, the routing's and the assembly's (timed by the call's clock),
// then the call's with what rcm decided and the upstream's usage.
func (h *Handler) endTrace(a *assembly) {
	ct := a.trace
	if ct == nil {
		return
	}
	now := time.Now()
	errType := ""
	switch {
	case a.status == 0:
		errType = semconv.ErrorTypeOther.Value.AsString() // no answer: rcm answered 502 or 504
	case a.status >= 400:
		errType = strconv.Itoa(a.status)
	case !a.complete:
		errType = "aborted" // the upstream broke off or the client left
	}
	var answer []attribute.KeyValue
	if a.status != 0 {
		answer = append(answer, semconv.HTTPResponseStatusCode(a.status))
	}
	if out, ok := a.clock.at(&a.clock.out); ok {
		if first, ok := a.clock.at(&a.clock.first); ok {
			answer = append(answer, semconv.GenAIResponseTimeToFirstChunk(first.Sub(out).Seconds()))
		}
	}
	if errType != "" {
		answer = append(answer, semconv.ErrorTypeKey.String(errType))
	}
	if ct.upstream != nil {
		ct.upstream.SetAttributes(answer...)
		if errType != "" {
			ct.upstream.SetStatus(codes.Error, errType)
		}
		ct.upstream.End(trace.WithTimestamp(now))
	}
	if !a.clock.assembled.IsZero() {
		_, s := h.tracing.tracer.Start(ct.ctx, "rcm.assemble", trace.WithTimestamp(a.clock.in))
		if !a.clock.routed.IsZero() {
			_, r := h.tracing.tracer.Start(trace.ContextWithSpan(ct.ctx, s), "rcm.route", trace.WithTimestamp(a.clock.route))
			r.End(trace.WithTimestamp(a.clock.routed))
		}
		s.End(trace.WithTimestamp(a.clock.assembled))
	}
	attrs := append(answer,
		attribute.String("rcm.mode", string(a.mode)), attribute.String("rcm.kind", a.kind()), attribute.String("rcm.fallback", a.fallback),
		attribute.Int("rcm.tokens.received", a.tokensIn), attribute.Int("rcm.tokens.forwarded", a.tokensOut),
		attribute.Int("rcm.record.bytes", len(a.injected)))
	if a.session != "" {
		attrs = append(attrs, attribute.String("rcm.session", a.session), semconv.GenAIConversationID(a.session))
	}
	if a.routed {
		attrs = append(attrs, attribute.String("rcm.task", a.task), attribute.Float64("rcm.confidence", a.confidence), attribute.String("rcm.method", a.method))
	}
	if a.plan != nil && a.plan.Usage.Calls > 0 {
		attrs = append(attrs, attribute.Int("rcm.router.calls", a.plan.Usage.Calls), attribute.Int("rcm.router.errors", a.plan.Usage.Errors))
	}
	if m := ct.meter; m != nil {
		m.Close()
		if m.Model != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(m.Model))
		}
		u := m.Usage
		if u != (transcript.Usage{}) {
			attrs = append(attrs, semconv.GenAIUsageInputTokens(int(u.Input)), semconv.GenAIUsageOutputTokens(int(u.Output)),
				semconv.GenAIUsageCacheReadInputTokens(int(u.Cached)), semconv.GenAIUsageCacheCreationInputTokens(int(u.Written)))
		}
	}
	ct.span.SetAttributes(attrs...)
	if errType != "" {
		ct.span.SetStatus(codes.Error, errType)
	}
	ct.span.End(trace.WithTimestamp(now))
}
