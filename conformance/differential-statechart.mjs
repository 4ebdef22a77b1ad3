// Differential runs of the statechart area: generates random jaren-fsm 0.2
// charts and operation sequences from a seed, runs each through the
// reference exactly as gen-statechart.mjs does (its own runCase) and writes
// one JSON line per case:
//
//   {"family", "name", "chart", "options", "ops", "compile", "results"}
//
// which is a golden of cases/statechart with its family, or
// {"family", "name", "crash"} when the reference answered with a plain
// JavaScript error rather than a coded one (not an answer to compare).
// engine/statechart's TestDifferential reads such a file
// (JETFLOW_SC_DIFF=path go test ./engine/statechart -run TestDifferential).
//
//   node conformance/differential-statechart.mjs [--seed N] [--count K] [--family F,...] > diff.jsonl
//
// Families (each gets --count cases):
//   run       well-formed charts (compound, parallel, history, final,
//             guards, effects, eventless, done and timed transitions)
//             driven by starts, known and unknown events, advances,
//             restores, final and events
//   compile   the same charts with one to three defects: members missing,
//             unknown or mistyped at every level, bad targets and parents,
//             duplicate ids, conflicting types and triggers
//   snapshot  well-formed charts driven by snapshots: the states reached,
//             then altered (configurations, history records, timers,
//             counters, time, unknown members)
//   order     charts with and without defects, and snapshots, whose
//             objects' members are shuffled and read as written
//   lowered   the charts lowerWorkflow makes of well-formed workflows
//             (work, choose, on with guards and after, nested flows,
//             finals, limits), driven by the bridge's events, external
//             events, clock steps and advances with workflow contexts
// The cases of the other families are canonicalized before the reference
// runs them, so that each reads its objects in Keys order. Nothing here is committed as a golden: a class of
// disagreement found this way is written down as hand-picked cases in
// cases/statechart/diff-*.json.
import { runCase, runOp } from './gen-statechart.mjs';
import { compileStatechart, lowerWorkflow } from '@jarenjs/flow';
import { canonicalizeJson } from '@jarenjs/json/canonical';
import { options, generator } from './random.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const count = Number(arg('count', '1000'));
const families = arg('family', 'run,compile,snapshot,order,lowered').split(',');
for (const f of families) {
  if (!'run,compile,snapshot,order,lowered'.split(',').includes(f)) throw new Error(`unknown family ${f}: one of run,compile,snapshot,order,lowered`);
}

