// Differential runs of the simulate area: generates random scenarios from
// a seed (workflows with work, DAGs with fan-out and joins, choices over
// data, waits on events and timers, nested flows, visit limits, loops,
// failing tasks with and without catch, calls that move `now`, resume
// errors, and documents that do not compile), asks the reference for each
// outcome through simulate.mjs and writes one JSON line per scenario:
//
//   {"name", "scenario", "output"}
//
// engine/sim's TestDifferential reads such a file
// (JETFLOW_SIM_DIFF=path go test ./engine/sim -run TestDifferential) and
// reports where `jetflow simulate` answers differently.
//
//   node conformance/differential-simulate.mjs [--seed N] [--count K] > sim.jsonl
//
// Each scenario runs twice, as gen-simulate.mjs does; one the reference
// answers differently the second time is left out, and so is one it
// refuses (outside the scenario contract) or answers with a plain
// JavaScript error instead of a coded one. The counts go to stderr.
// Nothing here is committed as a golden: a class of disagreement found
// this way is written down as hand-picked cases in
// cases/simulate/diff-*.json.
import { render, ScenarioError, simulate } from './simulate.mjs';
import { options, generator } from './random.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const count = Number(arg('count', '1000'));

const { rnd, int, pick, chance } = generator(firstSeed);
// An own member even for a name like __proto__, which `o[k] = v` would not make.
const put = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, configurable: true, writable: true });
function sample(pool, n) {
  const left = pool.slice();
  const out = [];
  while (out.length < n && left.length) out.push(left.splice(int(left.length), 1)[0]);
  return out;
}

// ---- data: run inputs, payloads and what tasks make of them
function data() {
  if (chance(0.1)) return pick([null, 3, 'x', [1, 2], true, {}]);
  const d = {};
  if (chance(0.9)) d.n = pick([0, 1, 2, 3, 5, -1, 10, 2.5]);
  if (chance(0.7)) d.flag = chance(0.5);
  if (chance(0.5)) d.items = Array.from({ length: int(4) }, () => pick([1, 2, 3, 'a', null]));
  if (chance(0.3)) d.tag = pick(['A', 'b', '', 'zeta']);
  return d;
}

const EVENTS = ['go', 'stop', 'ping', 'retry'];

// A profile leans a scenario towards one part of the engine: `timers`
// (waits with delays, clocks stepping onto and past deadlines), `events`
// (waits on events, several calls each offering one), `dags` (work as
// DAGs with joins, selects, inline nodes), or `mixed`.
let profile;
const lean = (name, p, otherwise) => (profile === name ? p : otherwise);
const TASKS = ['charge', 'ship', 'check', 'fetch', 'ping'];
const ODD_TASKS = ['__proto__', 'constructor', 'hasOwnProperty', 'a b', 'é'];

// Task outputs are queries over {with, input}; most keep the data's shape
// so that guards downstream read something.
function outputQuery() {
  return pick([
    undefined,
    undefined,
    { n: { $add: ['$.input.n', 1] }, flag: '$.input.flag', items: '$.input.items', tag: '$.input.tag' },
    { n: { $mul: ['$.input.n', 2] }, flag: { $not: '$.input.flag' } },
    { n: { $sub: ['$.input.n', 1] }, flag: { $gt: ['$.input.n', 2] }, w: '$.with' },
    { n: { $count: '$.input.items[*]' }, items: { $reverse: '$.input.items' } },
    '$.input.n',
    '$.with',
    { $if: ['$.input.flag', { n: 0, flag: false }, { n: 9, flag: true }] },
    { n: { $add: ['$.input.n', '$.with.k'] }, seen: '$.input' },
    { n: 1 },
    '$.input.items[*]',
    '$.missing',
    { n: { $div: ['$.input.n', 0] } }, // Infinity: not JSON when checkpointed
    { n: { $sum: '$.input.items[*]' } },
    { out: { $map: [['zeta', 1], ['alpha', '$.input.n']] } },
    { n: { $div: [1, 3] }, big: { $mul: ['$.input.n', 1e21] }, neg: { $mul: [-1, 0] }, s: 'é\u{1F600}' },
    { n: { $add: ['$.input.n', 1] }, flag: '$.input.flag', items: { $seq: ['$.input.items[*]', '$.input.n'] } },
    { n: { $add: ['$.input.tag', 1] } }, // fails on a string tag
    // the reference's empty marker (a $date-add deemed one item that
    // answers empty) as a member or an element, always or when flag is false
    { n: '$.input.n', due: { '$date-add': ['2026-01-01', '$.input.delay'] } },
    { n: '$.input.n', flag: '$.input.flag', at: [{ '$date-add': ['2026-01-01', { $if: ['$.input.flag', 'P1D', '$.input.none'] }] }] },
  ]);
}

