// Regenerates conformance/golden/order/*.json: the member order of the
// JSON a task handler receives and of a run's result, as the reference
// keeps it. Each case of cases/order/*.json is a simulate scenario (see
// simulate.mjs); the golden records, as text in the reference's own member
// order (JSON.stringify, not canonical JSON):
//
//   {"name", "invocations": [{"task", "with", "input"}], "result"}
//
// `invocations` lists every handler call in order, `with` null when the
// state has none; `result` is the last call's result (context.data when
// done, null otherwise). Each scenario runs twice; differing outputs abort.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileWorkflow } from '@jarenjs/flow';
import { canonicalizeJson } from '@jarenjs/json/canonical';
import { checkScenario, mockTasks } from './simulate.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const caseDir = join(here, 'cases', 'order');
const goldenDir = join(here, 'golden', 'order');
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const text = (v) => (v === undefined ? null : JSON.stringify(v));

/** Run a scenario as simulate.mjs does, recording what each handler saw. */
async function observe(raw) {
  checkScenario(raw);
  const scenario = JSON.parse(canonicalizeJson(raw));
  const invocations = [];
  const tasks = mockTasks(raw.tasks); // compiled as written, as simulate.mjs does
  for (const [name, entry] of Object.entries(tasks)) {
    const run = typeof entry === 'function' ? entry : entry.run;
    const seen = (props) => {
      invocations.push({ task: name, with: text(props.with), input: text(props.input) });
      return run(props);
    };
    tasks[name] = typeof entry === 'function' ? seen : { ...entry, run: seen };
  }
  const workflow = compileWorkflow(scenario.document, { tasks });
  let snapshot;
  let result = null;
  for (const call of scenario.calls) {
    const opts = { runId: call.runId ?? scenario.runId ?? 'sim' };
    if (snapshot !== undefined) opts.snapshot = snapshot;
    if (call.now !== undefined) opts.now = call.now;
    if (call.event !== undefined) opts.event = call.event;
    const input = Object.hasOwn(call, 'input') ? call.input : scenario.input;
    const r = await workflow.run(input, opts);
    snapshot = r.snapshot;
    result = r.status === 'done' ? text(r.result) : null;
  }
  return { invocations, result };
}

export async function generate() {
  mkdirSync(goldenDir, { recursive: true });
  const files = readdirSync(caseDir).filter((f) => f.endsWith('.json')).sort();
  for (const f of readdirSync(goldenDir)) if (f.endsWith('.json') && !files.includes(f)) rmSync(join(goldenDir, f));
  let count = 0;
  for (const file of files) {
    const goldens = [];
    for (const [i, k] of JSON.parse(readFileSync(join(caseDir, file), 'utf8')).entries()) {
      const where = `${file}[${i}]`;
      if (typeof k?.name !== 'string' || !NAME.test(k.name)) throw new Error(`${where}: name must be kebab-case`);
      if (typeof k.description !== 'string' || !k.description.trim()) throw new Error(`${where}: description is required`);
      const first = JSON.stringify(await observe(k.scenario));
      if (first !== JSON.stringify(await observe(k.scenario))) throw new Error(`${where} (${k.name}): the reference answered differently on a second run`);
      goldens.push({ name: k.name, ...JSON.parse(first) });
      count++;
    }
    writeFileSync(join(goldenDir, file), `${JSON.stringify(goldens, null, 2)}\n`);
  }
  return count;
}
