// Differential runs of workflow lowering and compilation: generates random
// jaren-workflow 0.2 documents from a seed, mostly near-valid with one or
// two defects, asks the reference (gen-workflow.mjs's run: lowerWorkflow,
// then compileWorkflow with the same registries) for each outcome and
// writes one JSON line per document:
//
//   {"name", "doc", "tasks"?, "out": golden}
//
// where the golden is what gen-workflow.mjs writes. A document on which
// the reference throws a plain, uncoded JavaScript error is written as
// {"name", "doc", "tasks"?, "out": {"crash": message}} and not compared.
// engine/workflow's TestDifferential reads such a file:
//
//   node conformance/differential-workflow.mjs --seed 1 --count 5000 > /tmp/wfdiff-1.jsonl
//   JETFLOW_WORKFLOW_DIFF=/tmp/wfdiff-1.jsonl go test ./engine/workflow -run TestDifferential -v
//
// Nothing here is committed as a golden: a class of disagreement found
// this way is written down as hand-picked cases in cases/workflow/diff-*.json.
import { run } from './gen-workflow.mjs';
import { options, generator } from './random.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const count = Number(arg('count', '1000'));

const { rnd, int, pick, chance } = generator(firstSeed);
// noise scales every chance of a defect: a clean document (noise near 0)
// reaches compilation and the lowered output, a noisy one the refusals
let noise = 1;
const oops = (p) => rnd() < p * noise;
const fine = (p) => rnd() >= (1 - p) * noise;

// define avoids the __proto__ setter, so odd names land as members.
function define(out, name, value) {
  Object.defineProperty(out, name, { value, enumerable: true, configurable: true, writable: true });
}

// ---- values of every JSON type, for mistyped members
function anyValue() {
  if (chance(0.2)) return oddValue();
  return pick([null, true, false, 0, 1, -1, 1.5, 2 ** 53, '', ' ', 'x', '\u00a0', '\ufeff', [], ['a'], {}, { a: 1 }, 'done',
    [null, 1, [2, [null, 'b']]], 1e21, 1e-7, 0.1, -1e-7, '\u0085', [{}], [[]], ['a', null]]);
}
// oddValue is JSON data whose canonical text is hard to get right:
// numbers at the edges of their shortest form, escapes, astral
// characters, integer-like member names in JavaScript's member order
function oddValue() {
  switch (int(6)) {
    case 0: return pick([5e-324, 1.7976931348623157e308, 1e21, 1e20, 123456789012345680000, 0.1 + 0.2, 1 / 3, -1e-7, 1e-6,
      2 ** 53 + 2, -(2 ** 31), 4294967296, 9007199254740993, 1.5e-10, 100, 0.000001, 1e300]);
    case 1: return pick(['\u0000', '\u001f', '\u007f', '\b\f\n\r\t', '"\\/', '\u2028\u2029', '😀', 'é', 'e\u0301', '\ud83d\ude00x',
      '</script>', '\u00ff', '\uffff', '\ufffe', 'ａ', '\ud800', 'a\udc00b', '\ude00\ud83d']);
    case 2: {
      const o = {};
      for (const k of ['b', '10', 'a', '2', '😀', 'ａ', '', '01', '4294967295', '4294967294', '-0', 'é', 'Z', '__proto__'])
        if (chance(0.4)) define(o, k, int(3));
      return o;
    }
    case 3: {
      let v = pick([1, 'x', null]);
      const n = chance(0.8) ? pick([3, 10, 50, 100]) : pick([250, 254, 255, 256, 257, 300]);
      for (let i = 0; i < n; i++) v = chance(0.5) ? [v] : { a: v };
      return v;
    }
    case 4: return 'x'.repeat(pick([0, 1, 100, 5000]));
    default: return [oddValue(), oddValue()];
  }
}

// ---- names: mostly plain, sometimes odd characters for pointer escapes,
// integer-like names for JavaScript's member order, prototype names
const plainNames = ['a', 'b', 'c', 'd', 'e', 'start', 'done', 'check', 'work', 'wait', 'fail', 'next'];
const oddNames = ['', '😀', '\ud83d', 'ａ', '\uffff', 'e\u0301', '\u0000', '\u001f', '\u007f', 'x y', 'a/b', '~', '~0', '~1', 'a~1b', '/', 'é', '😀', '1', '0', '10', '2', '01', '-1', '4294967295',
  '__proto__', 'constructor', 'toString', 'hasOwnProperty', ' ', '\t', 'A', 'states', 'flow', 'initial', '$', '@workflow/next',
  'event:x', '%', '\\', '"', 'a.b', '[0]', 'ａ', '\u2028', 'Z', 'zz', '\u00a0'];
