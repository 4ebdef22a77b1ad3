// Differential runs of the dag area: generates random jaren-dag documents
// and runs from a seed, asks the reference for each outcome exactly as
// gen-dag.mjs does (its own `outcome`) and writes one JSON line per case:
//
//   {"name", "doc", "registry"?, "input"?, "mocks"?, "seed"?, "out": golden}
//
// where the golden is what gen-dag.mjs records for a case ({compile, run?}),
// or {"crash": message} when the reference threw a plain JavaScript error
// rather than a coded one (not an answer to compare). engine/dag's
// TestDifferential reads such a file:
//
//   node conformance/differential-dag.mjs [--seed N] [--count K] [--family doc|jslt] > diff.jsonl
//   JETFLOW_DAG_DIFF=diff.jsonl go test ./engine/dag -run TestDifferential -v
//
// Documents mix task, query, jslt, const, input and output nodes, ports,
// selects, fan-out and fan-in, checkpoints and resumed runs, tasks that
// fail, queries that fail, cycles, and members missing, extra or of the
// wrong type at every level, under odd node ids. The family jslt runs one
// or two random stylesheets (rules, matches, modes, priorities, $apply in
// every form, envelopes) between the input and the output. Nothing here is committed
// as a golden: a class of disagreement found this way is written down as
// hand-picked cases in cases/dag/diff-*.json.
import { outcome } from './gen-dag.mjs';
import { options, generator } from './random.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const family = arg('family', 'doc');
const count = Number(arg('count', '1000'));

const { rnd, int, pick, chance } = generator(firstSeed);

// ---- names
const plainIds = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'in', 'out', 'q', 't', 'u', 'v', 'w', 'x', 'y', 'z',
  'alpha', 'zeta', 'mid', 'n1', 'n2', 'n10', 'n9', 'A', 'B', 'Z', '_'];
const oddIds = ['', ' ', '0', '1', '10', '9', '01', '-1', 'a/b', 'a~b', '~0', '~1', '/', '~', 'é', 'e\u0301',
  '日本', '😀', 'a b', 'a.b', '$x', '[0]', "it's", 'a"b', 'constructor', 'toString', 'hasOwnProperty',
  'valueOf', 'prototype', 'length', '__proto__', 'Z', 'z', '\u00e9', '\t', 'A\u0000B', '\ud83d\ude00x'];
// No run name is "__proto__": gen-dag.mjs's registries are plain objects,
// where that key sets the prototype.
const runNames = ['t', 'u', 'fetch', 'charge', 'a.b', 'x y', 'toString', 'constructor', 'é', '0', 'T', 'z'];
const versions = ['1', '2', 'v1', 'billing/3', ' 1', '1 ', '1.0'];
const badVersions = ['', ' ', '\t', '\n', '\u00a0', '\ufeff', '\u0085', '\u2028', '\u3000', '\u200b', '\u180e',
  '\u1680', '\u2000', '\u202f', '\u205f', '\u000b', '\u000c', 1, null, true, [], {}, ['1']];
const ports = ['a', 'b', 'c', 'x', 'zeta', 'alpha', '0', '1', '10', '9', 'p q', 'é', '__proto__', 'constructor',
  'toString', 'length'];

// ---- values
function scalar() {
  if (chance(0.1)) {
    return pick([5e-324, 1.7976931348623157e308, 0.1 + 0.2, 123456789012345680000, -1e-7, 2 ** 53 + 2, 1e-6, 1e20,
      'é', '😀', 'a\u0000b', '\u2028', '\ufeff', '"', '\\', '</script>']);
  }
  return pick([null, true, false, 0, -0, 1, -1, 1.5, 2, 10, 1e21, 'x', '', 'a b', 'zeta', '1', '2026-01-01']);
}
function jsonValue(depth = 0) {
  const r = int(depth > 2 ? 3 : 8);
  if (r < 3) return scalar();
  if (r < 5) {
    const n = int(4);
    return Array.from({ length: n }, () => jsonValue(depth + 1));
  }
  const o = {};
  const keys = ['a', 'b', 'x', 'zeta', 'alpha', '10', '9', 'n', 'k', '__proto__', 'constructor', 'é', '', '4294967295', '4294967294', '-1', '01'];
  for (let i = int(4); i > 0; i--) o[pick(keys)] = jsonValue(depth + 1);
  if (chance(0.5)) o.a = pick([1, 2, 'x', null, [1, 2], { b: 1 }]);
  return o;
}
function inputValue() {
  return pick([
    () => ({ a: 1, x: 'x', n: [1, 2, 3] }),
    () => ({ a: 'str', b: { c: 1 } }),
    () => ({ a: 2, zeta: 1, alpha: 2, '10': 3, '9': 4 }),
    () => jsonValue(),
    () => [1, 2, 3],
    () => null,
    () => 5,
    () => 'text',
  ])();
}

