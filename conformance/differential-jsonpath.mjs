// Differential runs of JSONPath syntax: generates query strings from a
// seed (valid ones and mutations of them that break a rule), parses each
// with the reference's parser exactly as its query compiler does
// (parseJSONPath(source) with no function extensions) and writes one JSON
// line per string:
//
//   {"family", "name", "path", "out"}
//
// where out is {"valid": true} or {"error": {"message", "position"}}, the
// message being the whole of the JSONPathSyntaxError's. engine/query's
// TestPathDifferential reads such a file
// (JETFLOW_PATH_DIFF=path go test ./engine/query -run TestPathDifferential).
//
//   node conformance/differential-jsonpath.mjs [--seed N] [--count K] [--family F,...] > paths.jsonl
//
// Families (each gets --count strings):
//   valid    well-formed queries: names, quoted names, indexes, slices,
//            wildcards, descendants, filters with comparisons, logic and
//            function calls, blank space where the grammar allows it
//   mutate   a valid query mutated once or twice: truncated, a character
//            dropped, doubled or swapped, a stray character inserted
//   tokens   queries with one bad token: escapes, surrogates, control
//            characters, numbers with leading zeros, '-0', exponents,
//            integers past 2^53, unterminated strings
//   filter   filters that break a typing rule: literals outside a
//            comparison, non-singular queries compared, unknown
//            functions, wrong arity, arguments of the wrong type,
//            ValueType functions as tests, logical functions compared

import { parseJSONPath, JSONPathSyntaxError } from '@jarenjs/json/path';
import { options, generator } from './random.mjs';

const opt = options();
const seed = Number(opt('seed', '1'));
const count = Number(opt('count', '1000'));
const families = opt('family', 'valid,mutate,tokens,filter').split(',');
const g = generator(seed);
const { int, pick, chance } = g;

const ws = () => (chance(0.8) ? '' : pick([' ', '  ', '\t', '\n', '\r', ' \n ']));

const names = ['a', 'b', 'store', 'book', '_x', 'price', 'Éa', 'ü', '\u{1F600}', 'a1', 'A_b', 'x9'];
const ints = ['0', '1', '2', '-1', '10', '-3', '42'];
const strings = ["'a'", '"b"', "'it''s'", "'\\n'", '"\\u0041"', "'\\\\'", '"\\""', "'\\''", "''", '"\\ud83d\\ude00"', "'\u{1F600}'", '"é"'];
const numbers = ['0', '1', '-1', '1.5', '2e3', '-0', '0.25', '1E-2', '3.0e+1', '100'];

function singular(root, depth = 0) {
  let q = root;
  const n = int(3);
  for (let i = 0; i < n; i++) {
    q += pick([
      () => '.' + pick(names),
      () => `[${ws()}${pick(strings)}${ws()}]`,
      () => `[${ws()}${pick(ints)}${ws()}]`,
    ])();
  }
  return depth > 9 ? root : q;
}

function query(root, depth) {
  let q = root;
  const n = int(4);
  for (let i = 0; i < n; i++)
    q += ws() + segment(depth);
  return q;
}

function segment(depth) {
  return pick([
    () => '.' + pick(names),
    () => '.*',
    () => '..' + pick(names),
    () => '..*',
    () => '..' + bracket(depth),
    () => bracket(depth),
    () => bracket(depth),
  ])();
}

function bracket(depth) {
  const sels = [selector(depth)];
  while (chance(0.3))
    sels.push(selector(depth));
  return `[${ws()}${sels.join(ws() + ',' + ws())}${ws()}]`;
}

function selector(depth) {
  return pick([
    () => pick(strings),
    () => '*',
    () => pick(ints),
    () => slice(),
    () => (depth > 2 ? '*' : `?${ws()}${logical(depth + 1)}`),
  ])();
}

function slice() {
  const b = () => (chance(0.5) ? pick(ints) : '');
  let s = `${b()}${ws()}:${ws()}${b()}`;
  if (chance(0.5))
    s += `${ws()}:${ws()}${b()}`;
  return s;
}

function logical(depth) {
  let e = basic(depth);
  while (chance(0.3))
    e += ws() + pick(['&&', '||']) + ws() + basic(depth);
  return e;
}