const { rnd, int, pick, chance } = generator(firstSeed);
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
// Sets an own member, even one named __proto__ (which JSON.parse makes an
// own member too).
const own = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
function shuffle(a) {
  const out = [...a];
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// Ids include array-index names, which JavaScript orders first in an object.
const idPool = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'k', 'm', 'n', 'p', 'q', 'r', 's', 'w',
  '0', '1', '2', '10', '9', 'B', 'x y', 'é', 'a/b', '~1', '__proto__', 'toString', 'constructor',
  'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'b8', 'b9'];
const eventPool = ['go', 'stop', 'x', 'back', ''];
const values = [null, true, false, 0, 1, 2, 3, -1, 1.5, 'x', '', 'go', [], [1, 2], [1], {}, { ok: true }, { ok: false },
  { flag: true }, { flag: false, ok: 1 }, { list: [1, 2] }, { ok: [1, 2] }];
function guardFor(ids) {
  return pick([
    '$.payload.ok', '$.context.flag', '$.payload', '$.context', '$.payload[*]', '$.context.list[*]',
    { $eq: ['$.event', 'go'] }, { $eq: ['$.event', null] }, { $eq: ['$.state[0]', pick(ids)] },
    { $gt: [{ $add: ['$.payload', 1] }, 2] }, { $not: '$.payload.ok' }, { $exists: '$.context.flag' },
    { $contains: ['$.state', pick(ids)] }, { $lt: [{ $count: '$.state' }, 2] },
    false, true, 0, 1, 'abc', null, { $or: ['$.payload.ok', '$.context.flag'] },
    { $add: ['$.payload', '$.context'] }, { $sum: '$.payload' }, { $substring: ['$.payload', 1] }, { $lower: '$.payload' },
    { $div: [1, '$.payload'] }, { $string: '$.payload' }, { $number: '$.context' }, { $concat: ['$.payload', 'x'] },
    { $gt: ['$.payload', '$.context'] }, { $count: '$.state' }, '$$', '$.state',
  ]);
}
// Queries the query engine refuses, for guards (JF0007) and effect withs
// (JF0009, whose message carries the query's own).
function badQuery() {
  return pick([{ $bogus: 1 }, { $eq: 1 }, '$.[', { $and: [] }, { a: 1, $eq: [1, 1] }, { $add: [] }, '$..', "$['a",
    { $let: 1 }, { $matches: ['$.payload', '['] }, { $join: ['$.payload', ','] }, { $keys: '$.payload' },
    { $if: [1] }, { $eq: [1, { $nosuch: 2 }] }, { $add: [1, 2, 3] }, '$.a[', { $regex: 1 }]);
}
function effectList(tag) {
  const out = [];
  for (let i = int(3); i > 0; i--) {
    const e = { run: `${tag}${i}` };
    if (chance(0.5)) e.with = pick(['$.state', '$.event', '$.payload', '$', '$.context.list[*]', '$.context.nothing',
      { $add: ['$.payload', 1] }, null, 1, { $count: '$.state' }]);
    out.push(e);
  }
  return out;
}

// A well-formed chart: a random tree (declared in shuffled order at times),
// history children under some composite states, and transitions of every
// trigger. Returns the document and the facts the op generators use.
function genChart() {
  const n = chance(0.1) ? 10 + int(30) : 2 + int(9);
  const ids = shuffle(idPool).slice(0, n);
  const parent = [-1];
  const leafOnly = new Set();
  for (let i = 1; i < n; i++) {
    const opts = [-1];
    for (let j = 0; j < i; j++) if (!leafOnly.has(j)) opts.push(j);
    parent.push(chance(0.25) ? -1 : pick(opts));
    if (chance(0.2)) leafOnly.add(i);
  }
  const kids = ids.map((_, i) => parent.flatMap((p, j) => (p === i ? [j] : [])));
  const kind = ids.map((_, i) => {
    if (kids[i].length) return chance(0.3) ? 'parallel' : 'compound';
    return chance(0.2) ? 'final' : 'atomic';
  });
  const decls = ids.map((id, i) => ({ id }));
  for (let i = 0; i < n; i++) {
    const d = decls[i];
    if (parent[i] >= 0) d.parent = ids[parent[i]];
    if (kind[i] === 'compound') d.initial = ids[pick(kids[i])];
    if (kind[i] === 'parallel') d.type = 'parallel';
    if (kind[i] === 'final') {
      if (chance(0.7)) d.final = true;
      else d.type = 'final';
    }
    if (chance(0.15)) d.type = kind[i];
    if (chance(0.15)) d.entry = effectList(`in-${d.id}-`);
    if (chance(0.15)) d.exit = effectList(`out-${d.id}-`);
  }
  // history pseudo-states under composite states
  const histories = [];
  for (let i = 0; i < n; i++) {
    if (!kids[i].length || !chance(0.35)) continue;
    const hid = `h${ids[i]}${histories.length}`;
    const h = { id: hid, parent: ids[i], history: pick(['shallow', 'deep']) };
    if (chance(0.2)) h.type = 'history';
    histories.push(h);
    decls.push(h);
    kind.push('history');
    ids.push(hid);
    parent.push(i);
  }
  const all = [...ids];
  const roots = ids.filter((_, i) => parent[i] < 0);
  const sources = all.filter((_, i) => kind[i] !== 'final' && kind[i] !== 'history');
  const composite = all.filter((_, i) => kind[i] === 'compound' || kind[i] === 'parallel');
  const within = (a, b) => {
    for (let x = all.indexOf(a); x >= 0; x = parent[x]) if (all[x] === b) return true;
    return false;
  };
  const transitions = [];
  const m = int(2 * all.length + 2);
  for (let k = 0; k < m && sources.length; k++) {
    const from = pick(sources);
    const t = { from, to: pick(all) };
    const r = rnd();
    if (r < 0.45) t.event = pick(eventPool);
    else if (r < 0.52) t.event = null;
    else if (r < 0.72) t.after = chance(0.95) ? pick([0, 5, 10, 10, 2.5, 100]) : pick([1e308, Number.MAX_VALUE, 2 ** 53, 0.1]);
    else if (r < 0.82 && composite.includes(from)) t.done = true;
    else if (r < 0.86) t.always = true;
    if (chance(0.12)) {
      const inside = all.filter((id) => within(id, from));
      t.type = 'internal';
      t.to = pick(inside.length ? inside : [from]);
    }
    else if (chance(0.05)) t.type = 'external';
    if (chance(t.always ? 0.8 : 0.3)) t.guard = guardFor(all);
    if (chance(0.2)) t.effects = effectList(`t${k}-`);
    transitions.push(t);
  }
  const states = shuffle(decls).map((d) => (Object.keys(d).length === 1 && chance(0.6) ? d.id : d));
  const order = chance(0.5) ? states : decls.map((d) => states.find((s) => (s.id ?? s) === d.id));
  const doc = { $fsm: '0.2', initial: pick(roots), states: order, transitions };
  return { doc, ids: all, kind, parent, histories: histories.map((h) => h.id), transitions };
}

// ---- defects for the compile family
const junk = () => pick([null, true, 0, 5, -1, 1.5, '', 'x', [], ['a'], {}, { id: 'a' }, 'nope']);
function mutateDoc(doc, facts) {
  const ids = facts.ids;
  const st = () => int(doc.states.length);
  const tr = () => int(doc.transitions.length);
  const asObj = (i) => {
    if (typeof doc.states[i] === 'string') doc.states[i] = { id: doc.states[i] };
    return doc.states[i];
  };
  const r = int(40);
  switch (r) {
    case 0: delete doc[pick(['$fsm', 'initial', 'states', 'transitions'])]; break;
    case 1: doc.$fsm = pick(['0.1', 0.2, null, '0.2 ', '']); break;
    case 2: own(doc, pick(['extra', '$schema', '0', 'version', 'id', '__proto__']), junk()); break;
    case 3: doc.states = pick([[], {}, 'a', null, [null]]); break;
    case 4: doc.transitions = pick([{}, null, 'x', 5]); break;
    case 5: doc.initial = pick(['nope', 5, null, '', ...ids]); break;
    case 6: doc.states[st()] = junk(); break;
    case 7: { const s = asObj(st()); delete s.id; break; }
    case 8: { const s = asObj(st()); s.id = pick([5, '', null, ['a']]); break; }
    case 9: { const s = asObj(st()); own(s, pick(['name', 'on', 'states', 'after', 'children', 'Id', '__proto__']), junk()); break; }
    case 10: { const s = asObj(st()); s.parent = pick(['', 5, null, 'nope', s.id, ...ids]); break; }
    case 11: { const s = asObj(st()); s.initial = pick([5, null, 'nope', '', ...ids]); break; }
    case 12: { const s = asObj(st()); s.type = pick(['weird', 5, null, 'atomic', 'compound', 'parallel', 'final', 'history']); break; }
    case 13: { const s = asObj(st()); s.history = pick(['both', true, 'deep', 'shallow', null, '']); break; }
    case 14: { const s = asObj(st()); s.final = pick(['yes', 1, true, false, null]); break; }
    case 15: { const s = asObj(st()); s[pick(['entry', 'exit'])] = pick([{}, [5], [{ run: '' }], [{ run: 'x', with: badQuery() }],
      [{ run: 'x', extra: 1 }], [{}], null, [{ run: 5 }], [{ run: 'ok' }, { run: 'bad', with: { $eq: 1 } }]]); break; }
    case 16: { const i = st(); const j = st(); doc.states[i] = clone(doc.states[j]); break; }
    case 17: { const s = asObj(st()); s.id = pick(ids); break; }
    case 18: if (doc.transitions.length) doc.transitions[tr()] = junk(); break;
    case 19: if (doc.transitions.length) doc.transitions[tr()][pick(['from', 'to'])] = pick(['nope', 5, null, '', undefined]); break;
    case 20: if (doc.transitions.length) delete doc.transitions[tr()][pick(['from', 'to'])]; break;
    case 21: if (doc.transitions.length) own(doc.transitions[tr()], pick(['name', 'target', 'on', 'cond', 'delay', '__proto__']), junk()); break;
    case 22: if (doc.transitions.length) doc.transitions[tr()].event = pick([5, {}, null, '', true, ['go']]); break;
    case 23: if (doc.transitions.length) doc.transitions[tr()].after = pick([-1, '5', null, 1e308, -0.5, true, 0]); break;
    case 24: if (doc.transitions.length) doc.transitions[tr()].done = pick([false, 1, 'true', null, true]); break;
    case 25: if (doc.transitions.length) doc.transitions[tr()].always = pick([false, 1, 'true', null, true]); break;
    case 26: if (doc.transitions.length) {
      const t = doc.transitions[tr()];
      const both = shuffle(['event', 'after', 'done', 'always']).slice(0, 2);
      for (const k of both) t[k] = { event: 'go', after: 1, done: true, always: true }[k];
      break;
    }
    case 27: if (doc.transitions.length) doc.transitions[tr()].type = pick(['weird', 5, null, 'internal', 'external', 'Internal']); break;
    case 28: if (doc.transitions.length) doc.transitions[tr()].guard = badQuery(); break;
    case 29: if (doc.transitions.length) doc.transitions[tr()].effects = pick([{}, [null], [{ run: '' }], 'x', [{ run: 'x', with: badQuery() }], [{ run: 'ok', with: '$' }, { run: 'y', with: badQuery() }]]); break;
    case 30: doc.transitions.push({ from: pick(ids), to: pick(ids), [pick(['event', 'after', 'done', 'always'])]: pick(['go', 1, true]) }); break;
    case 31: { const s = asObj(st()); s.parent = s.id; break; }
    case 32: { // a two-state cycle
      const i = st(); const j = st();
      const a = asObj(i); const b = asObj(j);
      if (typeof a.id === 'string' && typeof b.id === 'string') { a.parent = b.id; b.parent = a.id; }
      break;
    }
    case 33: doc.states.push(pick([{ id: `h${int(9)}`, parent: pick(ids), history: pick(['deep', 'shallow']) },
      { id: 'hx', history: 'deep' }, { id: 'hy', parent: pick(ids), type: 'history' },
      { id: 'hz', parent: pick(ids), history: 'deep', entry: [{ run: 'x' }] }, { id: 'fz', parent: pick(ids), final: true }])); break;
    case 34: if (doc.transitions.length) doc.transitions[tr()].from = pick(ids); break;
    case 35: if (doc.transitions.length) doc.transitions[tr()].to = pick(ids); break;
    case 36: doc.states.push(pick(ids)); break;
    case 37: { const s = asObj(st()); delete s[pick(['initial', 'parent', 'type', 'final', 'history'])]; break; }
    case 38: doc.states.unshift({ id: pick(ids), parent: pick(ids) }); break;
    default: if (doc.transitions.length) {
      const t = doc.transitions[tr()];
      delete t[pick(['event', 'after', 'done', 'always', 'type', 'guard'])];
    }
  }
}

// ---- snapshots
function junkSnapshot(facts, cur) {
  const ids = facts.ids;
  const base = cur ? clone(cur) : { active: [pick(ids)], history: {}, timers: [], serial: 0, time: 0 };
  const r = int(30);
  switch (r) {
    case 0: return pick([null, [], 5, 'x', {}]);
    case 1: delete base[pick(['active', 'history', 'timers', 'serial', 'time'])]; break;
    case 2: base.active = pick([[], 'a', null, {}, [5], [pick(ids), pick(ids)]]); break;
    case 3: base.active = shuffle(ids).slice(0, 1 + int(3)); break;
    case 4: base.active = [...(base.active ?? []), pick(base.active ?? ['a'])]; break;
    case 5: base.active = [...(base.active ?? []).reverse()]; break;
    case 6: base.history = pick([null, [], 5, { nope: ['a'] }]); break;
    case 7: case 8: case 9: {
      const h = pick(facts.histories.length ? facts.histories : ids);
      base.history = { ...(base.history ?? {}), [h]: pick([[], [pick(ids)], [pick(ids), pick(ids)], shuffle(ids).slice(0, 3), 'a', [5], null, [pick(ids), pick(ids), pick(ids)]]) };
      break;
    }
    case 10: base.timers = pick([null, {}, [null], [5], 'x']); break;
    case 11: case 12: case 13: {
      const k = facts.transitions.length ? int(facts.transitions.length + 1) : pick([0, 1]);
      const tm = { transition: k, at: pick([0, 5, 10, 100, 3.5, -5]), token: pick([1, 2, 3, (base.serial ?? 0) + 1, 0, -1]) };
      if (chance(0.2)) tm[pick(['transition', 'at', 'token'])] = pick(['1', null, 1.5, 2 ** 53, true]);
      if (chance(0.1)) tm.extra = pick([1, 'x', { a: 1 }]);
      base.timers = chance(0.5) && Array.isArray(base.timers) ? [...base.timers, tm] : [tm];
      if (chance(0.5)) base.serial = Math.max(base.serial ?? 0, 3);
      break;
    }
    case 14: if (Array.isArray(base.timers) && base.timers.length) base.timers = [...base.timers, clone(base.timers[0])]; break;
    case 15: if (Array.isArray(base.timers) && base.timers.length) base.timers = [...base.timers].reverse(); break;
    case 16: base.serial = pick([-1, 1.5, '3', null, 2 ** 53, 2 ** 53 - 1, 0, 1e21]); break;
    case 17: base.time = pick(['5', null, -5, 1e308, 2 ** 60, true, 0.1, -0.5]); break;
    case 18: own(base, pick(['extra', 'Active', 'zz', '0', 'version', '__proto__']), pick([1, 'x', null, { a: [1] }])); break;
    case 19: if (Array.isArray(base.timers) && base.timers.length) own(base.timers[0], pick(['extra', 'note', '0', '__proto__']), pick([1, 'x', { b: 2 }])); break;
    case 20: if (Array.isArray(base.timers) && base.timers.length) base.timers[0].at = pick([0, 1e308, -1e308, 7]); break;
    case 21: if (Array.isArray(base.timers) && base.timers.length) base.timers[0].token = pick([0, base.serial + 1, base.serial, 1]); break;
    case 22: base.serial = (base.serial ?? 0) + pick([1, 10]); break;
    case 23: if (facts.histories.length) {
      const h = pick(facts.histories);
      const p = facts.ids[facts.parent[facts.ids.indexOf(h)]];
      const under = facts.ids.filter((id, i) => {
        for (let x = facts.parent[i]; x >= 0; x = facts.parent[x]) if (facts.ids[x] === p) return true;
        return false;
      });
      base.history = { ...(base.history ?? {}), [h]: shuffle(under).slice(0, 1 + int(3)) };
    }
      break;
    default: {
      // a configuration of random leaves of one root
      const leaves = facts.ids.filter((_, i) => ['atomic', 'final'].includes(facts.kind[i]));
      base.active = shuffle(leaves).slice(0, 1 + int(Math.min(3, leaves.length)));
    }
  }
  return base;
}

function timeFrom(cur) {
  const t = cur?.time ?? 0;
  if (chance(0.8)) return pick([t, t + 1, t + 5, t + 10, t + 100, t + 2.5, t + 10, t + 5, null]);
  return pick([t - 1, 'NaN', 'Infinity', 0, 1e308, '-Infinity', '5', true, [t], Number.MAX_VALUE, 2 ** 53 + 1, t + 0.1]);
}
// contexts and payloads: plain values, or for the lowered family mostly
// the bridge's context ({input, data, event, results, visits})
let scopeValues = () => pick(values);
function opts(op) {
  if (chance(0.3)) op.payload = clone(scopeValues());
  if (chance(0.3)) op.context = clone(scopeValues());
  return op;
}

function genOps(facts, family, c) {
  const events = [...new Set(facts.transitions.filter((t) => typeof t.event === 'string').map((t) => t.event))];
  const ops = [];
  let chart;
  try { chart = compileStatechart(JSON.parse(canonicalizeJson(c.chart)), c.options ?? {}); }
  catch { return [opts({ op: 'start' })]; }
  let cur = null;
  // runs each op as it is made, to learn the snapshot the next one alters
  const push = (op) => {
    ops.push(op);
    try {
      const out = runOp(chart, JSON.parse(canonicalizeJson(op)), cur);
      if (out.result) cur = out.result.state;
      if (out.restored) cur = out.restored;
    }
    catch { /* the op failed: the snapshot stays */ }
  };
  const start = opts({ op: 'start' });
  if (chance(0.4)) start.now = chance(0.8) ? pick([0, 5, 100, -5, null, 1.5]) : pick(['NaN', 'Infinity', 1e308, '0', false]);
  push(start);
  const k = 3 + int(8);
  for (let i = 0; i < k; i++) {
    const snap = family === 'snapshot' ? 0.6 : 0.1;
    const op = { op: pick(['step', 'step', 'step', 'advance', 'advance', 'restore', 'final', 'events', 'start']) };
    if (op.op === 'start') {
      if (chance(0.5)) op.now = pick([0, 5, 'NaN']);
      push(opts(op));
      continue;
    }
    if (chance(snap) || (cur === null && chance(0.5))) op.snapshot = junkSnapshot(facts, cur);
    const base = Object.hasOwn(op, 'snapshot') ? op.snapshot : cur;
    if (op.op === 'step') {
      op.event = chance(0.75) && events.length ? pick(events) : pick(family === 'lowered'
        ? ['unknown', '', '@workflow/clock', '@workflow/next', '@workflow/done', '@workflow/error', 'event:', 'approve', 'event:approve']
        : ['unknown', 'go', '', 'after', 'done', '0', 'toString']);
      if (chance(0.03)) op.event = pick([null, 1, ['go'], { type: 'go' }, true]);
      if (chance(0.01)) delete op.event;
      if (chance(0.4)) op.now = timeFrom(base);
      opts(op);
    }
    else if (op.op === 'advance') {
      if (chance(0.9)) op.now = timeFrom(base);
      if (chance(0.3)) op.one = pick([true, true, false, 1, 0, 'yes', '', null, [], {}]);
      opts(op);
    }
    push(op);
  }
  return ops;
}

// v with the members of every object in a random order.
function shuffleKeys(v) {
  if (Array.isArray(v)) return v.map(shuffleKeys);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const k of shuffle(Object.keys(v))) own(out, k, shuffleKeys(v[k]));
  return out;
}

