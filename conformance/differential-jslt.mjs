// Differential runs of JSLT stylesheets: generates random stylesheets and
// input documents from a seed, runs each through the reference exactly as
// its DAG's jslt node does (compileJsltStylesheet(stylesheet) with no
// options, then transform(input) with no parameters; the stylesheet and
// the input canonicalized first, as a DAG document and a run's input are)
// and writes one JSON line per case:
//
//   {"family", "name", "sheet", "input", "out", "held"?}
//
// where out is one of
//   {"result": text}     the result as the reference's JSON.stringify
//                        writes it, so member order counts
//   {"empty": true}      the empty sequence (the node's null)
//   {"error": {"phase": "compile"|"transform", "code", "path", "message"}}
//   {"crash": message}   a plain JavaScript error, not a coded one: not
//                        an answer to compare
// engine/jslt's TestDifferential reads such a file
// (JETFLOW_JSLT_DIFF=path go test ./engine/jslt -run TestDifferential).
//
//   node conformance/differential-jslt.mjs [--seed N] [--count K] [--family F,...] > diff.jsonl
//
// Families (each gets --count cases):
//   run      well-formed stylesheets: rules with match paths of many
//            shapes, priorities, modes, bodies that build objects and
//            arrays with query operators and $apply in every form
//   apply    the same, heavier on $apply: modes, selectors rooted at $,
//            $root and variables, recursion, sequences in members
//   order    bodies that build objects ($map, $from-entries, objects of
//            computed members) and apply rules to them, so the order of
//            their members shows in the result
//   paths    path rules and located $apply selectors over inputs whose
//            member names need escaping (quotes, backslashes, control
//            characters, emoji, array-index-like names), bodies that
//            report $path
//   held     the stylesheets of run, paths and order over an input held
//            as another DAG node built it: its objects' members in the
//            order they were made, not canonical (the line says held)
//   deep     inputs nested 1,000 to 1,060 levels deep under rules that
//            match a few of their locations or none: the built-in walk
//            against maxDepth, in every disposition
//   filters  rules matched by JSONPath filters ([?…]: comparisons of
//            every pair of types, Nothing, functions, match()/search(),
//            number literals past float64; filters.mjs) and bodies that
//            select with them, over inputs of every type, held for 30%
//   compile  the run family's stylesheets with one to three defects:
//            members missing, unknown or mistyped at every level, bad
//            match paths, bodies that do not compile
// Nothing here is committed as a golden: a class of disagreement found
// this way is written down as hand-picked DAG cases in
// cases/dag/diff-jslt-*.json.
import { compileJsltStylesheet } from '@jarenjs/json/jslt';
import { canonicalizeJson } from '@jarenjs/json/canonical';
import { options, generator } from './random.mjs';
import { filterGenerator } from './filters.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const count = Number(arg('count', '1000'));
const allFamilies = 'run,apply,order,paths,held,deep,filters,compile';
const families = arg('family', allFamilies).split(',');
for (const f of families) {
  if (!allFamilies.split(',').includes(f)) throw new Error(`unknown family ${f}: one of ${allFamilies}`);
}

const { rnd, int, pick, chance } = generator(firstSeed);
const flt = filterGenerator({ int, pick, chance });
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
const canon = (v) => JSON.parse(canonicalizeJson(v));
// Sets an own member, even one named __proto__.
const own = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

// ---- input documents -------------------------------------------------------

const names = ['a', 'b', 'c', 'x', 'y', 'id', 'price', 'items', 'name', 'kids', '0', '1', '10', '2',
  "it's", 'a b', 'b\\c', 'é', '\n', 'z', 'tags', 'meta', 'k~1', 'a/b'];
const scalars = [null, true, false, 0, 1, 2, -1, 1.5, 10, 100, 'x', '', 'a', 'price', 'abc', '10', -0.5, 1e21];

function genData(depth) {
  if (depth <= 0 || chance(0.3)) return pick(scalars);
  if (chance(0.5)) {
    const out = [];
    for (let i = int(4); i > 0; i--) out.push(genData(depth - 1));
    return out;
  }
  const out = {};
  for (let i = int(5); i > 0; i--) own(out, pick(names), genData(depth - 1));
  return out;
}

// ---- match paths ------------------------------------------------------------