function mutateMember(obj, key, bad) {
  if (obj === null || typeof obj !== 'object') return;
  if (chance(0.5)) delete obj[key];
  else obj[key] = pick(bad);
}

// ---- queries
const goodQueries = ['$', '$.a', '$.x', '$.missing', '$.n', '$..a', '$.a.b', '$[0]', '$.*', 'literal',
  { $add: ['$.a', 1] }, { $mul: ['$.a', 2] }, { $count: '$.*' }, { $entries: '$' }, { $if: [{ $eq: ['$.a', 2] }, '$.x', '$.n'] },
  { $map: [['zeta', '$.a'], ['alpha', 1], ['10', 2], ['9', 3]] }, { zeta: '$.a', alpha: 2 },
  { $map: [['__proto__', '$.a'], ['constructor', 1], ['4294967295', 2], ['4294967294', 3]] }, '$.__proto__', '$.constructor',
  [1, '$.a', { $const: 'x' }], { $if: ['$.a', 'yes', 'no'] }, { $eq: ['$.a', 1] },
  { $for: { e: { $entries: '$' } }, $return: '$e.key' }, { $string: '$' }, { $seq: [1, 2, 3] },
  { $seq: [] }, { $const: { $add: 1 } }, { '$date-diff': ['2026-01-01', '$.missing', 'day'] },
  [{ '$date-diff': ['2026-01-01', '$.missing', 'day'] }, 1], { k: { '$date-diff': ['2026-01-01', '$.missing', 'day'] } },
  { $div: [1, 0] }, { $length: '$' }, { $sort: '$.*' }, { $concat: ['$.x', '-', '$.a'] }, null, 0, true, []];
// fail at run time on most inputs
const failingQueries = [{ $add: ['$', 1] }, { $add: ['$.x', 1] }, { $mul: ['$.b', 2] }, { $sub: ['$', '$'] },
  { $div: ['$.x', 2] }, { $add: ['$.*', 1] }, { $neg: '$.x' }, { $upper: ['$', '$'] }, { $sum: '$.x' },
  { $add: [{ '$date-diff': ['2026-01-01', '$.missing', 'day'] }, 1] }, { $x: 1 }, '$y'];
// refused at compile time
const badQueries = [{ $bogus: 1 }, { $add: [1] }, '$..[', '$[', { $for: 1 }, { $if: [1] },
  { $map: 1 }, { $let: { 1: 2 } }, { $const: 1, x: 2 }, { $add: [1, 2], $mul: [1, 2] }, '$.a[?(', { $entries: [] }];
function query() {
  const r = rnd();
  if (r < 0.72) return pick(goodQueries);
  if (r < 0.92) return pick(failingQueries);
  return pick(badQueries);
}

// ---- stylesheets
const goodSheets = [[], { $jslt: '0.1', rules: [] }, [{ match: '$..a', body: { $mul: ['$', 2] } }],
  [{ match: '$.*', body: { $string: '$' } }], [{ body: { wrapped: '$' } }],
  [{ match: '$..x', body: { $upper: '$' } }, { match: '$..a', body: { $add: ['$', 1] } }],
  [{ body: { $entries: { $apply: ['$'] } } }], [{ body: { $apply: ['$.*'] } }],
  [{ match: '$..a', body: { $add: ['$', 1] } }]];