// ---- the lowered family: workflows the bridge runs, as charts
const wfData = () => pick([null, 1, 'x', { ready: true, n: 3 }, { ready: false, n: 12 }, { n: 7, accept: true }, [1, 2],
  { ready: 1, list: [1, 2] }, { error: { code: 'JF2006', message: 'm', nodeId: 't' } }]);
function wfContext() {
  if (chance(0.15)) return pick(values);
  const data = wfData();
  return { input: data, data, event: chance(0.7) ? null : { type: pick(['approve', 'retry']), ...(chance(0.5) ? { payload: wfData() } : {}) },
    results: {}, visits: chance(0.8) ? {} : { '/states/a': pick([1, 2, 5]) } };
}
function wfGuard() {
  return pick(['$.context.data.ready', '$.payload.accept', '$.context.data', { $gt: ['$.context.data.n', 5] },
    { $eq: ['$.event', 'event:approve'] }, { $not: '$.context.data.ready' }, { $contains: ['$.state', '/states/a'] },
    { $gt: ['$.context.visits["/states/a"]', 1] }, '$.context.event.payload', true, false, null, 0, 'x', { $count: '$.state' }]);
}
// wfBody is a {initial, states} scope of well-formed states; targets stay
// in scope, and every state has a limit at times so that loops may pass
// the cycle proof (a document that does not is drawn again)
function wfBody(depth) {
  const names = shuffle(['a', 'b', 'c', 'd', 'e', '0', '10', 'a/b', '~', 'x y']).slice(0, 2 + int(depth ? 2 : 5));
  const to = () => pick(names);
  const states = {};
  for (const name of names) {
    const r = rnd();
    let s;
    if (r < 0.3) {
      s = { work: { task: 't', version: '1' }, then: to() };
      if (chance(0.3)) s.catch = to();
    }
    else if (r < 0.5) s = { choose: Array.from({ length: 1 + int(3) }, () => ({ guard: wfGuard(), to: to() })), otherwise: to() };
    else if (r < 0.7) {
      s = { on: Array.from({ length: int(4) }, () => ({ event: pick(['approve', 'retry', 'x']), to: to(),
        ...(chance(0.4) ? { guard: wfGuard() } : {}) })) };
      if (!s.on.length || chance(0.5)) s.after = { ms: pick([0, 1, 5, 10, 60000, 2.5]), to: to() };
    }
    else if (r < 0.8 && depth < 2) s = { flow: wfBody(depth + 1), then: to() };
    else s = { final: true };
    if (chance(0.5)) s.limit = pick([1, 2, 3, 100]);
    own(states, name, s);
  }
  return { initial: names[0], states };
}
function loweredChart() {
  for (;;) {
    try { return lowerWorkflow({ $workflow: '0.2', revision: 'r', ...wfBody(0) }).fsm; }
    catch { /* an unbounded cycle: draw again */ }
  }
}
// factsOf is what genChart returns, for a chart made elsewhere
function factsOf(fsm) {
  const doc = clone(fsm);
  const ids = doc.states.map((s) => s.id);
  const parent = doc.states.map((s) => (s.parent === undefined ? -1 : ids.indexOf(s.parent)));
  const kind = doc.states.map((s, i) => (s.final ? 'final' : parent.includes(i) ? 'compound' : 'atomic'));
  return { doc, ids, kind, parent, histories: [], transitions: doc.transitions };
}