function errorWhen() {
  return pick([
    { $gt: ['$.input.n', 2] },
    '$.input.flag',
    { $eq: ['$.with.k', 1] },
    { $lt: ['$.input.n', 1] },
    { $not: '$.input.flag' },
    { $exists: '$.input.tag' },
  ]);
}

function withQuery() {
  return pick([
    { k: '$.n' },
    { k: 1 },
    '$.items',
    { k: { $add: ['$.n', 1] }, f: '$.flag' },
    '$.missing',
    { k: '$.n', all: '$' },
    { k: '$.n', due: { '$date-add': ['2026-01-01', '$.delay'] } }, // the empty marker, handed to the mock
  ]);
}

function inputQuery() {
  return pick([
    '$.context.data',
    '$.context.input',
    '$.context.data.items',
    { n: '$.context.activation.visit', flag: '$.context.data.flag' },
    { n: { $count: '$.context.results[*]' } },
    '$.context.event',
    { n: '$.context.event.payload.n', ev: '$.context.event.type' },
    '$.state',
    { n: { $add: ['$.context.data.n', 'x'] } }, // fails at run time
    '$.context.activation',
    { ev: '$.event', p: '$.payload', key: '$.context.activation.key' },
    // the empty marker, refused by the reference's copy of the work input
    { n: '$.context.data.n', due: { '$date-add': ['2026-01-01', '$.context.data.delay'] } },
    [{ '$date-add': ['2026-01-01', { $if: ['$.context.data.flag', 'P1D', '$.context.none'] }] }],
  ]);
}

// A guard over data, the run's context or, in a wait, the event's payload.
function guard(inWait) {
  const k = pick([0, 1, 2, 3, 5]);
  const common = [
    { $gt: ['$.context.data.n', k] },
    { $lt: ['$.context.data.n', k] },
    { $eq: ['$.context.data.n', k] },
    '$.context.data.flag',
    { $not: '$.context.data.flag' },
    { $exists: '$.context.data.items[*]' },
    { $gt: [{ $count: '$.context.results[*]' }, 1] },
    { $eq: ['$.state[0]', '/states/a'] },
    { $ge: ['$.context.visits[*]', 2] },
    { $eq: ['$.context.event.type', 'go'] },
    { $exists: '$.context.activation' },
    { $eq: ['$.event', '@workflow/next'] },
    { $eq: ['$.payload', null] },
    { $gt: [{ $add: ['$.context.data.n', 'x'] }, 1] }, // throws at run time
    true,
    false,
  ];
  const waits = [
    '$.payload.ok',
    { $eq: ['$.payload.n', k] },
    { $gt: ['$.payload.n', '$.context.data.n'] },
    { $eq: ['$.event', 'event:go'] },
    { $not: '$.payload' },
  ];
  return inWait && chance(0.5) ? pick(waits) : pick(common);
}

// ---- documents
const NAMES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const ODD = ['x/y', 'm~n', '10', '2', 'Ab', 'é', ' ', '__proto__', 'constructor', 'toString', '0', '01', '-1', '4294967295'];

let used; // task name -> version the document declares

function version(task) {
  if (!used.has(task)) used.set(task, pick(['1', '2', 'v3']));
  return used.get(task);
}

function taskSpec() {
  const t = chance(0.05) ? pick(ODD_TASKS) : pick(TASKS);
  const spec = { task: t, version: version(t) };
  if (chance(0.3)) spec.with = withQuery();
  return spec;
}