const badSheets = [{ $jslt: '0.2' }, [{ body: 1, x: 2 }], [{ match: '$[', body: 1 }], [{ body: { $bogus: 1 } }],
  [{ match: '$', body: 1, priority: 'x' }], 'sheet', 1, null, [{ mode: 1, body: 1 }], { rules: [] }];
const failingSheets = [[{ body: { $add: ['$', 1] } }], [{ body: '$zz' }], [{ match: '$..x', body: { $add: ['$', 1] } }]];
function stylesheet() {
  const r = rnd();
  if (r < 0.7) return pick(goodSheets);
  if (r < 0.88) return pick(failingSheets);
  return pick(badSheets);
}

// ---- one document: a well-formed one, then a few faults on some
function genDoc() {
  const n = chance(0.15) ? 6 + int(8) : 2 + int(6);
  const ids = [];
  while (ids.length < n) {
    const id = chance(0.75) ? pick(plainIds) : pick(oddIds);
    if (!ids.includes(id)) ids.push(id);
  }
  const kinds = {};
  kinds[ids[0]] = chance(0.9) ? 'input' : 'const';
  kinds[ids[ids.length - 1]] = 'output';
  for (const id of ids.slice(1, -1)) {
    kinds[id] = pick(['task', 'task', 'task', 'task', 'query', 'query', 'jslt', 'const', 'input']);
  }
  const durable = chance(0.3);
  const nodes = {};
  const runs = new Set();
  for (const id of ids) {
    const kind = kinds[id];
    const decl = { kind };
    if (kind === 'task') {
      const run = chance(0.85) ? pick(runNames.slice(0, 4)) : pick(runNames);
      runs.add(run);
      decl.run = run;
      if (durable || chance(0.4)) decl.version = chance(0.9) ? pick(versions.slice(0, 3)) : pick(versions);
      if (chance(0.4)) decl.with = query();
    }
    if (kind === 'query') decl.query = query();
    if (kind === 'jslt') decl.stylesheet = stylesheet();
    if (kind === 'const') decl.value = jsonValue();
    if (durable && chance(0.45)) decl.checkpoint = true;
    else if (chance(0.05)) decl.checkpoint = false;
    if (chance(0.03)) decl.extra = 1;
    nodes[id] = decl;
  }
  // edges: each consumer gets one or more sources among earlier nodes
  const edges = [];
  for (let i = 1; i < ids.length; i++) {
    const id = ids[i];
    const kind = kinds[id];
    if (kind === 'input' || kind === 'const') continue;
    const pool = ids.slice(0, i).filter((s) => kinds[s] !== 'output');
    if (pool.length === 0) continue;
    const fanIn = chance(0.35) ? 2 + int(Math.min(3, pool.length)) : 1;
    const from = [];
    for (let k = 0; k < fanIn; k++) from.push(pick(pool));
    const usePorts = fanIn > 1 || chance(0.15);
    const used = [];
    for (const f of from) {
      const e = chance(0.5) ? { from: f, to: id } : { to: id, from: f };
      if (usePorts) {
        let p = pick(ports);
        if (used.includes(p)) p = `${p}${used.length}`;
        used.push(p);
        e.port = p;
      }
      if (chance(0.2)) e.select = query();
      if (chance(0.01)) e.extra = true;
      edges.push(e);
    }
  }
  const doc = { $dag: '0.1', nodes, edges };
  if (chance(0.3)) {
    // another top-level member order; the reference reads canonical text
    const o = {};
    for (const k of ['edges', 'nodes', '$dag']) o[k] = doc[k];
    Object.assign(doc, o);
  }
  if (chance(0.01)) doc.extra = 1;
  const faults = chance(0.6) ? 0 : chance(0.75) ? 1 : 2;
  for (let k = 0; k < faults; k++) {
    try {
      pick(mutations)(doc, ids, kinds);
    }
    catch { /* an earlier fault took away what this one changes */ }
  }
  if (chance(0.004)) return pick([null, [], 'dag', 1, true, [doc]]);
  return { doc, runs, ids };
}