function genCase(family, index) {
  scopeValues = family === 'lowered' ? () => (chance(0.5) ? wfContext() : wfData()) : () => pick(values);
  const facts = family === 'lowered' ? factsOf(loweredChart()) : genChart();
  const c = { name: `${family}-${index}`, chart: facts.doc };
  if (chance(0.1)) c.options = { maxMicrosteps: pick([1, 2, 3, 5]) };
  if (family === 'order') {
    // defects and snapshots as the other families make them, then every
    // object's members in a random order, read as written
    if (chance(0.5)) {
      for (let i = 1 + int(3); i > 0; i--) {
        try { mutateDoc(c.chart, facts); }
        catch { /* nothing of that shape left to alter */ }
      }
      c.chart = JSON.parse(JSON.stringify(c.chart));
      c.ops = [opts({ op: 'start' }), { op: 'step', event: pick(eventPool) }];
    }
    else c.ops = genOps(facts, 'snapshot', c);
    return shuffleKeys(c);
  }
  if (family === 'compile') {
    for (let i = 1 + int(3); i > 0; i--) {
      try { mutateDoc(c.chart, facts); }
      catch { /* an earlier defect left nothing of that shape to alter */ }
    }
    c.chart = JSON.parse(JSON.stringify(c.chart)); // drops members set to undefined
    if (chance(0.7)) c.ops = [opts({ op: 'start' }), { op: 'step', event: pick(eventPool) }, { op: 'advance', now: 100 }];
  }
  else c.ops = genOps(facts, family, c);
  return JSON.parse(canonicalizeJson(c));
}

// A plain (non-coded) error anywhere makes the case a crash.
function crashOf(g) {
  if (g.compile?.error && g.compile.error.code === null) return g.compile.error.message;
  for (const r of g.results) if (r.error && r.error.code === null) return r.error.message;
  return null;
}

for (const family of families) {
  for (let i = 0; i < count; i++) {
    const c = genCase(family, i);
    const g = runCase(c);
    const crash = crashOf(g);
    const line = crash === null ? { family, ...g } : { family, name: g.name, crash };
    process.stdout.write(JSON.stringify(line) + '\n');
  }
}
