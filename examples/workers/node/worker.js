// A jetflow worker in Node.js, written from docs/PROTOCOL.md alone (section
// numbers below refer to it). It serves the task versions of tasks.js:
// binds each one's durable consumer, pulls only as many invocations as it
// can start, heartbeats while a task runs, publishes the result with a
// de-duplication id, acknowledges after the PubAck, and drains on SIGTERM
// or SIGINT.
//
// Configuration (environment):
//   JETFLOW_NATS_URL or NATS_URL  server URLs, comma-separated (default nats://127.0.0.1:4222)
//   JETFLOW_PREFIX                deployment prefix (default jetflow)
//   JETFLOW_TASKS                 task versions to serve, e.g. "check-stock@1,ship@1" (default: all of tasks.js)
//   JETFLOW_CONCURRENCY           invocations of one task version running at once (default 4)
//   JETFLOW_PULL_EXPIRES_MS       how long one pull waits on the server, >= 1000 (default 2000)
//   JETFLOW_GRACE_MS              how long a shutdown waits for running tasks (default 10000)
//   JETFLOW_READY_FILE            a file written once every consumer is bound (for health checks)
//   JETFLOW_SIMULATED_WORK_MS     every task first sleeps this long, to watch heartbeats and draining (default 0)
//   JETFLOW_PAYLOAD_THRESHOLD     a result larger than this many bytes travels by reference (default 524288; PROTOCOL.md 2.4)
//   OTEL_*                        traces: one span per task attempt, off unless these ask for it (tracing.js, README.md)

import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import process from "node:process";
import { connect, headers } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError } from "@nats-io/jetstream";
import { BadReference, Payloads } from "./payload.js";
import { tasks, TaskError } from "./tasks.js";
import { startTracing } from "./tracing.js";

// Section 2.1: names are refused, never escaped.
const TOKEN = /^[A-Za-z0-9_-]{1,128}$/;
const VERSION = /^[A-Za-z0-9_.+-]{1,64}$/;
const versionToken = (v) => v.replaceAll(".", "~");

// Error codes of section 5.1 and 5.6.
const CONSUMER_NOT_FOUND = 10014;
const STREAM_NOT_FOUND = 10059;
const MESSAGE_TOO_LARGE = 10054;

function log(level, msg, attrs = {}) {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...attrs }) + "\n");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// simulateWork sleeps ms, or rejects as soon as signal aborts.
function simulateWork(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      reject(new Error("cancelled"));
    });
  });
}

function intEnv(name, def, min) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`${name}=${JSON.stringify(raw)}: want an integer >= ${min}`);
  }
  return n;
}

function readConfig() {
  const prefix = process.env.JETFLOW_PREFIX || "jetflow";
  if (!TOKEN.test(prefix)) {
    throw new Error(`JETFLOW_PREFIX=${JSON.stringify(prefix)}: use 1-128 letters, digits, '_' or '-'`);
  }
  const list = process.env.JETFLOW_TASKS ? process.env.JETFLOW_TASKS.split(",") : Object.keys(tasks);
  const serve = list.map((item) => {
    const spec = item.trim();
    const at = spec.lastIndexOf("@");
    const task = spec.slice(0, at);
    const version = spec.slice(at + 1);
    if (at < 0 || !TOKEN.test(task) || !VERSION.test(version)) {
      throw new Error(`JETFLOW_TASKS entry ${JSON.stringify(spec)}: want NAME@VERSION, such as notify@1`);
    }
    if (!(spec in tasks)) {
      throw new Error(`JETFLOW_TASKS entry ${spec}: tasks.js has no handler for it (it has ${Object.keys(tasks).join(", ")})`);
    }
    return { task, version, handler: tasks[spec] };
  });
  const url = process.env.JETFLOW_NATS_URL || process.env.NATS_URL || "nats://127.0.0.1:4222";
  return {
    servers: url.split(",").map((s) => s.trim()).filter(Boolean),
    prefix,
    serve,
    concurrency: intEnv("JETFLOW_CONCURRENCY", 4, 1),
    pullMs: intEnv("JETFLOW_PULL_EXPIRES_MS", 2000, 1000),
    graceMs: intEnv("JETFLOW_GRACE_MS", 10000, 0),
    readyFile: process.env.JETFLOW_READY_FILE || "",
    workMs: intEnv("JETFLOW_SIMULATED_WORK_MS", 0, 0),
    payloadThreshold: intEnv("JETFLOW_PAYLOAD_THRESHOLD", 512 * 1024, 1),
  };
}