const nonNode = (kinds) => (x) => kinds[x] !== 'input' && kinds[x] !== 'const';
const mutations = [
  (doc, ids) => { // a bad kind
    const d = doc.nodes[pick(ids)];
    mutateMember(d, 'kind', ['Task', '', 1, null, 'edge', 'TASK', ' task', 'input ', ['task']]);
  },
  (doc, ids) => { doc.nodes[pick(ids)].checkpoint = pick(['true', 1, null, 0, {}, []]); },
  (doc, ids) => { doc.nodes[pick(ids)] = pick([null, 'task', 1, [], [{ kind: 'task' }], true]); },
  (doc, ids, kinds) => { // a checkpoint in a document whose tasks may lack a version
    doc.nodes[pick(ids)].checkpoint = true;
  },
  (doc, ids, kinds) => {
    const t = ids.filter((x) => kinds[x] === 'task');
    if (t.length > 0) mutateMember(doc.nodes[pick(t)], 'run', ['', 1, null, [], ['t']]);
  },
  (doc, ids, kinds) => {
    const t = ids.filter((x) => kinds[x] === 'task');
    if (t.length > 0) doc.nodes[pick(t)].version = pick(badVersions);
  },
  (doc, ids, kinds) => {
    const t = ids.filter((x) => kinds[x] === 'task');
    if (t.length > 0) delete doc.nodes[pick(t)].version;
  },
  (doc, ids, kinds) => {
    const t = ids.filter((x) => ['const', 'query', 'jslt'].includes(kinds[x]));
    if (t.length === 0) return;
    const d = doc.nodes[pick(t)];
    delete d[{ const: 'value', query: 'query', jslt: 'stylesheet' }[d.kind] ?? 'value'];
  },
  (doc, ids) => { // a second output, or none
    const id = pick(ids);
    doc.nodes[id] = chance(0.6) ? { kind: 'output' } : { kind: 'task', run: 't' };
  },
  (doc, ids, kinds) => { // a cycle
    const a = pick(ids.filter(nonNode(kinds)));
    const b = pick(ids.filter((x) => x !== a && nonNode(kinds)(x)));
    if (a !== undefined && b !== undefined) doc.edges.push({ from: a, to: b, port: 'p1' }, { from: b, to: a, port: 'back' });
  },
  (doc, ids, kinds) => { // rewire a single unported edge from a later node: a cycle when that one is downstream
    const single = doc.edges.filter((e) => e.port === undefined
      && doc.edges.filter((f) => f.to === e.to).length === 1);
    if (single.length === 0) return;
    const e = pick(single);
    const later = ids.slice(ids.indexOf(e.to)).filter((x) => kinds[x] !== 'output');
    if (later.length > 0) e.from = pick(later);
  },
  (doc, ids, kinds) => { // a self loop
    const a = pick(ids.filter(nonNode(kinds)));
    if (a !== undefined) doc.edges.splice(int(doc.edges.length + 1), 0, { from: a, to: a });
  },
  (doc, ids) => { doc.edges.push({ from: pick(ids), to: pick(ids) }); },
  (doc, ids) => { doc.edges.push({ from: pick(['nope', 'IN', ...oddIds]), to: pick(ids) }); },
  (doc, ids) => { doc.edges.push({ from: pick(ids), to: pick(['nope', 'OUT', ...oddIds]) }); },
  (doc) => { // drop an edge: a node without inbound, or a fan-in missing a port
    if (doc.edges.length > 0) doc.edges.splice(int(doc.edges.length), 1);
  },
  (doc) => {
    if (doc.edges.length > 0) delete doc.edges[int(doc.edges.length)].port;
  },
  (doc) => {
    if (doc.edges.length === 0) return;
    const e = doc.edges[int(doc.edges.length)];
    if (e.port !== undefined) e.port = 'a';
    const f = doc.edges[int(doc.edges.length)];
    if (f.to === e.to) f.port = e.port ?? 'a';
  },
  (doc) => {
    if (doc.edges.length === 0) return;
    const e = doc.edges[int(doc.edges.length)];
    const r = int(3);
    if (r === 0) mutateMember(e, 'from', [1, null, [], {}]);
    else if (r === 1) mutateMember(e, 'to', [1, null, [], {}]);
    else e.port = pick(['', 1, null, [], {}, false]);
  },
  (doc) => {
    if (doc.edges.length > 0) doc.edges[int(doc.edges.length)] = pick([null, 1, 'a->b', [], ['a', 'b']]);
  },
  (doc) => { mutateMember(doc, '$dag', ['0.2', 0.1, '', null, '0.10', ' 0.1', 1]); },
  (doc) => { mutateMember(doc, 'nodes', [[], null, 'nodes', 1, [{ kind: 'input' }]]); },
  (doc) => { mutateMember(doc, 'edges', [{}, null, 'edges', 1, { 0: { from: 'a', to: 'b' } }]); },
  (doc, ids, kinds) => { // an edge into an input or const, or out of the output
    const into = ids.filter((x) => !nonNode(kinds)(x));
    if (into.length > 0 && chance(0.5)) doc.edges.push({ from: pick(ids), to: pick(into) });
    else doc.edges.push({ from: ids[ids.length - 1], to: pick(ids) });
  },
];

