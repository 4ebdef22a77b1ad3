// Payloads by reference, docs/PROTOCOL.md section 2.4: a body larger than
// the threshold travels as an object of the Object Store bucket
// <prefix>_payloads, named by the three Jetflow-Payload headers. Reads use
// direct gets (a worker holds no right to create consumers, SECURITY.md);
// writes publish the chunks and then the object's info, as the Object
// Store does.
import { createHash, randomBytes } from "node:crypto";
import { headers } from "@nats-io/transport-node";

export const HEADER_NAME = "Jetflow-Payload";
export const HEADER_SIZE = "Jetflow-Payload-Size";
export const HEADER_DIGEST = "Jetflow-Payload-Digest";

const CHUNK = 256 * 1024;
const MAX_BYTES = 256 * 1024 * 1024;

export function digestOf(body) {
  return "SHA-256=" + createHash("sha256").update(body).digest("base64url").padEnd(44, "=");
}

// BadReference: the reference can never be resolved (no retry cures it).
export class BadReference extends Error {}

export class Payloads {
  constructor(prefix, js, jsm, threshold) {
    this.bucket = `${prefix}_payloads`;
    this.stream = `OBJ_${this.bucket}`;
    this.js = js;
    this.jsm = jsm;
    this.threshold = threshold;
  }

  // body returns the message's body: its data, or the object its headers
  // name, checked against their size and digest.
  async body(m) {
    const name = m.headers?.get(HEADER_NAME);
    if (!name) return m.data;
    const size = Number(m.headers.get(HEADER_SIZE));
    const digest = m.headers.get(HEADER_DIGEST);
    if (m.data.length > 0) throw new BadReference(`payload ${name}: a message by reference has an empty body`);
    if (!Number.isSafeInteger(size) || size < 0) throw new BadReference(`payload ${name}: bad ${HEADER_SIZE}`);
    if (size > MAX_BYTES) throw new BadReference(`payload ${name}: ${size} bytes, larger than the payload limit of ${MAX_BYTES}`);
    const meta = await this.jsm.direct.getMessage(this.stream, { last_by_subj: this.metaSubject(name) }).catch(notFound);
    if (!meta) throw new BadReference(`payload object ${name} in bucket ${this.bucket}: object not found`);
    const info = meta.json();
    if (info.deleted) throw new BadReference(`payload object ${name} in bucket ${this.bucket}: object not found`);
    if (info.size !== size || info.digest !== digest) {
      throw new BadReference(`payload object ${name}: digest mismatch: the reference names ${size} bytes with ${digest}, the bucket holds ${info.size} bytes with ${info.digest}`);
    }
    const body = Buffer.alloc(size);
    const subject = `$O.${this.bucket}.C.${info.nuid}`;
    let at = 0;
    let seq = 0;
    for (let i = 0; i < info.chunks; i++) {
      const c = await this.jsm.direct.getMessage(this.stream, { seq: seq + 1, next_by_subj: subject }).catch(notFound);
      if (!c) throw new BadReference(`payload object ${name}: object not found (a chunk is missing)`);
      if (at + c.data.length > size) throw new BadReference(`payload object ${name}: digest mismatch (more than ${size} bytes)`);
      body.set(c.data, at);
      at += c.data.length;
      seq = c.seq;
    }
    if (at !== size || digestOf(body) !== digest) throw new BadReference(`payload object ${name}: digest mismatch (read ${at} bytes)`);
    return body;
  }

  // send returns the body to publish and the headers to add: the body
  // itself, or, above the threshold, an empty body and the reference to
  // the object it was stored as (<run>/<kind>/<hex sha256>).
  async send(runID, kind, body) {
    const data = Buffer.from(body);
    if (data.length <= this.threshold) return { body: data, hdrs: null };
    const name = `${runID}/${kind}/${createHash("sha256").update(data).digest("hex")}`;
    const digest = digestOf(data);
    const nuid = randomBytes(16).toString("hex");
    const chunks = Math.ceil(data.length / CHUNK);
    for (let i = 0; i < chunks; i++) {
      await this.js.publish(`$O.${this.bucket}.C.${nuid}`, data.subarray(i * CHUNK, (i + 1) * CHUNK), { timeout: 30000 });
    }
    const info = {
      name, bucket: this.bucket, nuid, size: data.length, mtime: new Date().toISOString(),
      chunks, digest, options: { max_chunk_size: CHUNK },
    };
    const h = headers();
    h.set("Nats-Rollup", "sub");
    await this.js.publish(this.metaSubject(name), JSON.stringify(info), { headers: h, timeout: 30000 });
    const ref = headers();
    ref.set(HEADER_NAME, name);
    ref.set(HEADER_SIZE, String(data.length));
    ref.set(HEADER_DIGEST, digest);
    return { body: new Uint8Array(0), hdrs: ref };
  }

  metaSubject(name) {
    return `$O.${this.bucket}.M.${Buffer.from(name).toString("base64url").padEnd(Math.ceil(Buffer.byteLength(name) / 3) * 4, "=")}`;
  }
}

function notFound(err) {
  if (String(err?.message ?? err).match(/not found|no message/i) || err?.code === 404) return null;
  throw err;
}