// A DAG of one input, one to four tasks (fanning out from the input or
// chained), sometimes a const or query node, joined into the output.
function dagDoc() {
  const nodes = { in: { kind: 'input' } };
  const edges = [];
  const producers = ['in'];
  const consumed = new Set();
  const k = 1 + int(4);
  const ids = sample(['alpha', 'zeta', 'mid', 't1', 't2', 'b', '0'], k);
  for (const id of ids) {
    const t = pick(TASKS);
    const node = { kind: 'task', run: t, version: version(t) };
    if (chance(0.3)) node.with = withQuery();
    if (chance(0.25)) node.checkpoint = true;
    nodes[id] = node;
    const from = chance(0.6) ? 'in' : pick(producers);
    const edge = { from, to: id };
    if (chance(0.2)) edge.select = pick(['$.n', '$.items', '$.flag', '$.missing', '$', '$.items[*]']);
    edges.push(edge);
    consumed.add(from);
    producers.push(id);
  }
  // query nodes on the input or downstream of tasks, some failing
  for (const id of sample(['q', 'r', 'aq'], int(lean('dags', 4, 2)))) {
    nodes[id] = { kind: 'query', query: pick([{ n: { $count: '$.items[*]' } }, '$.n', { $add: ['$.n', 'x'] }, { $add: ['$.n', 'x'] }, { n: '$.n' },
      { n: '$.n', due: [{ '$date-add': ['2026-01-01', '$.delay'] }] }]), ...(chance(0.25) ? { checkpoint: true } : {}) };
    const from = chance(0.5) ? 'in' : pick(producers);
    edges.push({ from, to: id });
    consumed.add(from);
    producers.push(id);
  }
  if (chance(0.15)) {
    nodes.c = { kind: 'const', value: pick([1, { n: 4 }, null]) };
    producers.push('c');
  }
  if (chance(lean('dags', 0.3, 0.1))) {
    nodes.j = { kind: 'jslt', stylesheet: pick([
      { $jslt: '0.1', rules: [{ match: '$', body: { n: '$.n', twice: { $mul: ['$.n', 2] } } }] },
      { $jslt: '0.1', rules: [{ match: '$', body: { $add: ['$.n', 'x'] } }] },
      { $jslt: '0.1', rules: [{ match: '$', body: '$.items' }] },
    ]) };
    edges.push({ from: pick(producers.filter((p) => p !== 'c')), to: 'j' });
    producers.push('j');
  }
  if (chance(0.1)) {
    // a task nobody reads: the run still waits for it
    const t = pick(TASKS);
    nodes.dangling = { kind: 'task', run: t, version: version(t) };
    edges.push({ from: pick(producers.filter((p) => p !== 'c')), to: 'dangling' });
    consumed.add('dangling');
  }
  nodes.out = { kind: 'output' };
  const leaves = producers.filter((p) => p !== 'in' && !consumed.has(p));
  if (leaves.length === 1 && chance(0.6)) edges.push({ from: leaves[0], to: 'out' });
  else {
    for (const leaf of leaves) {
      const edge = { from: leaf, to: 'out', port: `p${leaf}` };
      if (chance(0.15)) edge.select = pick(['$.n', '$.missing']);
      edges.push(edge);
    }
  }
  // The DAG document's member order matters for failure order only; shuffle it.
  const shuffled = {};
  for (const id of sample(Object.keys(nodes), Object.keys(nodes).length)) shuffled[id] = nodes[id];
  return { $dag: '0.1', nodes: shuffled, edges };
}

