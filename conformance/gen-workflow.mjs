// Workflow lowering and compilation goldens: runs the reference's
// lowerWorkflow and compileWorkflow on every case in cases/workflow/*.json
// and writes golden/workflow/<same name>.json.
//
// A case is {name, doc, tasks?}. tasks maps a task name to its registered
// version, or to null for a bare handler with no version; without tasks the
// registry provides every task the lowered DAGs name, at the version its
// first declaration states (engine/workflow's conformance test builds the
// same registry).
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { lowerWorkflow, compileWorkflow } from '@jarenjs/flow';
import { createHash } from 'node:crypto';
import { canonicalizeJson } from '@jarenjs/json/canonical';

const here = dirname(fileURLToPath(import.meta.url));
const casesDir = join(here, 'cases', 'workflow');
const goldenDir = join(here, 'golden', 'workflow');

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const handler = () => null;

// define avoids the __proto__ setter, so a task named __proto__ registers.
function define(out, name, value) {
  Object.defineProperty(out, name, { value, enumerable: true, configurable: true, writable: true });
}

function explicitRegistry(tasks) {
  const out = {};
  for (const [name, version] of Object.entries(tasks))
    define(out, name, version === null ? handler : { run: handler, version });
  return out;
}

function autoRegistry(doc) {
  const out = {};
  let lowered;
  try { lowered = lowerWorkflow(doc); } catch { return out; }
  for (const dag of Object.values(lowered.dags)) {
    if (!isObject(dag.nodes)) continue;
    for (const node of Object.values(dag.nodes)) {
      if (!isObject(node) || node.kind !== 'task' || typeof node.run !== 'string' || Object.hasOwn(out, node.run)) continue;
      const versioned = typeof node.version === 'string' && node.version.trim() !== '';
      define(out, node.run, versioned ? { run: handler, version: node.version } : handler);
    }
  }
  return out;
}

function describe(err) {
  if (typeof err?.code === 'string') {
    return { code: err.code, path: err.docPath ?? null, reason: err.reason ?? null,
      message: err.message, cause: err.cause instanceof Error ? err.cause.message : null };
  }
  return { code: null, name: err?.name ?? typeof err, message: String(err?.message ?? err) };
}

// run is exported for differential-workflow.mjs, which feeds it generated
// documents.
export async function run(c) {
  const out = { name: c.name };
  try { out.lower = { canonical: canonicalizeJson(lowerWorkflow(c.doc)) }; }
  catch (err) { out.lower = { error: describe(err) }; }
  const tasks = c.tasks === undefined ? autoRegistry(c.doc) : explicitRegistry(c.tasks);
  let captured = null;
  // The run identity is private to the run loop; a store that refuses the
  // first save reveals it without running any task.
  const store = { load: () => null, save: (_, snapshot) => { captured = snapshot.identity; return false; } };
  let w;
  try { w = compileWorkflow(c.doc, { tasks, store }); }
  catch (err) { out.compile = { error: describe(err) }; return out; }
  try { await w.run(null, { runId: 'golden' }); } catch { /* the refused save */ }
  out.compile = {
    revisions: w.revisions,
    taskVersions: w.taskVersions,
    taskVersionOrder: Object.keys(w.taskVersions),
    // The identity embeds the whole canonical document three times over;
    // its SHA-256 keeps the golden small and the comparison exact.
    identitySha256: captured === null ? null : createHash('sha256').update(canonicalizeJson(captured)).digest('hex'),
  };
  return out;
}

export async function generate() {
  mkdirSync(goldenDir, { recursive: true });
  let count = 0;
  const names = new Set();
  for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort()) {
    const suite = JSON.parse(readFileSync(join(casesDir, file), 'utf8'));
    const results = [];
    for (const c of suite.cases) {
      if (names.has(`${file}:${c.name}`)) throw new Error(`duplicate case ${file}:${c.name}`);
      names.add(`${file}:${c.name}`);
      results.push(await run(c));
      count++;
    }
    writeFileSync(join(goldenDir, file), goldenText({ source: `cases/workflow/${file}`, cases: results }));
  }
  return count;
}

// goldenText is the golden's JSON text, with the slash after a work
// member in a path written as the escape \/ (the same string to any JSON
// reader): the plain text is the name of the working directory of the
// machines that check this repository out, which no tracked file may hold.
function goldenText(golden) {
  return JSON.stringify(golden, null, 1).replace(/\/work\//g, '/work\\/') + '\n';
}