const memberPaths = ['a', 'b', 'price', 'items', 'x', 'kids', 'id', 'name'];
function genPath() {
  const n = pick(memberPaths);
  const m = pick(memberPaths);
  return pick([
    '$', `$.${n}`, `$..${n}`, '$.*', '$[*]', '$..*', '$[0]', '$[-1]', '$[0:2]', '$[1:]', '$[::-1]',
    `$.${n}[*]`, `$.${n}[*].${m}`, `$..${n}.${m}`, `$..${n}[*]`, `$.${n}..${m}`, `$['${n}','${m}']`,
    '$..[0]', `$..[?@.${n}]`, `$..[?@.${n} > 1]`, '$..[?@ == 1]', '$[?length(@) > 1]', '$..[?@ == "x"]',
    `$[?$.${n}]`, '$..[?match(@, "a.*")]', '$..[?search(@, "b")]', `$..[?@.${n} == $.${m}]`,
    `$["it's"]`, "$['a b']", "$..['0']", '$.*.*', '$..[1]', `$..${n}[0]`, '$[?@ > 0]', '$..[?count(@.*) > 1]',
    '$..[?value(@..x) == 1]', '$..*[?@ != null]',
  ]);
}
function badPath() {
  return pick(['$[', 'a', '$.', '$[?@.x ==]', '', '$..', "$['a", '$[1:2:0:1]', '$[?foo(@)]', '$a', ' $', '$[01]']);
}

// ---- bodies ---------------------------------------------------------------

let modeNames = ['', 'm', 'n'];
function selector(depth) {
  return pick([
    '$', '$.*', '$[*]', '$.a', '$.items[*]', '$..x', '$.kids[*]', '$root', '$root.a', '$root.*', '$root..price',
    '$.b[0]', '$..*', { $seq: [1, 2] }, { $const: [1, 'x'] }, { $const: { a: 1 } }, '$[?@ > 0]',
    { $for: { v: '$.*' }, $return: '$v' }, { $let: { r: '$root' }, $return: '$r.a' }, '$path',
    { $entries: '$' }, { $map: [['z', 1], ['a', '$']] }, { '$from-entries': [] }, expr(depth - 1),
  ]);
}
function apply(depth) {
  const sel = selector(depth);
  const form = int(4);
  if (form === 0 && !Array.isArray(sel)) return { $apply: sel };
  if (form === 1) return { $apply: [sel] };
  return { $apply: [sel, pick(modeNames)] };
}
function expr(depth) {
  if (depth <= 0) {
    return pick(['$', '$path', '$root', '$.a', '$.price', '$.*', '$..x', 1, 'lit', null, true, '$root.a', '$.name',
      { $count: '$.*' }, { '$is-object': '$' }]);
  }
  const d = depth - 1;
  switch (int(22)) {
    case 0: case 1: case 2: return apply(depth);
    case 3: return [apply(depth)];
    case 4: {
      const o = {};
      for (let i = int(4); i > 0; i--) own(o, pick(['k', 'v', 'at', 'z', 'a', '0', '5', 'out']), expr(d));
      return o;
    }
    case 5: {
      const a = [];
      for (let i = int(3); i >= 0; i--) a.push(expr(d));
      return a;
    }
    case 6: return { $add: [expr(d), pick([1, '$.price', 0.5])] };
    case 7: return { [pick(['$mul', '$div', '$sub'])]: ['$', pick([2, 1.21, '$root.price', -1, 1e-7, 3, 0.1])] };
    case 8: return { $if: [{ [pick(['$is-object', '$is-array', '$is-number'])]: '$' }, expr(d), expr(d)] };
    case 9: return { $let: { v: expr(d) }, $return: pick(['$v', { k: '$v' }, [{ $apply: '$v' }]]) };
    case 10: return { $for: { v: pick(['$.*', '$[*]', '$..x', '$root.*']) }, $return: expr(d) };
    case 11: return { $seq: [expr(d), expr(d)] };
    case 12: return { $map: [[pick(['z', 'a', '1', '$.name']), expr(d)], [pick(['b', 'y', '0']), expr(d)]] };
    case 13: return { $entries: pick(['$', expr(d)]) };
    case 14: return { '$from-entries': pick([{ $entries: '$' }, [{ key: 'z', value: 1 }, { key: 'a', value: 2 }]]) };
    case 15: return { $concat: [{ $string: '$path' }, '/', pick(['$.name', 'x'])] };
    case 16: return { $count: pick(['$.*', { $apply: '$.*' }, '$..*']) };
    case 17: return { $distinct: [pick(['$.*', { $apply: '$.*' }])] };
    case 18: return { $const: pick([{ $apply: '$' }, [1, 2], 'x']) };
    case 19: return { $sum: pick(['$.*', '$..price', { $apply: ['$.*', pick(modeNames)] }]) };
    case 20: return pick(['$x', '$undefinedparam', { $div: ['$', 0] }, { $add: ['$', 'x'] }]);
    default: return { $not: expr(d) };
  }
}