const stateName = () => (chance(0.85) ? pick(plainNames) : pick(oddNames));

// ---- Jaren JSON Queries for guards, inputs, with and select
function query(valid = 0.85) {
  if (fine(valid)) {
    return pick([
      '$.context.data.ready', '$.context.data', '$.context.input.x', '$.payload.accept', '$.context.visits',
      '$.context.activation.key', '$.data', '$.key', '$', '$.context.data.n', '$..x', '$.state[0]', '$.a[*]',
      { $eq: ['$.context.data.n', 2] }, { $not: '$.context.data.ready' }, { $and: ['$.a', '$.b'] },
      { $or: [true, '$.x'] }, { $const: 1 }, { x: '$.context.data', y: 2 }, true, false, null, 1, 'plain text',
      { $const: oddValue() }, oddValue(), { $eq: ['$.a', oddValue()] }, '$["a b"]', "$['é']", '$.a[0:2]', '$.a[-1]',
      { $if: ['$.context.event', '$.context.event.type', null] }, { $sum: '$.a[*]' }, { $in: ['$.a', ['x', 'y']] },
      ['$.a', '$.b'], { $gt: ['$.context.visits.a', 1] }, { $if: ['$.x', 1, 2] }, { $count: '$.a[*]' },
    ]);
  }
  return pick([{ $bogus: 1 }, '$.a[', '$..', { $eq: 1 }, { $and: 3 }, '$[?(', { $const: 1, $eq: [1, 1] },
    { $if: [1] }, { $not: [1, 2] }, '$.a.', { '': '$.x[' }, { $add: 'x' }, { $eq: [1] }, { $const: [] },
    { $and: [] }, { a: { $bogus: [] } }, '', ' ', {}, [], { $const: { $bogus: 1 } }, '$.', '@', '$.a b', { $: 1 },
    { $jslt: 1 }, { 'a.b': '$.x[' }, [[{ $bogus: 1 }]], ['$.x', { $nope: 1 }], { $count: [1, 2] }, { $if: 'x' }, '$..[', '$.a[?(@.b', '$["a"', '$.a[-]']);
}

// ---- DAG documents
const nodeNames = ['input', 'output', 'task', 'q', 'c', 'j', 't1', 't2', 'n/1', '~x', 'é', '0', '1', '😀', 'ａ', ' ', '',
  '__proto__', 'a~1b', '10', '2', 'x y', "it's"];
