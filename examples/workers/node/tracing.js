// OpenTelemetry for the worker: one span per task attempt, the child of
// the invocation's W3C traceparent header (the dispatcher step that
// invoked it), exported over OTLP/HTTP with OpenTelemetry's official JS
// packages. It is off unless the standard OTEL_* variables ask for it, by
// the same rules as the jetflow binary (tracing/provider.Enabled); off,
// no OpenTelemetry module is even loaded. docs/OBSERVABILITY.md describes
// the span; its names and attributes are the Go SDK's.

import process from "node:process";
import { pathToFileURL } from "node:url";

// The attempt span's name, as the Go SDK's tracing.SpanAttempt.
export const SPAN_ATTEMPT = "jetflow.task.attempt";

// The resource's service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES name one.
export const DEFAULT_SERVICE_NAME = "jetflow-worker-node";

// How long a stopping worker waits for its spans to be exported.
const SHUTDOWN_MS = 5000;

// tracingEnabled reports whether the OTEL_* variables of env ask for
// traces, and throws for settings the worker cannot honour, exactly as
// tracing/provider.Enabled does for the Go side:
//   - OTEL_SDK_DISABLED=true (any case): off;
//   - OTEL_TRACES_EXPORTER: "none" off, "otlp" on, anything else refused;
//     unset, on when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
//     only http/protobuf (the default) is supported.
// An empty value counts as unset.
export function tracingEnabled(env) {
  const get = (name) => env[name] ?? "";
  if (get("OTEL_SDK_DISABLED").trim().toLowerCase() === "true") return false;
  let on = get("OTEL_EXPORTER_OTLP_ENDPOINT") !== "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== "";
  const exporter = get("OTEL_TRACES_EXPORTER").trim();
  if (exporter === "none") return false;
  if (exporter === "otlp") on = true;
  else if (exporter !== "") {
    throw new Error(`OTEL_TRACES_EXPORTER=${JSON.stringify(exporter)}: jetflow exports traces with otlp (or none); unset it or set otlp`);
  }
  if (!on) return false;
  let name = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL";
  let proto = get(name);
  if (proto === "") {
    name = "OTEL_EXPORTER_OTLP_PROTOCOL";
    proto = get(name);
  }
  if (proto !== "" && proto !== "http/protobuf") {
    throw new Error(
      `${name}=${JSON.stringify(proto)}: jetflow exports OTLP over http/protobuf only (a collector's OTLP/HTTP port is 4318); unset it or set http/protobuf`,
    );
  }
  return true;
}

// NATS headers as OpenTelemetry's text-map getter and a plain object as
// its setter. NATS returns "" for a missing header.
const natsGetter = {
  get: (h, key) => (h && h.get(key)) || undefined,
  keys: (h) => (h ? h.keys() : []),
};
const objectSetter = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

// startTracing returns null when env leaves tracing off, else a Tracing
// whose provider batches spans to the OTLP/HTTP endpoint the OTEL_*
// variables name (OTEL_EXPORTER_OTLP_*, OTEL_BSP_*, OTEL_TRACES_SAMPLER*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the SDK reads them). log
// receives the SDK's own warnings and errors (an unreachable collector).
export async function startTracing(env, log) {
  if (!tracingEnabled(env)) return null;
  const api = await import("@opentelemetry/api");
  const { W3CTraceContextPropagator } = await import("@opentelemetry/core");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } = await import("@opentelemetry/resources");

  const diag = (level) => (msg, ...args) => log(level, `opentelemetry: ${msg}`, args.length ? { detail: args.map(String).join(" ") } : {});
  api.diag.setLogger({ error: diag("error"), warn: diag("warn"), info: () => {}, debug: () => {}, verbose: () => {} }, api.DiagLogLevel.WARN);

  // Later resources win: the environment overrides the default name.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  api.trace.setGlobalTracerProvider(provider);
  const propagator = new W3CTraceContextPropagator();
  api.propagation.setGlobalPropagator(propagator);
  return new Tracing(api, provider, provider.getTracer("github.com/jetflow/jetflow"), propagator);
}

class Tracing {
  constructor(api, provider, tracer, propagator) {
    this.api = api;
    this.provider = provider;
    this.tracer = tracer;
    this.propagator = propagator;
  }

  // startAttempt starts the span of one attempt of inv, the child of the
  // span hdrs' traceparent names (a new trace without one), with the
  // attributes of the Go SDK's attempt span. It returns what worker.js
  // needs: the span, the context holding it (for spans a task starts), and
  // the traceparent and tracestate the result carries back.
  startAttempt(hdrs, inv, delivery) {
    const { api } = this;
    const parent = this.propagator.extract(api.ROOT_CONTEXT, hdrs, natsGetter);
    const span = this.tracer.startSpan(
      SPAN_ATTEMPT,
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          "jetflow.run_id": inv.run,
          "jetflow.task": inv.task,
          "jetflow.task.version": inv.version,
          "jetflow.activation": inv.activation,
          "jetflow.node": inv.node,
          "jetflow.attempt": inv.attempt,
          "jetflow.input.delivery": delivery,
          "jetflow.state": typeof inv.state === "string" ? inv.state : "",
        },
      },
      parent,
    );
    const context = api.trace.setSpan(parent, span);
    const out = {};
    this.propagator.inject(context, out, objectSetter);
    const sc = span.spanContext();
    const parentId = api.trace.getSpanContext(parent)?.spanId ?? "";
    return {
      span,
      context,
      traceparent: out.traceparent,
      tracestate: out.tracestate || "",
      traceId: sc.traceId,
      spanId: sc.spanId,
      parentId,
    };
  }

  // endAttempt ends an attempt's span as the Go SDK does: a failed
  // attempt is an error with its message, jetflow.error.code when the
  // error has a code and jetflow.non_retryable; handedBack, when set, is
  // the reason the attempt was given back (a jetflow.handed_back event).
  endAttempt(span, failure, handedBack) {
    if (failure) {
      const { error, thrown } = failure;
      if (error.code) span.setAttribute("jetflow.error.code", error.code);
      span.setAttribute("jetflow.non_retryable", Boolean(error.nonRetryable));
      if (thrown instanceof Error) span.recordException(thrown);
      else span.recordException({ name: "Error", message: error.message });
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error.message });
    }
    if (handedBack) span.addEvent("jetflow.handed_back", { "jetflow.reason": handedBack });
    span.end();
  }

  // shutdown exports what the provider holds, for at most 5 s, and
  // reports whether it all went out.
  async shutdown() {
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(false), SHUTDOWN_MS);
    });
    try {
      const done = this.provider.shutdown().then(
        () => true,
        () => false, // the SDK has logged why through diag
      );
      return await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

// `node tracing.js` prints whether the environment turns tracing on
// (true or false), or why it is refused (exit status 2), as the worker
// would decide at start.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    process.stdout.write(`${tracingEnabled(process.env)}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}
