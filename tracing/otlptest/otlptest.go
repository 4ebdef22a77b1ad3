// Package otlptest is a real OTLP/HTTP trace receiver for tests: it
// serves /v1/traces on a loopback port, decodes the protobuf requests
// exporters send, as a collector does, and keeps the spans for the test
// to inspect.
package otlptest

import (
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/HTTP trace receiver: it accepts what an exporter
// POSTs to /v1/traces (protobuf ExportTraceServiceRequest) and keeps the
// spans, as a collector's OTLP receiver does.
type Receiver struct {
	// URL is what OTEL_EXPORTER_OTLP_ENDPOINT should say.
	URL   string
	mu    sync.Mutex
	spans []Span
}

// Span is one received span in the terms tests compare: ids in hex,
// attribute values as text.
type Span struct {
	Service  string
	TraceID  string
	SpanID   string
	ParentID string
	Name     string
	Kind     tracepb.Span_SpanKind
	Attrs    map[string]string
	Events   []string
	Links    []string // span ids
	Error    bool
}

// Start starts a receiver on a loopback port, closed when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "want application/x-protobuf, got "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, convert(service, s))
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func convert(service string, s *tracepb.Span) Span {
	sp := Span{
		Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
		ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(),
		Attrs: attrs(s.GetAttributes()), Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
	}
	for _, e := range s.GetEvents() {
		sp.Events = append(sp.Events, e.GetName())
	}
	for _, l := range s.GetLinks() {
		sp.Links = append(sp.Links, hex.EncodeToString(l.GetSpanId()))
	}
	return sp
}

// attrs renders attribute values as text (ints in decimal).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

// Of returns the spans received so far whose attribute jetflow.run_id is
// runID.
func (r *Receiver) Of(runID string) []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, s := range r.spans {
		if s.Attrs["jetflow.run_id"] == runID {
			out = append(out, s)
		}
	}
	return out
}
