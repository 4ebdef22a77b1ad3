// Runs the reference compileDag on every case in cases/dag/*.json and writes
// golden/dag/<same name>.json. A case is
//   { name, doc, registry?, input?, mocks?, seed? }
// - doc is canonicalized first (JSON.parse(canonicalizeJson(doc))), as the
//   workflow's lowering does, so member order is the one Go can reproduce.
// - registry: task name -> version string, or null for a bare handler. When
//   absent, a registry is derived from the document (each run name at the
//   first nonblank version declared for it, else bare), which stands for
//   jetflow's "no registry" mode.
// - mocks: task name -> { value } | { echo: "arg"|"with"|"input" } |
//   { query } (a query over the handler argument) | { error: message }.
//   A case with mocks is run; input defaults to null.
// - seed: checkpoint values the store's load returns (a resumed run).
//
// A run is driven in waves: every handler returns a promise the driver
// settles; after the microtask queue drains, the calls made so far form a
// wave, which the driver then settles in node-id order. Handlers are bound
// per node (run names are rewritten to "@" and the node id for the run only,
// which no runtime message mentions; the prefix keeps an empty id a valid
// run name and "__proto__" an own key of the handler object), so each call
// is attributed to its node.
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { compileDag } from '@jarenjs/flow';
import { compileJsonQuery } from '@jarenjs/json/query';
import { canonicalizeJson } from '@jarenjs/json/canonical';
import { hashContent } from '@jarenjs/core/string';

const here = dirname(fileURLToPath(import.meta.url));
const casesDir = join(here, 'cases', 'dag');
const goldenDir = join(here, 'golden', 'dag');

const clone = (v) => JSON.parse(canonicalizeJson(v));
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const drain = () => new Promise((resolve) => setImmediate(resolve));

function errorRecord(err) {
  if (err === null || typeof err !== 'object' || typeof err.code !== 'string') {
    throw new Error(`unexpected non-coded error: ${err?.stack ?? err}`);
  }
  const rec = { code: err.code, reason: err.reason, message: err.message };
  if (err.docPath !== undefined) rec.path = err.docPath;
  if (err.nodeId !== undefined) rec.nodeId = err.nodeId;
  return rec;
}

function deriveRegistry(doc) {
  const registry = {};
  const nodes = doc?.nodes;
  if (nodes === null || typeof nodes !== 'object' || Array.isArray(nodes)) return registry;
  for (const decl of Object.values(nodes)) {
    if (decl === null || typeof decl !== 'object' || typeof decl.run !== 'string') continue;
    const v = typeof decl.version === 'string' && decl.version.trim() !== '' ? decl.version : null;
    if (!Object.hasOwn(registry, decl.run) || registry[decl.run] === null) registry[decl.run] = v;
  }
  return registry;
}

function handlerEntry(version, run) {
  return version === null ? run : { run, version };
}

function mockOutcome(mock, arg) {
  if (Object.hasOwn(mock, 'error')) return { error: mock.error };
  if (Object.hasOwn(mock, 'value')) return { value: mock.value };
  if (Object.hasOwn(mock, 'echo')) {
    return { value: mock.echo === 'arg' ? arg : mock.echo === 'with' ? arg.with : arg.input };
  }
  if (Object.hasOwn(mock, 'query')) {
    try {
      return { value: compileJsonQuery(mock.query)(arg) ?? null };
    }
    catch (err) {
      return { error: err.message };
    }
  }
  throw new Error(`malformed mock ${JSON.stringify(mock)}`);
}

// The provenance identity the reference hands a checkpoint store, for the
// document as written (the run itself compiles a rewritten copy).
async function identityOf(doc, registry, revision, input) {
  const tasks = {};
  for (const [name, version] of Object.entries(registry)) tasks[name] = handlerEntry(version, () => null);
  let identity = null;
  const stop = new Error('identity captured');
  const checkpoint = {
    load(runId, id) { identity = clone(id); throw stop; },
    save() {},
    complete() {},
  };
  await compileDag(doc, { tasks, checkpoint, revision }).run(clone(input), { runId: 'r' }).catch(() => {});
  return identity;
}