function basic(depth) {
  return pick([
    () => query(pick(['@', '$']), depth),
    () => `!${ws()}${query(pick(['@', '$']), depth)}`,
    () => comparison(depth),
    () => comparison(depth),
    () => `(${ws()}${logical(depth + 1)}${ws()})`,
    () => `!${ws()}(${ws()}${logical(depth + 1)}${ws()})`,
    () => `${pick(['match', 'search'])}(${singular('@', depth)},${ws()}${pick(["'a.*'", '"[0-9]+"', "'b'"])})`,
  ])();
}

function comparable(depth) {
  return pick([
    () => singular(pick(['@', '$']), depth),
    () => pick(numbers.filter((x) => x !== '-0' || chance(0.5))),
    () => pick(strings),
    () => pick(['true', 'false', 'null']),
    () => `length(${singular('@', depth)})`,
    () => `count(${query('@', depth + 1)})`,
    () => `value(${query('@', depth + 1)})`,
  ])();
}

function comparison(depth) {
  return `${comparable(depth)}${ws()}${pick(['==', '!=', '<', '<=', '>', '>='])}${ws()}${comparable(depth)}`;
}

function valid() {
  return query('$', 0);
}

const strays = ['$', '@', '.', '..', '[', ']', '(', ')', ',', ':', '?', '!', '=', '<', '>', '&', '|', "'", '"', '\\', ' ', '*', '-', '0', 'a', 'Z', '_', '\u00e9', '\u0001', '\t', '#', '{', '+', 'e'];

function mutate(s) {
  const at = int(s.length + 1);
  return pick([
    () => s.slice(0, at),
    () => s.slice(0, at) + s.slice(at + 1),
    () => s.slice(0, at) + (s[at] ?? '') + s.slice(at),
    () => s.slice(0, at) + pick(strays) + s.slice(at),
    () => s.slice(0, at) + pick(strays) + s.slice(at + 1),
    () => s.slice(0, at) + s.slice(at + 1, at + 2) + s.slice(at, at + 1) + s.slice(at + 2),
    () => s.slice(at),
    () => s + ws() + pick(strays),
  ])();
}

const badTokens = [
  "'\\x'", "'\\u12'", "'\\u12g4'", "'\\ud800'", "'\\udc00'", "'\\ud800\\u0041'", "'\\ud800x'", "'a", '"a',
  "'\\'", "'\u0001'", '"\\"', "'\\\"'", '"\\\'"', "'\\U0041'", "'\\uD83D\\uDE00'",
  '01', '-0', '-01', '00', '9007199254740991', '9007199254740992', '-9007199254740992', '123456789012345678901',
  '1.5', '1e2', '-', '--1', '+1', '1:2:3:4', '::', ':-0', '1:01', ' 1 : 2 ', '0x1',
];

const badNames = ['\ud83d\ude00', '1a', '-a', "'a'", '$', ' a', 'a b'];

function tokens() {
  return pick([
    () => `$[${pick(badTokens)}]`,
    () => `$.a[${ws()}${pick(badTokens)}${ws()}]`,
    () => `$[?@ == ${pick(badTokens.concat(['01.5', '1.', '1.e5', '1e', '1e+', '-0.0', '0e0', '.5', '-.5', '1E+-2']))}]`,
    () => `$[?${pick(['01', '1.', '1e', '-', '-0', '1.5e'])} == @.a]`,
    () => `$.${pick(badNames)}`,
    () => `$..${pick(badNames)}`,
    () => `$${pick(['', ' ', '.', '..', '[', '[]', '.[', '..[', '.*.', '...a', '. a', '.. a', '[*', "['a'", "['a',", '[?', '[?@', '[?(@', '[?@.a==', '$', ' ', '\t.a'])}`,
    () => pick(['', ' $', '@', '@.a', 'a', '$a', '.a', '$.a ', '$ .a', '$\n[0]']),
    () => mutate(`$[${pick(badTokens)}]`),
  ])();
}

