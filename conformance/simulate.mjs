// The reference implementation of `jetflow simulate SCENARIO`: it runs one
// workflow offline through @jarenjs/flow's compileWorkflow against mocked
// tasks and answers one canonical JSON line. The Go command must print the
// same line (modulo snapshot generations, see README.md).
//
//   node simulate.mjs scenario.json            one bare scenario
//   node simulate.mjs cases/simulate/x.json N  case named N of a case file
//
// A scenario the contract does not allow (unknown member, a blank runId, a
// malformed mock) is not oracle behaviour: it exits 2 with a message on
// stderr and never appears in the corpus.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileWorkflow } from '@jarenjs/flow';
import { compileJsonQuery } from '@jarenjs/json/query';
import { canonicalizeJson } from '@jarenjs/json/canonical';

/** A scenario the simulator refuses before running anything. */
export class ScenarioError extends Error {}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const nonblank = (s) => typeof s === 'string' && s.trim() !== '';
const refuse = (message) => { throw new ScenarioError(message); };

function only(obj, allowed, where) {
  for (const key of Object.keys(obj)) if (!allowed.includes(key)) refuse(`${where}: unknown member '${key}'`);
}

/** Validate the scenario shape; the reference itself never sees a bad one. */
export function checkScenario(s) {
  if (!isObject(s)) refuse('scenario must be an object');
  only(s, ['document', 'runId', 'input', 'tasks', 'calls'], 'scenario');
  if (!Object.hasOwn(s, 'document')) refuse('scenario: document is required');
  if (s.runId !== undefined && !nonblank(s.runId)) refuse('scenario: runId must be a nonblank string');
  if (s.tasks !== undefined && !isObject(s.tasks)) refuse('scenario: tasks must be an object');
  for (const [name, task] of Object.entries(s.tasks ?? {})) {
    if (!isObject(task)) refuse(`tasks/${name}: must be an object`);
    only(task, ['version', 'output', 'error', 'errorWhen'], `tasks/${name}`);
    if (task.version !== undefined && !nonblank(task.version)) refuse(`tasks/${name}: version must be a nonblank string`);
    if (task.error !== undefined && typeof task.error !== 'string') refuse(`tasks/${name}: error must be a string`);
    if (task.errorWhen !== undefined && task.error === undefined) refuse(`tasks/${name}: errorWhen needs error`);
  }
  if (!Array.isArray(s.calls) || s.calls.length === 0) refuse('scenario: calls must be a non-empty array');
  s.calls.forEach((call, i) => {
    const where = `calls/${i}`;
    if (!isObject(call)) refuse(`${where}: must be an object`);
    only(call, ['now', 'event', 'expectedGeneration', 'input', 'runId'], where);
    if (call.now !== undefined && typeof call.now !== 'number') refuse(`${where}: now must be a number`);
    if (call.runId !== undefined && !nonblank(call.runId)) refuse(`${where}: runId must be a nonblank string`);
    if (call.event !== undefined) {
      if (!isObject(call.event) || !nonblank(call.event.type)) refuse(`${where}: event needs a nonblank type`);
      only(call.event, ['type', 'payload'], `${where}/event`);
    }
    const g = call.expectedGeneration;
    if (g !== undefined && g !== 'previous' && !(Number.isSafeInteger(g) && g >= 0))
      refuse(`${where}: expectedGeneration must be a nonnegative integer or "previous"`);
  });
}

/** The mock registry. A handler receives the DAG's props object
 * {with, input} (plus signal and resources, which a mock ignores); the
 * mock's queries read exactly {with: props.with, input: props.input}. */
export function mockTasks(tasks = {}) {
  const registry = {};
  for (const [name, spec] of Object.entries(tasks)) {
    const compile = (doc, member) => {
      try { return compileJsonQuery(doc); }
      catch (err) { return refuse(`tasks/${name}/${member}: ${err.message}`); }
    };
    const output = spec.output === undefined ? null : compile(spec.output, 'output');
    const when = spec.errorWhen === undefined ? null : compile(spec.errorWhen, 'errorWhen');
    const run = (props) => {
      const scope = { with: props.with, input: props.input };
      if (spec.error !== undefined && (when === null || when.ebv(scope))) throw new Error(spec.error);
      // An empty query result is undefined, which the DAG stores as null.
      return output === null ? props.input : output(scope);
    };
    // defineProperty, so that a task named __proto__ registers as itself.
    Object.defineProperty(registry, name, { value: spec.version === undefined ? run : { run, version: spec.version },
      enumerable: true, configurable: true, writable: true });
  }
  return registry;
}

/** A coded error as the output line shows it; path null = no location. */
function coded(err) {
  if (typeof err?.code !== 'string') throw err;
  return { code: err.code, path: err.docPath ?? null, message: err.message };
}

/** Run a scenario and return the output object (not yet serialized). */
export async function simulate(raw) {
  checkScenario(raw);
  // The Go simulator decodes the scenario into maps and iterates their keys
  // in value.Keys order, which is JavaScript's own-key order of a
  // canonicalized object. Canonicalizing here makes the reference see the
  // same member order in the document, payloads and inputs. Mock queries
  // are compiled as written, as a handler's query is compiled from the
  // object its author wrote; the Go simulator keeps their written order.
  let scenario;
  try { scenario = JSON.parse(canonicalizeJson(raw)); }
  catch (err) { refuse(`scenario is not JSON data: ${err.message}`); }
  const tasks = mockTasks(raw.tasks);
  let workflow;
  try { workflow = compileWorkflow(scenario.document, { tasks }); }
  catch (err) { return { compileError: coded(err) }; }
  const calls = [];
  let snapshot; // the snapshot of the most recent successful call
  for (const call of scenario.calls) {
    const opts = { runId: call.runId ?? scenario.runId ?? 'sim' };
    if (snapshot !== undefined) opts.snapshot = snapshot;
    if (call.now !== undefined) opts.now = call.now;
    if (call.event !== undefined) opts.event = call.event;
    if (call.expectedGeneration === 'previous') opts.expectedGeneration = snapshot?.generation ?? 0;
    else if (call.expectedGeneration !== undefined) opts.expectedGeneration = call.expectedGeneration;
    const input = Object.hasOwn(call, 'input') ? call.input : scenario.input;
    try {
      const r = await workflow.run(input, opts);
      snapshot = r.snapshot;
      calls.push({ status: r.status, result: r.result, snapshot: r.snapshot });
    }
    catch (err) { calls.push({ error: coded(err) }); }
  }
  return { calls };
}

/** The one output line: RFC 8785 canonical JSON. */
export const render = (out) => canonicalizeJson(out);

/** Read a bare scenario, or the case named `name` from a case file. */
export function loadScenario(file, name) {
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  if (!Array.isArray(doc)) return doc;
  const found = doc.find((c) => c.name === name);
  if (!found) refuse(name === undefined ? `${file} is a case file: name a case` : `no case '${name}' in ${file}`);
  return found.scenario;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const [file, name] = process.argv.slice(2);
    if (!file) refuse('usage: node simulate.mjs SCENARIO.json [CASE-NAME]');
    process.stdout.write(`${render(await simulate(loadScenario(file, name)))}\n`);
  }
  catch (err) {
    process.stderr.write(`simulate: ${err instanceof ScenarioError ? err.message : err.stack}\n`);
    process.exit(2);
  }
}