async function runCase(c, doc, registry) {
  // rewrite each task's run name to its node id so calls are attributable
  const runDoc = clone(doc);
  const tasks = {};
  const calls = [];
  const pending = [];
  for (const [id, decl] of Object.entries(runDoc.nodes)) {
    if (decl.kind !== 'task') continue;
    const name = decl.run;
    const mock = c.mocks[name];
    if (mock === undefined) throw new Error(`${c.name}: no mock for task '${name}'`);
    decl.run = `@${id}`;
    tasks[decl.run] = handlerEntry(registry[name], (props) => new Promise((resolve, reject) => {
      const arg = clone(props);
      calls.push({ node: id, task: name, arg });
      pending.push({ node: id, arg, mock, resolve, reject });
    }));
  }
  const saves = [];
  let completed;
  const revision = hashContent(canonicalizeJson(doc));
  const identity = await identityOf(doc, registry, revision, c.input ?? null);
  const checkpoint = {
    load(runId, id) {
      return c.seed === undefined ? null : { identity: id, values: c.seed };
    },
    save(runId, nodeId, value) { saves.push({ node: nodeId, value: clone(value) }); },
    complete(runId, result) { completed = clone(result); },
  };
  const dag = compileDag(runDoc, { tasks, checkpoint, revision });
  const out = { waves: [] };
  let settled = null;
  dag.run(clone(c.input ?? null), { runId: 'r' }).then(
    (value) => { settled = { value }; },
    (err) => { settled = { err }; });
  let seen = 0;
  let savedSeen = 0;
  for (let guard = 0; guard < 1000; guard++) {
    await drain();
    await drain();
    const wave = calls.slice(seen);
    seen = calls.length;
    const waveSaves = saves.slice(savedSeen);
    savedSeen = saves.length;
    out.waves.push({ calls: wave, saves: waveSaves });
    if (settled !== null) break;
    if (pending.length === 0) throw new Error(`${c.name}: run stalled`);
    const batch = pending.splice(0).sort((a, b) => cmp(a.node, b.node));
    for (const p of batch) {
      const o = mockOutcome(p.mock, p.arg);
      if (Object.hasOwn(o, 'error')) p.reject(new Error(o.error));
      else p.resolve(o.value);
    }
  }
  if (settled === null) throw new Error(`${c.name}: run never settled`);
  // a wave that made no calls and no saves is the driver's final poll
  while (out.waves.length > 0) {
    const last = out.waves[out.waves.length - 1];
    if (last.calls.length > 0 || last.saves.length > 0) break;
    out.waves.pop();
  }
  if (Object.hasOwn(settled, 'err')) out.error = errorRecord(settled.err);
  else {
    out.result = clone(settled.value);
    out.completed = completed !== undefined;
  }
  out.revision = revision;
  out.identity = identity;
  return out;
}

// The reference's outcome for one case: { compile, run? } as a golden
// records it. A plain (non-coded) error of the reference is thrown.
export async function outcome(c) {
  const doc = clone(c.doc);
  const registry = c.registry === undefined ? deriveRegistry(doc) : c.registry;
  const tasks = {};
  for (const [name, version] of Object.entries(registry)) {
    tasks[name] = handlerEntry(version, () => null);
  }
  let dag;
  try {
    dag = compileDag(doc, { tasks });
  }
  catch (err) {
    return { compile: { error: errorRecord(err) } };
  }
  const out = { compile: { nodes: dag.nodes, output: dag.output, taskVersions: dag.taskVersions } };
  if (c.mocks !== undefined) out.run = await runCase(c, doc, registry);
  return out;
}

async function generateFile(file) {
  const cases = JSON.parse(readFileSync(join(casesDir, file), 'utf8'));
  const goldens = [];
  const names = new Set();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`${file}: duplicate case name ${c.name}`);
    names.add(c.name);
    goldens.push({ name: c.name, ...await outcome(c) });
  }
  mkdirSync(goldenDir, { recursive: true });
  writeFileSync(join(goldenDir, file), `${JSON.stringify(goldens, null, 1)}\n`);
  return goldens.length;
}

export async function generate() {
  let count = 0;
  for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort()) {
    count += await generateFile(file);
  }
  return count;
}