// W3C trace context (https://www.w3.org/TR/trace-context/). An attempt
// continues the trace of the invocation's traceparent header as a child
// span; the result carries that span's traceparent back, so the
// dispatcher links its step to the attempt, and the handler gets it
// (args.traceparent) to pass to whatever it calls. With tracing on
// (tracing.js) the child is an exported OpenTelemetry span; off, it is
// only an id, made here by hand, and nothing is exported.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZEROS = /^0+$/;

function childTrace(parent, state) {
  const m = TRACEPARENT.exec(parent || "");
  if (!m || ZEROS.test(m[1]) || ZEROS.test(m[2])) return null;
  let span;
  do span = randomBytes(8).toString("hex");
  while (ZEROS.test(span));
  return { traceparent: `00-${m[1]}-${span}-${m[3]}`, tracestate: state || "", traceId: m[1], spanId: span, parentId: m[2] };
}

class Malformed extends Error {}

// Section 5.3: check an invocation before running anything.
function parseInvocation(text, prefix, task, version) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Malformed(`malformed invocation: body is not JSON (${err.message})`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw new Malformed("malformed invocation: body is not a JSON object");
  }
  if (typeof v.run !== "string" || !TOKEN.test(v.run)) {
    throw new Malformed(`malformed invocation: run ${JSON.stringify(v.run)} is not a run id`);
  }
  for (const field of ["activation", "node", "token"]) {
    if (typeof v[field] !== "string" || v[field] === "") {
      throw new Malformed(`malformed invocation: ${field} is missing`);
    }
  }
  if (v.task !== task || v.version !== version) {
    throw new Malformed(`malformed invocation: it names ${v.task}@${v.version} but was delivered for ${task}@${version}`);
  }
  if (!Number.isInteger(v.attempt) || v.attempt < 1) {
    throw new Malformed(`malformed invocation: attempt ${JSON.stringify(v.attempt)} is not an integer >= 1`);
  }
  const want = `${prefix}.in.${v.run}.result`;
  if (v.reply !== want) {
    throw new Malformed(`malformed invocation: reply ${JSON.stringify(v.reply)} is not ${want}`);
  }
  if (!("input" in v)) v.input = null;
  return v;
}

// errorMessage is never empty (section 5.6): the thrown value's message,
// else a thrown string or number itself, else its name, else "task failed".
function errorMessage(err) {
  const text = (v) => (typeof v === "string" && v.trim() !== "" ? v : "");
  try {
    if ((typeof err === "object" && err !== null) || typeof err === "function") {
      return text(err.message) || text(err.name) || "task failed";
    }
    return err === undefined || err === null ? "task failed" : text(String(err)) || "task failed";
  } catch {
    return "task failed"; // a getter or a proxy that throws
  }
}

function wireError(err) {
  const e = { message: errorMessage(err) };
  if (err instanceof TaskError) {
    if (typeof err.code === "string" && err.code !== "") e.code = err.code;
    if (err.nonRetryable) e.nonRetryable = true;
    // retryAfterMs: retry after this delay instead of the policy's
    // backoff; closeTask: also close the task version for as long.
    if (Number.isFinite(err.retryAfterMs) && err.retryAfterMs > 0) {
      e.retryAfterMs = err.retryAfterMs;
      if (err.closeTask) e.closeTask = true;
    }
  }
  return e;
}

// resultBody is the result of section 5.6, which carries exactly one of
// output and error. JSON.stringify drops a member whose value JSON cannot
// hold (undefined, a function, a symbol) and would send neither, so such
// an output goes out as an explicit null; an output JSON.stringify refuses
// (a BigInt, a cycle) fails the attempt for good.
function resultBody(envelope, result) {
  if (result.error !== undefined) return JSON.stringify({ ...envelope, error: result.error });
  let output;
  try {
    output = JSON.stringify(result.output);
  } catch (err) {
    const error = { message: `task output is not JSON: ${errorMessage(err)}`, nonRetryable: true };
    return JSON.stringify({ ...envelope, error });
  }
  return JSON.stringify({ ...envelope, output: output === undefined ? null : JSON.parse(output) });
}