function mockFor() {
  const r = rnd();
  if (r < 0.3) return { echo: pick(['arg', 'with', 'input']) };
  if (r < 0.6) return { value: jsonValue() };
  if (r < 0.75) return { query: pick([...goodQueries.slice(0, 20), { $map: [['zeta', '$.input'], ['alpha', '$.with']] },
    { $add: ['$.input.a', 1] }, { $entries: '$.input' }, { $bogus: 1 }]) };
  return { error: pick(['boom', 'card declined', '', 'a\nb', 'é 😀', 'JF2006: nested']) };
}

function genCase(i) {
  const g = genDoc();
  const name = `s${firstSeed}-${i}`;
  if (g === null || typeof g !== 'object' || !Object.hasOwn(g, 'doc')) {
    return { name, doc: g, mocks: {} };
  }
  const c = { name, doc: g.doc };
  const nodes = g.doc.nodes !== null && typeof g.doc.nodes === 'object' ? Object.values(g.doc.nodes) : [];
  for (const decl of nodes) if (typeof decl?.run === 'string') g.runs.add(decl.run);
  if (chance(0.85)) {
    c.mocks = {};
    for (const run of g.runs) c.mocks[run] = mockFor();
    if (chance(0.8)) c.input = inputValue();
  }
  // an explicit registry: sometimes, and always when two nodes declare
  // different versions of one handler (the derived registry would refuse
  // one of them, where jetflow without a registry takes both)
  const declared = {};
  let conflict = false;
  for (const decl of nodes) {
    if (decl === null || typeof decl !== 'object' || typeof decl.run !== 'string') continue;
    if (typeof decl.version !== 'string') continue;
    if (Object.hasOwn(declared, decl.run) && declared[decl.run] !== decl.version) conflict = true;
    declared[decl.run] = decl.version;
  }
  if (conflict || chance(0.12)) {
    const reg = {};
    for (const run of g.runs) {
      if (chance(0.06)) continue; // JF0018
      reg[run] = Object.hasOwn(declared, run) && chance(0.8) ? declared[run] : pick([null, '1', '2', 'v1']);
    }
    if (chance(0.1)) reg.other = '1';
    c.registry = reg;
  }
  if (c.mocks !== undefined && chance(0.15)) {
    // a resumed run: values for checkpointed nodes, others, unknown ids
    const seedVals = {};
    for (const id of g.ids) if (chance(0.5)) seedVals[id] = jsonValue();
    if (chance(0.2)) seedVals.unknown = 1;
    c.seed = seedVals;
  }
  return c;
}

// ---- the jslt family: one random stylesheet between the input and the output
const matches = ['$', '$.a', '$..a', '$.*', '$[0]', '$..*', '$.a[*]', '$[*]', '$..x', "$['a']", '$.b.c', '$..[0]',
  '$[?(@.a)]', '$[?@.a > 1]', '$..[?(@ == 1)]', '$[-1]', '$[0:2]', '$.*.a', "$['__proto__']", '$..n[*]', '$.k.*'];