const taskNames = ['prepare', 'charge', 'review', 'notify', 'a', 'b', 'x y', '__proto__', 'constructor', 'é'];
const versions = ['1', '2', 'v1', 'billing/3', '1.0.0'];
function stylesheet() {
  if (chance(0.85)) {
    return pick([[{ match: '$', body: ['ul', {}, '$.x'] }], [{ match: '$..price', body: { $mul: ['$', 1.21] } }],
      [{ match: '$', body: { toc: [{ $apply: ['$.sections[*]', 'toc'] }] } }, { mode: 'toc', match: '$.sections[*]', body: { ref: '$.id' } }],
      [{ match: '$', body: oddValue() }]]);
  }
  return pick([5, 'x', [{ match: 5 }], {}, [], [{ match: '$[' }], [{ match: '$', body: { $bogus: 1 } }], [{ body: 1 }],
    [{ match: '$', body: 1, extra: 2 }], [{ mode: 5, match: '$', body: 1 }], null, { $jslt: '0.1', rules: [] },
    { $jslt: 1, rules: [{ match: '$', body: 1 }] }, { $jslt: '0.1', rules: [{ match: '$', body: 1 }], extra: 1 }, [{ match: '$', body: '$.a[' }]]);
}
function dagDoc() {
  const doc = { $dag: '0.1', nodes: {}, edges: [] };
  const names = ['input'];
  define(doc.nodes, 'input', { kind: 'input' });
  const n = 1 + int(4);
  for (let i = 0; i < n; i++) {
    const name = chance(0.8) ? `t${i}` : pick(nodeNames);
    const kind = pick(['task', 'task', 'task', 'query', 'const', 'jslt']);
    let node;
    switch (kind) {
      case 'task':
        node = { kind, run: pick(taskNames), ...(chance(0.85) ? { version: pick(versions) } : {}) };
        if (chance(0.3)) node.with = query();
        break;
      case 'query': node = { kind, query: query() }; break;
      case 'const': node = { kind, value: anyValue() }; break;
      default: node = { kind, stylesheet: stylesheet() };
    }
    if (chance(0.2)) node.checkpoint = fine(0.8) ? true : pick([false, 'yes', 1]);
    if (!names.includes(name)) names.push(name);
    define(doc.nodes, name, node);
  }
  define(doc.nodes, 'output', { kind: 'output', ...(chance(0.2) ? { checkpoint: pick([false, true]) } : {}) });
  names.push('output');
  // a chain from input through every node to output, some fan-in with ports
  const inner = names.filter((x) => x !== 'input' && x !== 'output');
  let prev = 'input';
  for (const x of inner) {
    if (doc.nodes[x].kind === 'const') continue;
    doc.edges.push({ from: prev, to: x });
    prev = x;
  }
  if (chance(0.3) && inner.length > 1) {
    doc.edges.push({ from: prev, to: 'output', port: 'a' });
    doc.edges.push({ from: pick(['input', ...inner]), to: 'output', port: chance(0.9) ? 'b' : 'a' });
  }
  else doc.edges.push({ from: prev, to: 'output', ...(chance(0.1) ? { select: query() } : {}) });
  if (oops(0.25)) mutateDag(doc, names);
  return doc;
}
function mutateDag(doc, names) {
  switch (int(16)) {
    case 14: {
      // a cycle behind all-ported fan-in, so that only the cycle check refuses it
      const inner = names.filter((x) => doc.nodes[x]?.kind === 'task' || doc.nodes[x]?.kind === 'query');
      if (inner.length < 1) break;
      const a = inner[0];
      const b = pick(inner);
      doc.edges = doc.edges.filter((e) => e.to !== a);
      doc.edges.push({ from: 'input', to: a, port: 'in' }, { from: b, to: a, port: 'back' });
      break;
    }
    case 15: define(doc.nodes, pick(names), pick([{ kind: 'query', query: null }, { kind: 'const', value: null },
      { kind: 'task', run: 'a', version: 1 }, { kind: 'output', checkpoint: null }, { kind: 'input', extra: 1 }])); break;
    case 0: doc.$dag = pick(['0.2', 0.1, null]); break;
    case 1: delete doc.$dag; break;
    case 2: doc.nodes = pick([[], 'x', null, [{ kind: 'output' }]]); break;
    case 3: doc.edges = pick([{}, 'x', null]); break;
    case 4: delete doc.edges; break;
    case 5: doc.edges.push({ from: pick(names), to: pick(names) }); break;
    case 6: doc.edges.push({ from: 'nope', to: pick(names) }); break;
    case 7: doc.edges.push(pick([5, { from: 1, to: 'output' }, { from: 'input' }, { from: 'input', to: 'output', port: '' },
      { from: 'input', to: 'output', port: 5 }, { from: 'input', to: 'output', port: null }, { from: 'input', to: 'output', select: null },
      { from: 'input', to: 'output', extra: 1 }, null])); break;
    case 8: define(doc.nodes, pick(['output2', 'out']), { kind: 'output' }); break;
    case 9: delete doc.nodes.output; break;
    case 10: define(doc.nodes, pick(names), pick([{ kind: 'nope' }, 5, { kind: 'task' }, { kind: 'task', run: '' },
      { kind: 'task', run: 'a', version: ' ' }, { kind: 'query' }, { kind: 'const' }, { kind: 'jslt' }])); break;
    case 11: doc.extra = 1; break;
    case 12: if (doc.edges.length) doc.edges.push({ ...doc.edges[doc.edges.length - 1] }); break;
    default: if (doc.edges.length > 1) doc.edges.push({ from: doc.edges[doc.edges.length - 1].to, to: doc.edges[0].to }); break;
  }
}

