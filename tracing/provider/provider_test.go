package provider_test

import (
	"strings"
	"testing"

	"github.com/jetflow/jetflow/tracing/provider"
)

var enabledCases = []struct {
	name string
	env  map[string]string
	on   bool
	err  string // part of the refusal, "" for none
}{
	{"nothing set", nil, false, ""},
	{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
	{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true, ""},
	{"exporter otlp without endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
	{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
	{"sdk disabled wins", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
	{"sdk disabled false", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
	{"zipkin refused", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER=\"zipkin\""},
	{"grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\""},
	{"traces protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
	{"grpc ignored when off", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, ""},
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, c := range enabledCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			on, err := provider.Enabled(func(k string) string { return c.env[k] })
			if on != c.on || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("Enabled(%v) = %v, %v; want %v and an error naming %q", c.env, on, err, c.on, c.err)
			}
		})
	}
}

// FuzzEnabled: any values decide without panicking, and a refusal is
// never "on".
func FuzzEnabled(f *testing.F) {
	for _, c := range enabledCases {
		f.Add(c.env["OTEL_SDK_DISABLED"], c.env["OTEL_TRACES_EXPORTER"], c.env["OTEL_EXPORTER_OTLP_ENDPOINT"], c.env["OTEL_EXPORTER_OTLP_PROTOCOL"])
	}
	f.Fuzz(func(t *testing.T, disabled, exporter, endpoint, protocol string) {
		env := map[string]string{"OTEL_SDK_DISABLED": disabled, "OTEL_TRACES_EXPORTER": exporter, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
		on, err := provider.Enabled(func(k string) string { return env[k] })
		if err != nil && on {
			t.Errorf("%v: on and refused", env)
		}
	})
}