// ---- stylesheets --------------------------------------------------------

// filters: rules matched by filters, bodies that select with them
function genFiltersSheet() {
  modeNames = ['', 'm'];
  const body = () => pick([
    flt.path(), { $count: flt.path() }, { $apply: flt.path() }, { $apply: [flt.path(), 'm'] },
    { hit: '$', at: '$path' }, [{ $apply: '$.*' }], { $exists: flt.path('$root') }, '$', 1,
  ]);
  const rules = [];
  for (let i = 1 + int(4); i > 0; i--) {
    const r = { body: body() };
    if (chance(0.8)) r.match = flt.path();
    if (chance(0.2)) r.mode = 'm';
    if (chance(0.2)) r.priority = pick([0, 1, 2, -1]);
    rules.push(r);
  }
  return { $jslt: '0.1', rules, unmatched: pick(['share', 'fresh', 'share']) };
}

function genRule(opts) {
  const r = {};
  const m = chance(0.55) ? (chance(0.85) ? genPath() : { path: genPath() }) : undefined;
  if (m !== undefined) r.match = m;
  if (chance(opts.modeRate)) r.mode = pick(modeNames);
  if (chance(0.25)) r.priority = pick([0, 1, -1, 2, 0.5, -3, 10]);
  r.body = expr(opts.depth);
  return r;
}

function genSheet(family) {
  modeNames = chance(0.3) ? ['', 'm'] : ['', 'm', 'n', 'k'];
  // names that need escaping in a pointer and in a message
  if (family === 'compile' && chance(0.15)) modeNames = ['', 'a/b', '~1', '"q"', '\n', 'é', '\u2028', '\u007f'];
  const opts = {
    depth: family === 'apply' ? 3 : 2,
    modeRate: family === 'apply' ? 0.5 : 0.25,
  };
  const rules = [];
  for (let i = int(5); i >= 0; i--) rules.push(genRule(opts));
  if (chance(0.1)) rules.length = 0;
  if (chance(0.35)) return rules;
  const env = { $jslt: '0.1', rules };
  if (chance(0.5)) env.unmatched = pick(['share', 'fresh', 'error', 'share']);
  if (chance(0.4)) {
    env.modes = {};
    for (const name of modeNames) {
      if (chance(0.5)) env.modes[name] = { unmatched: pick(['share', 'fresh', 'error']) };
    }
  }
  return env;
}

// order: bodies that build objects and apply rules to them
function genOrderSheet() {
  modeNames = ['', 'm', 'n'];
  const build = () => pick([
    { $map: [['zeta', '$.a'], ['alpha', 1], ['10', 2], ['2', 3]] },
    { '$from-entries': [{ $const: [{ key: 'zz', value: 1 }, { key: 'aa', value: { q: 1, b: 2 } }, { key: '1', value: 3 }] }] },
    { '$from-entries': { $entries: '$' } },
    { $map: [['$.name', 1], ['b', { $map: [['y', 1], ['x', '$']] }]] },
    { z: 1, a: { $map: [['q', 2], ['c', 3]] } },
  ]);
  const rules = [
    { match: '$', body: pick([{ $apply: [build(), pick(modeNames)] }, [{ $apply: [build(), 'm'] }], { out: { $apply: [build()] } }]) },
  ];
  for (let i = int(4); i >= 0; i--) {
    rules.push({
      mode: pick(modeNames),
      ...(chance(0.3) ? { match: genPath() } : {}),
      body: pick([{ $entries: '$' }, '$', { $apply: '$.*' }, [{ $apply: ['$.*', pick(modeNames)] }],
        { k: { $count: '$.*' } }, { $map: [['p', '$path'], ['v', '$']] }, { $count: '$.*' }, { $apply: ['$', pick(modeNames)] },
        { $for: { e: { $entries: '$' } }, $return: '$e.key' }]),
    });
  }
  return { $jslt: '0.1', rules, ...(chance(0.5) ? { unmatched: pick(['share', 'fresh']) } : {}) };
}