// ---- state declarations
function limit() {
  return fine(0.95) ? pick([1, 2, 3, 5, 100]) : pick([0, -1, 1.5, '2', null, 2 ** 53, 2 ** 53 - 1, true, [], 1e300]);
}
// target picks a name in scope, sometimes one that is not
// (mostly one declared after the current state, so that not every
// document is an unbounded cycle)
let current = 0;
function target(scope) {
  const later = scope.slice(current + 1);
  if (later.length && chance(0.6)) return pick(later);
  if (fine(0.9)) return pick(scope);
  return chance(0.6) ? stateName() : anyValue();
}
function workState(scope) {
  const s = {};
  if (chance(0.75)) {
    const work = { task: pick(taskNames), version: pick(versions) };
    if (chance(0.3)) work.with = query();
    if (oops(0.1)) {
      switch (int(7)) {
        case 0: work.task = anyValue(); break;
        case 1: work.version = anyValue(); break;
        case 2: delete work.version; break;
        case 3: work.extra = 1; break;
        case 4: work.dag = dagDoc(); break;
        case 5: delete work.task; break;
        default: work.version = pick([' ', '\u00a0', '\ufeff', '\u0085', '\u3000', '\u2029', '\u180e', '\u200b']);
      }
    }
    s.work = work;
  }
  else {
    s.work = { dag: dagDoc() };
    if (oops(0.05)) s.work.extra = pick([1, 'x']);
    if (oops(0.03)) s.work.dag = anyValue();
  }
  if (oops(0.03)) s.work = anyValue();
  if (fine(0.98)) s.then = target(scope);
  if (chance(0.3)) s.catch = target(scope);
  if (chance(0.3)) s.input = chance(0.1) ? null : query();
  return s;
}
function chooseState(scope) {
  const n = fine(0.95) ? 1 + int(3) : 0;
  const choose = [];
  for (let i = 0; i < n; i++) {
    let b = { guard: query(), to: target(scope) };
    if (oops(0.05)) b = pick([5, 'a', { to: pick(scope) }, { guard: true }, { guard: true, to: pick(scope), event: 'x' }, null]);
    choose.push(b);
  }
  const s = { choose };
  if (oops(0.03)) s.choose = anyValue();
  if (fine(0.98)) s.otherwise = target(scope);
  return s;
}
function onState(scope) {
  const n = int(4);
  const on = [];
  for (let i = 0; i < n; i++) {
    let b = { event: fine(0.97) ? pick(['approve', 'retry', 'x', 'a b', 'é', '@workflow/next']) : chance(0.3) ? pick([' ', '\u3000', '\u180e', '']) : anyValue(), to: target(scope) };
    if (chance(0.4)) b.guard = query();
    if (oops(0.04)) b = pick([5, { event: 'x' }, { to: pick(scope) }, { event: 'x', to: pick(scope), after: 1 }]);
    on.push(b);
  }
  const s = { on };
  if (oops(0.03)) s.on = anyValue();
  if (chance(0.5) || n === 0) {
    let after = { ms: fine(0.9) ? pick([0, 1, 1000, 60000, 0.5, 1e21]) : pick([-1, '5', null, 1e300, 2 ** 53, -0.5]), to: target(scope) };
    if (oops(0.05)) after = pick([5, {}, { ms: 1 }, { ms: 1, to: pick(scope), extra: 1 }, []]);
    s.after = after;
  }
  return s;
}
function finalState() {
  return { final: fine(0.97) ? true : pick([false, 1, 'true', null]) };
}

let budget = 0;
// body generates a {initial, states} scope; depth is its nesting
function body(depth) {
  const big = depth === 0 && chance(0.05);
  const n = 1 + int(big ? 40 : depth === 0 ? 7 : 4);
  const names = [];
  for (let i = 0; i < n; i++) {
    const name = big && chance(0.7) ? `n${int(60)}` : stateName();
    if (!names.includes(name)) names.push(name);
  }
  const states = {};
  let finals = 0;
  for (const [i, name] of names.entries()) {
    current = i;
    let s;
    const roll = rnd();
    if (roll < 0.3) s = workState(names);
    else if (roll < 0.45) s = chooseState(names);
    else if (roll < 0.6) s = onState(names);
    else if (roll < 0.7 && depth < 3 && budget-- > 0) {
      const then = target(names);
      s = { flow: body(depth + 1), then };
    }
    else { s = finalState(); finals++; }
    if (chance(noise < 1 ? 0.7 : 0.45)) s.limit = limit();
    if (oops(0.05)) s = mutateState(s, names);
    define(states, name, s);
  }
  if (finals === 0 && chance(0.7)) define(states, 'end', { final: true });
  const out = { initial: fine(0.95) ? names[0] : target(names), states };
  if (oops(0.02)) out.initial = anyValue();
  if (oops(0.02)) delete out.initial;
  return out;
}
// integer-like names come first in JavaScript's member order, so that the
// unknown member refused first is not the first in canonical order
const oddMembers = ['__proto__', 'kind', 'id', 'parent', '', 'constructor', 'Then', 'then ', 'final', 'output', '0', '10', '2',
  '01', '-1', '4294967294', '4294967295'];
