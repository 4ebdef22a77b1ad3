// A jetflow publisher and observer in Node.js, written from
// docs/PROTOCOL.md alone (sections 4, 7 and 8):
//
//   node publish.js start WORKFLOW RUN [INPUT_JSON]      start a run (4.2)
//   node publish.js event RUN TYPE [PAYLOAD_JSON] [ID]   send an event (4.3)
//   node publish.js cancel RUN [REASON]                  cancel a run (4.4)
//   node publish.js wait RUN [TIMEOUT_MS]                wait for the run's end and print its status (7, 8)
//
// Environment: JETFLOW_NATS_URL or NATS_URL, JETFLOW_PREFIX, as worker.js.
// Exit status: 0 on success (wait: the run is done), 1 when the run failed
// or was cancelled, 2 on bad arguments, 3 on any other error.

import { randomBytes } from "node:crypto";
import process from "node:process";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

const TOKEN = /^[A-Za-z0-9_-]{1,128}$/;
const TERMINAL = new Set(["done", "failed", "cancelled"]);

class UsageError extends Error {}

function token(what, s) {
  if (typeof s !== "string" || !TOKEN.test(s)) {
    throw new UsageError(`${what} ${JSON.stringify(s)}: use 1-128 letters, digits, '_' or '-'`);
  }
  return s;
}

function json(what, text) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${err.message}`);
  }
}

// Section 4.1: the de-duplication id "<kind>/<run>/<key>", the key the
// caller's own (an event id) or else 128 random bits, new for each input.
function msgID(kind, run, key) {
  return `${kind}/${run}/${key ?? randomBytes(16).toString("base64url")}`;
}

// Section 4.1: a JetStream publish with a de-duplication id; the PubAck
// says the message is stored (or was already, "duplicate"). Retries of
// this publish reuse the same message, hence the same id.
async function publish(js, prefix, subject, body, id) {
  const opts = { expect: { streamName: `${prefix}_inputs` }, timeout: 5000, msgID: id };
  const ack = await js.publish(subject, body, opts);
  console.log(JSON.stringify({ subject, stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate }));
}

// Section 8: the run record, read with a direct get of its KV key.
async function record(nc, prefix, run) {
  const bucket = `${prefix}_runs`;
  const m = await nc.request(`$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${run}`, "", { timeout: 5000 });
  const status = m.headers?.code ?? 0;
  if (status === 404 || m.data.length === 0) return null; // no record yet
  if (status >= 400) throw new Error(`reading the record of ${run}: ${status} ${m.headers.description}`);
  return JSON.parse(m.string());
}

// Sections 7 and 8: subscribe to announcements first, then read the
// record (the truth); re-read it now and then in case one is missed.
async function wait(nc, prefix, run, timeoutMs) {
  const sub = nc.subscribe(`${prefix}.status.${run}`);
  await nc.flush();
  let announce;
  const announced = new Promise((resolve) => (announce = resolve));
  (async () => {
    for await (const m of sub) {
      try {
        const st = m.json();
        if (TERMINAL.has(st.status)) announce(st);
      } catch {
        // not a status announcement: ignore it
      }
    }
  })();
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const rec = await record(nc, prefix, run);
      if (rec?.status && TERMINAL.has(rec.status.status)) return rec.status;
      if (Date.now() > deadline) throw new Error(`run ${run} did not end within ${timeoutMs} ms`);
      const st = await Promise.race([announced, new Promise((resolve) => setTimeout(() => resolve(null), 500))]);
      if (st) return st;
    }
  } finally {
    sub.unsubscribe();
  }
}

async function main(argv) {
  const prefix = token("JETFLOW_PREFIX", process.env.JETFLOW_PREFIX || "jetflow");
  const [verb, ...args] = argv;
  let action;
  switch (verb) {
    case "start": {
      const [workflow, run, input] = args;
      const body = { workflow: token("workflow", workflow) };
      if (input !== undefined) body.input = json("INPUT_JSON", input);
      action = (nc, js) => publish(js, prefix, `${prefix}.in.${token("run id", run)}.start`, JSON.stringify(body), msgID("start", run));
      break;
    }
    case "event": {
      const [run, type, payload, id] = args;
      token("run id", run);
      token("event type", type);
      // The body is the payload itself; no body means no payload.
      const body = payload === undefined ? "" : JSON.stringify(json("PAYLOAD_JSON", payload));
      action = (nc, js) => publish(js, prefix, `${prefix}.in.${run}.event.${type}`, body, msgID("event", run, id));
      break;
    }
    case "cancel": {
      const [run, reason] = args;
      const body = JSON.stringify(reason === undefined ? {} : { reason });
      action = (nc, js) => publish(js, prefix, `${prefix}.in.${token("run id", run)}.cancel`, body, msgID("cancel", run));
      break;
    }
    case "wait": {
      const [run, timeout] = args;
      token("run id", run);
      const ms = timeout === undefined ? 60000 : Number(timeout);
      if (!Number.isInteger(ms) || ms <= 0) throw new UsageError(`TIMEOUT_MS ${JSON.stringify(timeout)} is not a positive integer`);
      action = async (nc) => {
        const st = await wait(nc, prefix, run, ms);
        console.log(JSON.stringify(st));
        return st.status === "done" ? 0 : 1;
      };
      break;
    }
    default:
      throw new UsageError(`unknown verb ${JSON.stringify(verb)}: use start, event, cancel or wait`);
  }
  const url = process.env.JETFLOW_NATS_URL || process.env.NATS_URL || "nats://127.0.0.1:4222";
  const nc = await connect({ servers: url.split(","), name: "jetflow-node-publisher" });
  try {
    return (await action(nc, jetstream(nc))) ?? 0;
  } finally {
    await nc.drain();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`publish.js: ${err.message}`);
    process.exit(err instanceof UsageError ? 2 : 3);
  },
);