// One scope of states (the workflow's or a flow's).
function scope(depth) {
  const n = 2 + int(depth === 0 ? 5 : 3);
  const pool = chance(0.1) ? [...NAMES, ...ODD] : NAMES;
  const names = sample(pool, n);
  const finals = new Set([names[n - 1]]);
  if (chance(0.3)) finals.add(pick(names));
  const states = {};
  const target = (i, auto) => {
    // mostly forward; a backward edge gets a limit on its source, usually
    const j = chance(0.72) ? i + 1 + int(n - i - 1 || 1) : int(n);
    const to = names[Math.min(j, n - 1)];
    if (auto && names.indexOf(to) <= i && chance(0.9)) limits.add(i);
    return to;
  };
  const limits = new Set();
  for (const [i, name] of names.entries()) {
    if (finals.has(name) && name !== names[0]) { put(states, name, { final: true }); continue; }
    if (finals.has(name) && chance(0.5)) { put(states, name, { final: true }); continue; }
    const kinds = profile === 'timers' || profile === 'events'
      ? ['work', 'choose', 'on', 'on', 'on', 'on']
      : ['work', 'work', 'work', 'choose', 'choose', 'on', 'on', 'on'];
    if (depth < 2) kinds.push('flow');
    const kind = pick(kinds);
    let s;
    if (kind === 'work') {
      s = { work: chance(lean('dags', 0.15, 0.65)) ? taskSpec() : { dag: dagDoc() }, then: target(i, true) };
      if (chance(0.4)) s.catch = target(i, true);
      if (chance(0.2)) s.input = inputQuery();
    }
    else if (kind === 'choose') {
      s = { choose: Array.from({ length: 1 + int(3) }, () => ({ guard: guard(false), to: target(i, true) })),
        otherwise: target(i, true) };
    }
    else if (kind === 'on') {
      s = { on: Array.from({ length: int(lean('timers', 2, 4)) }, () => {
        const b = { event: chance(0.97) ? pick(EVENTS) : pick([' go', 'event:go', '@workflow/next', 'go ']), to: target(i, false) };
        if (chance(0.35)) b.guard = guard(true);
        return b;
      }) };
      if (s.on.length === 0 || chance(lean('timers', 0.9, lean('events', 0.2, 0.5))))
        s.after = { ms: pick([0, 0, 5, 100, 100, 1000, 2500, 0.5, 99.5, 1e9]), to: target(i, true) };
    }
    else {
      s = { flow: scope(depth + 1), then: target(i, true) };
    }
    put(states, name, s);
  }
  for (const i of limits) states[names[i]].limit = 1 + int(4);
  for (const name of names) if (!states[name].limit && chance(0.12)) states[name].limit = 1 + int(3);
  return { initial: chance(0.9) ? names[0] : pick(names), states };
}

// ---- faults, so that compile errors are compared too
function breakDocument(doc, tasks) {
  const names = Object.keys(doc.states);
  const s = doc.states[pick(names)];
  switch (int(16)) {
    case 0: delete doc.revision; break;
    case 1: doc.initial = 'nowhere'; break;
    case 2: doc.extra = 1; break;
    case 3: s.limit = pick([0, -1, 1.5, '2']); break;
    case 4: s.bogus = true; break;
    case 5: if (s.then !== undefined) s.then = 'nowhere'; else s.final = false; break;
    case 6: if (s.choose) s.choose[0].guard = { $nosuch: 1 }; else if (s.work) s.input = { $nosuch: 1 }; else s.limit = 0; break;
    case 7: if (s.on) s.after = { ms: pick([-1, '5', null]), to: names[0] }; else s.work = {}; break;
    case 8: { const t = Object.keys(tasks)[0]; if (t) tasks[t].version = 'other'; break; }
    case 9: { const t = Object.keys(tasks)[0]; if (t) delete tasks[t]; break; }
    case 10: { const t = Object.keys(tasks)[0]; if (t) delete tasks[t].version; break; }
    case 11: doc.states = {}; break;
    case 12: if (s.work?.dag) s.work.dag.nodes.out2 = { kind: 'output' }; else if (s.on) s.on.push({ event: '', to: names[0] }); else s.choose = []; break;
    case 13: if (s.work?.dag) s.work.dag.edges.push({ from: 'out', to: 'in' }); else if (s.work) delete s.work.version; else s.on = 'go'; break;
    case 14: // an automatic cycle without a limit
      for (const name of names) delete doc.states[name].limit;
      doc.states[names[0]] = { choose: [{ guard: true, to: names[0] }], otherwise: names[0] };
      break;
    default: doc.$workflow = '0.1'; break;
  }
}