function mutateState(s, names) {
  switch (int(12)) {
    case 10: if (s && typeof s === 'object') define(s, pick(oddMembers), pick(names)); break;
    case 11: {
      // an odd member one level down: in work, a branch, the delay
      const inner = [s.work, s.after, ...(Array.isArray(s.choose) ? s.choose : []), ...(Array.isArray(s.on) ? s.on : [])]
        .filter((x) => x && typeof x === 'object' && !Array.isArray(x));
      if (inner.length) define(pick(inner), pick(oddMembers), 1);
      break;
    }
    case 8: return anyValue();
    case 9: if (s.flow && typeof s.flow === 'object') define(s.flow, pick(['extra', 'then', 'limit', '$workflow', '0', '10', 'revision']), pick(names)); break;
    case 0: s.final = true; break;
    case 1: s.extra = 1; break;
    case 2: s.then = pick(names); break;
    case 3: s.otherwise = pick(names); break;
    case 4: s.on = []; break;
    case 5: s.catch = pick(names); break;
    case 6: s.input = query(); break;
    default: s.after = { ms: 1, to: pick(names) };
  }
  return s;
}

// deepFlow nests flows past the depth bound or right up to it
function deepFlow(depth) {
  let inner = { initial: 'f', states: { f: { final: true } } };
  for (let i = 0; i < depth; i++) inner = { initial: 's', states: { s: { flow: inner, then: 'e' }, e: { final: true } } };
  return inner;
}

function workflow() {
  budget = 4;
  noise = chance(0.4) ? 0.05 : 1;
  const b = body(0);
  if (chance(0.01)) Object.assign(b, deepFlow(pick([62, 63, 64, 65])));
  const doc = { $workflow: '0.2', revision: fine(0.97) ? pick(['r/1', 'review/1', 'x']) : pick(['', ' ', 1, null, '\t', '\u00a0', '\u3000', '\ufeff', '\u2028', '\u180e', '\u200b', '\u0085']), ...b };
  if (oops(0.015)) doc.$workflow = pick(['0.1', 0.2, null, '0.2 ']);
  if (oops(0.01)) delete doc.$workflow;
  if (oops(0.01)) delete doc.revision;
  if (oops(0.03)) define(doc, pick(['extra', 'version', '$schema', 'flow', 'limit', '__proto__', '', '0', '10', '4294967295']), 1);
  if (oops(0.02)) doc.states = pick([{}, [], 'x', null]);
  if (oops(0.005)) return anyValue();
  return doc;
}

// tasks: usually the automatic registry; sometimes an explicit one that
// lacks a task, names it bare, or at another version
function tasksFor(doc) {
  if (!chance(0.15)) return undefined;
  const out = {};
  for (const name of taskNames) {
    if (chance(0.6)) define(out, name, chance(0.8) ? pick(versions) : chance(0.9) ? null : pick(['', ' ', '\u0085', '\ufeff']));
  }
  return out;
}

for (let i = 0; i < count; i++) {
  const doc = workflow();
  const tasks = tasksFor(doc);
  const c = { name: `s${firstSeed}-${i}`, doc, ...(tasks === undefined ? {} : { tasks }) };
  let out;
  try {
    out = await run(c);
    const errs = [out.lower?.error, out.compile?.error].filter(Boolean);
    if (errs.some((e) => e.code === null)) out = { crash: errs.find((e) => e.code === null).message };
  }
  catch (err) {
    out = { crash: String(err?.message ?? err) };
  }
  process.stdout.write(JSON.stringify({ ...c, out }) + '\n');
}