const bodies = ['$', { $apply: '$.*' }, { $apply: ['$.*', 'm'] }, { $apply: ['$..a'] }, [{ $apply: '$.*' }], { wrapped: '$' },
  { k: { $apply: '$.a' } }, { $add: ['$', 1] }, { $string: '$' }, { $entries: { $apply: ['$'] } },
  { $map: [['zeta', '$'], ['alpha', 1]] }, '$root', '$path', { $count: '$.*' }, { $upper: '$' }, { $seq: ['$', '$'] },
  { $if: [{ $eq: ['$', 1] }, 'one', '$'] }, { $apply: ['$root', 'n'] }, { $apply: '$root.a' }, 'lit', null,
  { $for: { e: { $entries: '$' } }, $return: { $apply: ['$e.value'] } }, [{ $apply: ['$.*', ''] }],
  { path: '$path', v: { $apply: '$.a' } }, { $apply: [{ $seq: [1, 2] }] }, { $apply: [] }, { $apply: ['$', 1] },
  { $apply: '$' }, { $apply: ['$.*', 'n'] }, { $apply: ['$.*', 'm', 'x'] }];
function rule() {
  const r = {};
  if (chance(0.7)) r.match = pick(matches);
  if (chance(0.3)) r.mode = pick(['', 'm', 'n', 'm']);
  if (chance(0.3)) r.priority = pick([-1, 0, 0.5, 2, 2, 1e9]);
  r.body = pick(bodies);
  if (chance(0.03)) r[pick(['extra', 'Match'])] = 1;
  if (chance(0.02)) delete r.body;
  if (chance(0.02)) r.mode = pick([1, null]);
  if (chance(0.02)) r.priority = pick(['1', null]);
  if (chance(0.02)) r.match = pick([1, '$[', 'a', { type: 'object' }]);
  return r;
}
function sheet() {
  const rules = Array.from({ length: int(5) }, rule);
  if (chance(0.7)) return rules;
  const env = { $jslt: '0.1', rules };
  if (chance(0.5)) env.unmatched = pick(['share', 'fresh', 'error', 'error', 'copy']);
  if (chance(0.4)) {
    env.modes = {};
    for (const m of ['m', 'n', '']) if (chance(0.5)) env.modes[m] = { unmatched: pick(['share', 'fresh', 'error']) };
  }
  if (chance(0.03)) env.$jslt = pick(['0.2', 0.1]);
  if (chance(0.03)) env.extra = 1;
  return env;
}
function genJsltCase(i) {
  const doc = { $dag: '0.1', nodes: { i: { kind: 'input' }, j: { kind: 'jslt', stylesheet: sheet() }, o: { kind: 'output' } },
    edges: [{ from: 'i', to: 'j' }, { from: 'j', to: 'o' }] };
  if (chance(0.2)) doc.nodes.o.checkpoint = true;
  if (chance(0.2)) doc.edges[0].select = pick(goodQueries);
  if (chance(0.15)) {
    // a second stylesheet reading the first one's result
    doc.nodes.k = { kind: 'jslt', stylesheet: sheet() };
    doc.edges[1] = { from: 'j', to: 'k' };
    doc.edges.push({ from: 'k', to: 'o' });
  }
  return { name: `j${firstSeed}-${i}`, doc, mocks: {}, input: jsonValue() };
}

for (let i = 0; i < count; i++) {
  const c = family === 'jslt' ? genJsltCase(i) : genCase(i);
  let out;
  try {
    out = await outcome(JSON.parse(JSON.stringify(c)));
  }
  catch (err) {
    const msg = String(err?.message ?? err);
    if (!msg.startsWith('unexpected non-coded error')) throw new Error(`${c.name}: ${err?.stack ?? err}`);
    out = { crash: msg.split('\n')[0] };
  }
  process.stdout.write(`${JSON.stringify({ ...c, out })}\n`);
}