const fnCalls = [
  'length()', 'length(@.a, @.b)', 'length(@.*)', 'length(@..a)', 'length(@[0,1])', 'length(1)', 'length(\'x\')', 'length(true)',
  'length(count(@.*))', 'length(value(@.*))', 'length(match(@.a, \'x\'))', 'count(@.a)', 'count(1)', 'count()', 'count(@.*, @.*)',
  'count(length(@.a))', 'count(value(@.*))', 'value(@..a)', 'value(1)', 'match(@.a)', 'match(@.a, \'x\', 1)', 'match(@.*, \'x\')',
  'match(@.a, @.*)', 'search(count(@.*), \'a\')', 'search(@.a, length(@.b))', 'foo(@.a)', 'Length(@.a)', 'len_gth(@.a)', 'tostring(@)',
  'constructor(@)', 'match (@.a, \'x\')', 'length(@.a', 'length(@.a,)', 'length(,@.a)', 'length(!@.a)', 'length((@.a))',
  'length(@.a == 1)', 'length(xyz)', 'count(@.a && @.b)', 'value(@.a)', 'length(@.a)', 'match(@.a, \'x\')', 'search(@, "[a-z]")',
  'count(@.*)', 'length(-)', 'length(\'a)',
];

function filter() {
  const fn = () => pick(fnCalls);
  const op = () => pick(['==', '!=', '<', '<=', '>', '>=', '=', '===', '=<', '!', '<>']);
  const lit = () => pick(['1', "'a'", 'true', 'false', 'null', '-2.5', '"x"']);
  const nonSingular = () => pick(['@.*', '@..a', '@[0,1]', '@[1:2]', '@[?@.a]', '$..b', '@[*]', '@["a","b"]']);
  return '$' + pick(['', '.a', '..x'])
    + '[?' + ws() + pick([
      () => lit(),
      () => `${lit()}${ws()}&&${ws()}@.a`,
      () => `@.a${ws()}||${ws()}${lit()}`,
      () => `!${lit()}`,
      () => `!${fn()}`,
      () => `!xyz`,
      () => fn(),
      () => `${fn()}${ws()}${op()}${ws()}${lit()}`,
      () => `${lit()}${ws()}${op()}${ws()}${fn()}`,
      () => `${nonSingular()}${ws()}${op()}${ws()}${lit()}`,
      () => `${lit()}${ws()}${op()}${ws()}${nonSingular()}`,
      () => `@.a${ws()}${op()}${ws()}${pick(['', 'xyz', 'truex', '@', '$', '(1)', '!', ')', 'True'])}`,
      () => `${pick(['xyz', 'truex', 'True', 'nul', 'a_b'])}${ws()}${op()}${ws()}1`,
      () => `(@.a${ws()}${op()}${ws()}${lit()}`,
      () => `@.a${ws()}${pick(['&', '|', '&&', '||', '&& ', 'and'])}`,
      () => `${comparison(1)}`,
      () => `${fn()}${ws()}${op()}${ws()}${fn()}`,
      () => pick(['', ')', '!', '!!@.a', '! @.a', '?', '@.a ]', '#']),
    ])() + ws() + (chance(0.9) ? ']' : '');
}

const makers = { valid, mutate: () => { let s = mutate(valid()); if (chance(0.3)) s = mutate(s); return s; }, tokens, filter };

function outcome(path) {
  try {
    parseJSONPath(path);
    return { valid: true };
  }
  catch (e) {
    if (!(e instanceof JSONPathSyntaxError))
      return { crash: String(e) };
    return { error: { message: e.message, position: e.position } };
  }
}

const out = [];
for (const family of families) {
  const make = makers[family];
  if (make === undefined)
    throw new Error(`unknown family ${family}`);
  for (let i = 0; i < count; i++) {
    // a Go string cannot hold a lone surrogate (decoding JSON makes it
    // U+FFFD), so a mutation that splits a pair is made again
    let path = make();
    while (!path.isWellFormed())
      path = make();
    out.push(JSON.stringify({ family, name: `${family}-${i}`, path, out: outcome(path) }));
    if (out.length >= 1000) {
      process.stdout.write(out.join('\n') + '\n');
      out.length = 0;
    }
  }
}
if (out.length > 0)
  process.stdout.write(out.join('\n') + '\n');