// ---- scenarios
function scenario() {
  profile = pick(['mixed', 'mixed', 'timers', 'events', 'dags']);
  used = new Map();
  const top = scope(0);
  const doc = { $workflow: '0.2', revision: `r/${int(3)}`, initial: top.initial, states: top.states };
  const tasks = {};
  for (const [t, v] of used) {
    const spec = { version: v };
    const out = outputQuery();
    if (out !== undefined) spec.output = out;
    if (chance(0.2)) {
      spec.error = pick(['card declined', 'boom', '']);
      if (chance(0.7)) spec.errorWhen = errorWhen();
    }
    put(tasks, t, spec);
  }
  if (chance(0.1)) tasks.unused = pick([{}, { output: 1 }]);
  // Long loops only where no work runs: a DAG that joins two tasks
  // doubles the data on each turn.
  if (!JSON.stringify(doc).includes('"work"')) {
    const widen = (states) => {
      for (const st of Object.values(states)) {
        if (st.limit !== undefined && chance(0.4)) st.limit = pick([20, 60]);
        if (st.flow) widen(st.flow.states);
      }
    };
    widen(doc.states);
  }
  if (chance(0.12)) breakDocument(doc, tasks);
  const s = { document: doc };
  if (chance(0.9)) s.input = data();
  if (chance(0.1)) s.runId = pick(['r1', 'run/2']);
  s.tasks = tasks;
  const calls = [];
  let now = profile === 'timers' ? pick([0, 1000, 1000, -5, 0.25]) : pick([undefined, 0, 1000, 1000]);
  for (let i = 0, n = 1 + int(lean('mixed', 5, 7)); i < n; i++) {
    const c = {};
    if (now !== undefined && chance(lean('timers', 0.95, 0.85))) {
      c.now = now;
    }
    if (chance(lean('events', 0.85, lean('timers', 0.3, 0.5)))) {
      c.event = { type: chance(0.95) ? pick([...EVENTS, 'nobody']) : pick(['constructor', '__proto__', ' go', 'event:go', '@workflow/next']) };
      if (chance(0.6)) c.event.payload = pick([{ ok: true, n: 3 }, { ok: false, n: 0 }, { n: 5 }, null, 7]);
    }
    if (chance(0.08)) c.expectedGeneration = pick(['previous', 'previous', 0, 1000]);
    if (chance(0.04)) c.input = data();
    else if (chance(0.04) && s.input !== null && typeof s.input === 'object' && !Array.isArray(s.input))
      c.input = Object.fromEntries(Object.entries(s.input).reverse()); // the same input, written otherwise
    if (chance(0.03)) c.runId = pick(['other', 'sim']);
    calls.push(c);
    // time moves on by a step a timer may or may not reach; now and then back
    if (now === undefined && chance(0.3)) now = 0;
    else if (now !== undefined) now += pick([0, 5, 99, 100, 101, 1000, 2500, 5000, -50, 0.5, 1e9]);
  }
  s.calls = calls;
  return s;
}

async function once(s) {
  try { return render(await simulate(JSON.parse(JSON.stringify(s)))); }
  catch (err) {
    if (err instanceof ScenarioError) return { refused: err.message };
    return { crash: String(err?.message ?? err) };
  }
}

const counts = { written: 0, refused: 0, crashed: 0, unstable: 0 };
const out = [];
for (let i = 0; i < count; i++) {
  const s = scenario();
  const first = await once(s);
  if (typeof first !== 'string') {
    counts[first.refused !== undefined ? 'refused' : 'crashed']++;
    continue;
  }
  if (first !== await once(s)) { counts.unstable++; continue; }
  out.push(JSON.stringify({ name: `seed${firstSeed}-${i}`, scenario: s, output: JSON.parse(first) }));
  counts.written++;
}
process.stdout.write(out.length ? `${out.join('\n')}\n` : '');
process.stderr.write(`seed ${firstSeed}: ${JSON.stringify(counts)}\n`);