// paths: path rules and located $apply selectors over inputs whose member
// names need escaping, bodies that report $path
const oddNames = ["it's", 'a b', 'b\\c', '\n', '\u0001', '\u001f', '\t', 'é', '😀', '"', '~', '/', '', '0', '01', '-1', '4294967295', 'x', 'y'];
function genOddData(depth) {
  if (depth <= 0 || chance(0.25)) return pick(scalars);
  if (chance(0.4)) {
    const out = [];
    for (let i = int(4); i > 0; i--) out.push(genOddData(depth - 1));
    return out;
  }
  const out = {};
  for (let i = int(5); i > 0; i--) own(out, pick(oddNames), genOddData(depth - 1));
  return out;
}
function genPathsSheet() {
  modeNames = ['', 'm'];
  // a name as a single-quoted JSONPath string (RFC 9535 §2.3.1.1)
  const q = (n) => JSON.stringify(n).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'");
  const oddPath = () => pick([genPath(), `$..['${q(pick(oddNames))}']`, `$['${q(pick(oddNames))}']`, `$.*['${q(pick(oddNames))}']`,
    `$..[?@['${q(pick(oddNames))}']]`, '$..*', '$..[*]', '$[*][*]', `$..[?@ == '${q(pick(oddNames))}']`]);
  const rules = [];
  for (let i = 1 + int(4); i > 0; i--) {
    const r = { match: chance(0.9) ? oddPath() : { path: oddPath() } };
    if (chance(0.2)) r.mode = 'm';
    if (chance(0.2)) r.priority = pick([0, 1, -1, 2]);
    r.body = pick(['$path', { p: '$path', v: '$' }, [{ $apply: pick(['$.*', '$[*]', '$..*', '$root.*', '$']) }, '$path'],
      { $apply: [pick(['$.*', '$root..*', `$['${q(pick(oddNames))}']`]), pick(modeNames)] }, { $concat: ['$path', '|'] }, '$']);
    rules.push(r);
  }
  if (chance(0.5)) return rules;
  return { $jslt: '0.1', rules, unmatched: pick(['share', 'fresh', 'error']), ...(chance(0.4) ? { modes: { m: { unmatched: pick(['share', 'fresh', 'error']) } } } : {}) };
}

// deep: inputs nested about maxDepth deep, walked by the built-in rule
function genDeepInput() {
  let v = pick(scalars);
  const n = 1000 + int(60);
  const key = pick(['a', 'x', '0']);
  for (let i = 0; i < n; i++) v = chance(0.5) ? [v] : { [key]: v };
  return chance(0.5) ? v : { top: v, x: 1 };
}
function genDeepSheet() {
  modeNames = ['', 'm'];
  const rules = [];
  for (let i = int(3); i > 0; i--) {
    rules.push({
      ...(chance(0.7) ? { match: pick(['$..x', '$.top', '$..zz', '$.x', '$', '$[0]', '$..[?@ == 1]']) } : {}),
      body: pick(['$path', '$', { $apply: '$.*' }, [{ $apply: '$.*' }], 1, { $count: '$.*' }]),
    });
  }
  if (chance(0.3)) return rules;
  return { $jslt: '0.1', rules, unmatched: pick(['share', 'fresh', 'error', 'share']) };
}

// ---- defects ------------------------------------------------------------

