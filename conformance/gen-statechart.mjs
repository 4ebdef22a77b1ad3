// Statechart goldens: every case compiles a jaren-fsm 0.2 chart (given, or
// lowered from a workflow document) and runs a sequence of operations on
// it, recording each operation's result or thrown error.
//
// Case file: an array of { name, chart | workflow, options?, ops: [op] }.
// An op is { op: start|step|advance|restore|final|events, event?, now?,
// context?, payload?, one?, snapshot? }. Without snapshot an op works on
// the state of the last successful start/step/advance/restore. A now of
// "Infinity", "-Infinity" or "NaN" stands for that number.
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { compileStatechart, lowerWorkflow } from '@jarenjs/flow';
import { canonicalizeJson } from '@jarenjs/json/canonical';

const here = dirname(fileURLToPath(import.meta.url));
const casesDir = join(here, 'cases', 'statechart');
const goldenDir = join(here, 'golden', 'statechart');

const specialNumbers = { Infinity, '-Infinity': -Infinity, NaN };
const num = (v) => (typeof v === 'string' && Object.hasOwn(specialNumbers, v) ? specialNumbers[v] : v);

function thrown(err) {
  const out = { code: err?.code ?? null, message: String(err?.message ?? err) };
  if (err?.docPath !== undefined) out.docPath = err.docPath;
  return out;
}

const json = (v) => JSON.parse(canonicalizeJson(v));

export function runOp(chart, op, current) {
  const state = Object.hasOwn(op, 'snapshot') ? op.snapshot : current;
  const opts = {};
  for (const k of ['context', 'payload', 'one']) if (Object.hasOwn(op, k)) opts[k] = op[k];
  if (Object.hasOwn(op, 'now')) opts.now = num(op.now);
  switch (op.op) {
    case 'start': return { result: chart.start(opts) };
    case 'step': return { result: chart.step(state, op.event, opts) };
    case 'advance': return { result: chart.advance(state, opts.now, opts) };
    case 'restore': return { restored: chart.restore(state) };
    case 'final': return { final: chart.final(state) };
    case 'events': return { events: chart.events(state) };
  }
  throw new Error(`unknown op ${op.op}`);
}

export function runCase(c) {
  let doc = c.chart;
  if (c.workflow !== undefined) doc = lowerWorkflow(c.workflow).fsm;
  const golden = { name: c.name, chart: doc, options: c.options ?? {}, ops: c.ops ?? [] };
  let chart;
  try {
    chart = compileStatechart(doc, c.options ?? {});
  }
  catch (err) {
    golden.compile = { error: thrown(err) };
    golden.results = [];
    return golden;
  }
  golden.compile = { ok: true, states: chart.states };
  golden.results = [];
  let current = null;
  for (const op of golden.ops) {
    let out;
    try {
      out = runOp(chart, op, current);
      if (out.result) current = out.result.state;
      if (out.restored) current = out.restored;
    }
    catch (err) {
      out = { error: thrown(err) };
    }
    golden.results.push(json(out));
  }
  return golden;
}

export async function generate() {
  mkdirSync(goldenDir, { recursive: true });
  let count = 0;
  for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort()) {
    const cases = JSON.parse(readFileSync(join(casesDir, file), 'utf8'));
    const names = new Set();
    const goldens = cases.map((c) => {
      if (names.has(c.name)) throw new Error(`${file}: duplicate case name ${c.name}`);
      names.add(c.name);
      return runCase(c);
    });
    writeFileSync(join(goldenDir, file), JSON.stringify(goldens, null, 1) + '\n');
    count += goldens.length;
  }
  return count;
}