class Worker {
  constructor(cfg, nc, js, jsm, tracing) {
    this.cfg = cfg;
    this.tracing = tracing; // null when tracing is off
    this.nc = nc;
    this.js = js;
    this.payloads = new Payloads(cfg.prefix, js, jsm, cfg.payloadThreshold);
    this.stopping = false;
    this.running = new Set(); // one entry per invocation being handled
    this.aborts = new Set(); // cancels the handlers still running at the end of a shutdown
    this.changed = null; // resolves when an invocation ends
    this.bound = 0;
  }

  notifyChange() {
    if (this.changed) {
      this.changed.resolve();
      this.changed = null;
    }
  }

  waitChange(ms) {
    if (!this.changed) {
      let resolve;
      const promise = new Promise((r) => (resolve = r));
      this.changed = { promise, resolve };
    }
    return Promise.race([this.changed.promise, sleep(ms)]);
  }

  // Section 5.1: bind by name, never create; retry while it is missing.
  async bind(task, version) {
    const stream = `${this.cfg.prefix}_tasks`;
    const durable = `task_${task}_${versionToken(version)}`;
    let delay = 250;
    while (!this.stopping) {
      try {
        const consumer = await this.js.consumers.get(stream, durable);
        const info = await consumer.info(true);
        return { consumer, ackWaitMs: info.config.ack_wait / 1e6 };
      } catch (err) {
        const code = err instanceof JetStreamApiError ? err.code : undefined;
        if (code === CONSUMER_NOT_FOUND || code === STREAM_NOT_FOUND) {
          log("warn", "consumer not found; waiting for a deploy to create it", { stream, consumer: durable });
        } else {
          log("error", "binding the consumer failed", { stream, consumer: durable, error: String(err) });
        }
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
    return null;
  }

  async serve({ task, version, handler }) {
    let bound = await this.bind(task, version);
    if (!bound) return;
    this.bound++;
    log("info", "serving", { task, version, ack_wait_ms: bound.ackWaitMs });
    if (this.bound === this.cfg.serve.length && this.cfg.readyFile) {
      writeFileSync(this.cfg.readyFile, "ready\n");
    }
    const mine = new Set();
    let failingSince = 0; // when pulls began to fail, 0 while they work
    // A pull went through again: say the worker recovered, and after how long.
    const recovered = () => {
      if (!failingSince) return;
      log("info", "serving again", { task, version, down_ms: Date.now() - failingSince });
      failingSince = 0;
    };
    while (!this.stopping) {
      // Section 5.2: never pull more than can start now.
      const free = this.cfg.concurrency - mine.size;
      if (free <= 0) {
        await this.waitChange(this.cfg.pullMs);
        continue;
      }
      try {
        const msgs = await bound.consumer.fetch({ max_messages: free, expires: this.cfg.pullMs });
        for await (const m of msgs) {
          recovered();
          const p = this.handle(m, task, version, handler, bound.ackWaitMs)
            .catch((err) => log("error", "handling an invocation failed", { task, version, error: String(err) }))
            .finally(() => {
              mine.delete(p);
              this.running.delete(p);
              this.notifyChange();
            });
          mine.add(p);
          this.running.add(p);
        }
        recovered();
      } catch (err) {
        if (!failingSince) failingSince = Date.now();
        log("warn", "pull failed; binding again", { task, version, error: String(err) });
        await sleep(1000);
        bound = (await this.bind(task, version)) || bound;
      }
    }
  }

  async handle(m, task, version, handler, ackWaitMs) {
    let inv;
    let data;
    try {
      // Section 2.4: an invocation by reference is read from the bucket.
      data = await this.payloads.body(m);
    } catch (err) {
      if (err instanceof BadReference) {
        // Its token is in the body: no result can answer it.
        log("error", "terminating an invocation whose payload reference is bad", { subject: m.subject, stream_seq: m.seq, reason: err.message });
        m.term(err.message);
      } else {
        log("warn", "reading an invocation from the payload bucket failed; handed back", { subject: m.subject, stream_seq: m.seq, error: String(err) });
        m.nak(this.cfg.pullMs + 1000);
      }
      return;
    }
    try {
      inv = parseInvocation(new TextDecoder().decode(data), this.cfg.prefix, task, version);
    } catch (err) {
      // Section 5.7: terminate, log, keep serving; never run it.
      log("error", "terminating a malformed invocation", { subject: m.subject, stream_seq: m.seq, reason: err.message });
      m.term(err.message);
      return;
    }
    const delivery = m.info.deliveryCount;
    const trace = this.tracing
      ? this.tracing.startAttempt(m.headers, inv, delivery)
      : childTrace(m.headers?.get("traceparent"), m.headers?.get("tracestate"));
    // Ends the attempt's span (with tracing on): failure is the run's
    // {error, thrown}, handedBack why the invocation was given back.
    const endSpan = (failure, handedBack) => {
      if (trace?.span) this.tracing.endAttempt(trace.span, failure, handedBack);
    };
    const attrs = { run_id: inv.run, task, version, activation: inv.activation, node: inv.node, attempt: inv.attempt };
    if (trace) Object.assign(attrs, { trace_id: trace.traceId, span_id: trace.spanId, parent_span_id: trace.parentId });
    if (delivery > 1) log("info", "invocation redelivered", { ...attrs, delivery });

    // Section 5.5: +WPI every ack_wait/3 until the result is out.
    const heartbeat = setInterval(() => {
      try {
        m.working();
      } catch (err) {
        log("warn", "heartbeat failed", { ...attrs, error: String(err) });
      }
    }, Math.max(100, ackWaitMs / 3));
    const abort = new AbortController();
    this.aborts.add(abort);
    try {
      log("info", "task started", { ...attrs, delivery });
      const result = await this.run(inv, delivery, handler, abort.signal, attrs, trace);
      this.aborts.delete(abort);
      if (result === null) {
        // Section 5.8: we cancelled it ourselves; give it back, no result.
        log("info", "shutdown cancelled the task; invocation handed back", attrs);
        endSpan(null, "worker stopped");
        m.nak(this.cfg.pullMs + 1000);
        return;
      }
      const failure = result.error !== undefined ? result : null;
      if (!(await this.publishResult(inv, result, attrs, trace))) {
        endSpan(failure, "result not published");
        m.nak(this.cfg.pullMs + 1000);
        return;
      }
      endSpan(failure, "");
      clearInterval(heartbeat);
      // Section 5.7: +ACK only after the PubAck, as a request.
      try {
        await m.ackAck();
      } catch (err) {
        // The result is out; a redelivery re-publishes it under the same id.
        log("warn", "acknowledging the invocation failed", { ...attrs, error: String(err) });
      }
    } finally {
      clearInterval(heartbeat);
      this.aborts.delete(abort);
    }
  }

  // run calls the handler and returns {output} (output may be undefined)
  // or {error}, or null when signal aborted it first.
  async run(inv, delivery, handler, signal, attrs, trace) {
    const args = { ...inv, delivery, idempotencyKey: JSON.stringify([inv.activation, inv.node]), signal }; // section 5.4
    if (trace) args.traceparent = trace.traceparent;
    // With tracing on: the OpenTelemetry context holding the attempt's
    // span, to start the spans of what the task does as its children.
    if (trace?.context) args.otelContext = trace.context;
    const work = this.cfg.workMs > 0 ? simulateWork(this.cfg.workMs, signal) : Promise.resolve();
    const call = work.then(() => handler(args));
    call.catch(() => {}); // a handler failing after its abort must not crash the process
    const aborted = new Promise((resolve) => signal.addEventListener("abort", resolve));
    try {
      const output = await Promise.race([call, aborted]);
      if (signal.aborted) return null;
      return { output }; // resultBody maps undefined to null
    } catch (err) {
      if (signal.aborted) return null;
      const error = wireError(err);
      log("warn", "task failed", { ...attrs, error: error.message });
      return { error, thrown: err };
    }
  }

  // Section 5.6: JetStream publish to reply, retried with the same id: the
  // hex SHA-256 of the token, which only this invocation's worker knows.
  async publishResult(inv, result, attrs, trace) {
    const msgID = `result/${createHash("sha256").update(inv.token, "utf8").digest("hex")}`;
    const envelope = { activation: inv.activation, node: inv.node, attempt: inv.attempt, token: inv.token };
    let body = resultBody(envelope, result);
    const tooLarge = () =>
      JSON.stringify({
        ...envelope,
        error: { message: `task result of ${body.length} bytes exceeds the maximum message size (store large data elsewhere and return a reference)`, nonRetryable: true },
      });
    // Section 2.4: a result above the threshold goes by reference.
    let ref = null;
    try {
      const sent = await this.payloads.send(inv.run, "result", body);
      if (sent.hdrs) ({ body, hdrs: ref } = sent);
    } catch (err) {
      log("warn", "storing a large result in the payload bucket failed; invocation handed back", { ...attrs, error: String(err) });
      return false;
    }
    const maxPayload = this.nc.info?.max_payload ?? 1 << 20;
    if (!ref && Buffer.byteLength(body) > maxPayload - msgID.length - 256) body = tooLarge();
    let delay = 50;
    const deadline = Date.now() + 60000;
    for (;;) {
      try {
        const opts = { msgID, expect: { streamName: `${this.cfg.prefix}_inputs` }, timeout: 5000 };
        if (ref) opts.headers = ref;
        if (trace) {
          opts.headers = opts.headers || headers();
          opts.headers.set("traceparent", trace.traceparent);
          if (trace.tracestate) opts.headers.set("tracestate", trace.tracestate);
        }
        const ack = await this.js.publish(inv.reply, body, opts);
        log("info", "result published", { ...attrs, stream_seq: ack.seq, duplicate: ack.duplicate });
        return true;
      } catch (err) {
        if (err instanceof JetStreamApiError && err.code === MESSAGE_TOO_LARGE) {
          body = tooLarge();
          continue;
        }
        if (Date.now() > deadline || this.nc.isClosed()) {
          log("error", "publishing the result failed; invocation handed back", { ...attrs, error: String(err) });
          return false;
        }
        log("warn", "publishing the result failed; retrying", { ...attrs, error: String(err) });
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  // Section 5.8: stop pulling, let pulls expire, let tasks finish within
  // the grace period, then cancel the rest (they are handed back).
  async stop(loops, hurry) {
    this.stopping = true;
    this.notifyChange();
    const graceOver = Promise.race([sleep(this.cfg.graceMs), hurry]);
    const settled = Promise.all(loops).then(async () => {
      while (this.running.size > 0) await Promise.all([...this.running]);
    });
    const finished = await Promise.race([settled.then(() => true), graceOver.then(() => false)]);
    if (!finished) {
      log("warn", "grace period over; cancelling running tasks", { running: this.running.size });
      for (const a of this.aborts) a.abort();
      await settled;
    }
  }
}

async function main() {
  let cfg;
  try {
    cfg = readConfig();
  } catch (err) {
    log("error", `configuration: ${err.message}`);
    process.exit(2);
  }
  // Tracing is decided before connecting: a setting it refuses is a
  // configuration error, like the one above.
  let tracing;
  try {
    tracing = await startTracing(process.env, log);
  } catch (err) {
    log("error", `configuration: ${err.message}`);
    process.exit(2);
  }
  if (tracing) log("info", "tracing task attempts over OTLP/HTTP", { endpoint: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT || "default" });
  log("info", "connecting", { servers: cfg.servers });
  // Keep trying until a server answers: in a deployment the worker may
  // start before NATS does.
  const nc = await connect({
    servers: cfg.servers,
    name: "jetflow-node-worker",
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
  });
  log("info", "connected", { server: nc.getServer(), prefix: cfg.prefix });
  // Say when the connection is lost and when it is back; each task's loop
  // then says "serving again" once its next pull goes through.
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") log("warn", "disconnected from NATS; reconnecting", { server: s.server });
      else if (s.type === "reconnect") log("info", "reconnected to NATS", { server: s.server });
    }
  })().catch(() => {});
  const w = new Worker(cfg, nc, jetstream(nc), await jetstreamManager(nc, { checkAPI: false }), tracing);
  const loops = cfg.serve.map((s) => w.serve(s));

  let signals = 0;
  let hurryNow;
  const hurry = new Promise((resolve) => (hurryNow = resolve));
  const done = new Promise((resolve) => {
    const onSignal = (sig) => {
      signals++;
      if (signals === 1) {
        log("info", "draining: running tasks finish and report (signal again to stop now)", { signal: sig });
        resolve();
      } else {
        hurryNow();
      }
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
  await done;
  await w.stop(loops, hurry);
  try {
    await nc.drain();
  } catch (err) {
    // The server is unreachable: what could not be sent is redelivered
    // after the ack wait.
    log("warn", "could not drain the connection; closing it", { error: String(err) });
    await nc.close().catch(() => {});
  }
  // The attempt spans still in the batch go out now, for at most 5 s.
  if (tracing && !(await tracing.shutdown())) log("warn", "exporting the last spans timed out; they are lost");
  log("info", "stopped");
  process.exit(0);
}

main().catch((err) => {
  log("error", "worker failed", { error: String(err && err.stack ? err.stack : err) });
  process.exit(1);
});