const junk = [null, 1, 'x', true, [], {}, [1], { a: 1 }, 1.5, '', '0.1', 0.1, 1e21, 1e-7, '\u2028', 'é\n"\u0007', ['share'], { unmatched: 'share' }];
// a fresh copy: the defects mutate what they insert
const junkv = () => clone(pick(junk));
function defect(doc) {
  const rulesOf = (d) => (Array.isArray(d) ? d : (d !== null && typeof d === 'object' && Array.isArray(d.rules) ? d.rules : null));
  if (doc === null || typeof doc !== 'object') return doc;
  switch (int(12)) {
    case 0: return clone(pick(junk.concat([{ rules: [] }, { $jslt: '0.1' }, { $jslt: '0.2', rules: [] }, { $jslt: 0.1, rules: [] }])));
    case 1: {
      if (Array.isArray(doc)) return { $jslt: pick(['0.1', '0.1', '1', 0.1, null]), rules: doc };
      own(doc, pick(['$jslt', 'rules', 'unmatched', 'modes', 'extra', '__proto__', 'Rules']), junkv());
      return doc;
    }
    case 2: {
      if (!Array.isArray(doc)) delete doc[pick(['$jslt', 'rules', 'unmatched', 'modes'])];
      return doc;
    }
    case 3: {
      if (Array.isArray(doc)) return doc;
      const modes = {};
      own(modes, pick(['', 'm', 'x', '__proto__']), pick([{ unmatched: pick(['share', 'bogus', 1, null]) }, {}, { unmatched: 'fresh', extra: 1 }, junkv()]));
      doc.modes = chance(0.2) ? junkv() : modes;
      return doc;
    }
    default: {
      const rules = rulesOf(doc);
      if (rules === null) return doc;
      if (rules.length === 0) rules.push({ body: 1 });
      const i = int(rules.length);
      if (rules[i] === null || typeof rules[i] !== 'object' || Array.isArray(rules[i])) rules[i] = { body: 1 };
      const r = rules[i];
      switch (int(10)) {
        case 0: rules[i] = junkv(); break;
        case 1: delete r.body; break;
        case 2: own(r, pick(['extra', 'matches', '__proto__', 'Body', 'priority', 'mode']), junkv()); break;
        case 3: r.mode = junkv(); break;
        case 4: r.priority = pick(['1', null, true, [], {}, 1e308]); break;
        case 5: r.match = clone(pick(junk.concat([{ path: 1 }, { path: badPath() }, { schema: {} }, { path: '$', extra: 1 }, { schema: true, path: '$' }, { paths: '$' }]))); break;
        case 6: r.match = badPath(); break;
        case 7: r.body = pick([{ $apply: [] }, { $apply: ['$', 1] }, { $apply: ['$', 'm', 'x'] }, { $nosuch: 1 }, { $add: 1 }, '$[',
          { k: { $apply: [1, 2, 3] } }, [{ $apply: [null, null] }], { $valid: [{}, '$'] }, { $apply: [] , a: 1 }, { $let: 1 }]); break;
        case 8: own(r, pick(['match', 'mode', 'priority']), junkv()); own(r, pick(['match', 'mode', 'priority', 'body']), junkv()); break;
        default: r.match = { path: pick([badPath(), 1]), schema: pick([{}, true]) }; break;
      }
      return doc;
    }
  }
}

// ---- running --------------------------------------------------------------

function outcome(sheet, input) {
  let transform;
  try {
    transform = compileJsltStylesheet(sheet);
  }
  catch (err) {
    return errOut('compile', err);
  }
  try {
    const v = transform(input);
    if (v === undefined) return { empty: true };
    return { result: JSON.stringify(v) };
  }
  catch (err) {
    return errOut('transform', err);
  }
}

function errOut(phase, err) {
  if (err === null || typeof err !== 'object' || typeof err.code !== 'string') {
    return { crash: String(err?.message ?? err) };
  }
  const e = { phase, code: err.code, message: err.message };
  if (err.docPath !== undefined) e.path = err.docPath;
  return { error: e };
}

for (const family of families) {
  for (let i = 0; i < count; i++) {
    let sheet;
    if (family === 'order' || (family === 'held' && chance(0.3))) sheet = genOrderSheet();
    else if (family === 'deep') sheet = genDeepSheet();
    else if (family === 'held') sheet = chance(0.5) ? genPathsSheet() : genSheet('run');
    else if (family === 'paths') sheet = genPathsSheet();
    else if (family === 'filters') sheet = genFiltersSheet();
    else sheet = genSheet(family);
    if (family === 'compile') {
      for (let k = 1 + int(3); k > 0; k--) sheet = defect(sheet);
    }
    let input = genData(1 + int(4));
    if (family === 'deep') input = genDeepInput();
    else if (family === 'filters') input = flt.data();
    else if (family === 'paths' || (family === 'held' && chance(0.3))) input = genOddData(1 + int(4));
    else if (chance(0.4)) input = { a: genData(2), items: [genData(2), { price: 2, x: 1 }], price: 3, name: 'n', kids: [{ x: 1, kids: [] }] };
    // the DAG canonicalizes its document and the run's input; a held
    // input is another node's value, handed over as it was built
    const held = family === 'held' || (family === 'filters' && chance(0.3));
    let text;
    try {
      sheet = canon(sheet);
      input = held ? JSON.parse(JSON.stringify(input)) : canon(input);
      const line = { family, name: `${family}-${i}`, sheet, input, out: outcome(sheet, input) };
      if (held) line.held = true;
      text = JSON.stringify(line);
    }
    catch (err) {
      text = JSON.stringify({ family, name: `${family}-${i}`, sheet: clone(sheet), input: clone(input), out: { crash: String(err?.message ?? err) } });
    }
    process.stdout.write(`${text}\n`);
  }
}
