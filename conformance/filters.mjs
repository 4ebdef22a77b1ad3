// What differential.mjs (families paths and regex) and
// differential-jslt.mjs (family filters) share: random JSONPath filter
// expressions ([?…]) and I-Regexp patterns, drawn from a seeded
// generator (random.mjs), and values of every JSON type to run them on.

// filterGenerator returns the generators over one seeded stream.
export function filterGenerator({ int, pick, chance }) {
  const numbers = ['0', '1', '2', '-1', '1.5', '-0', '3', '0.1', '1E+2', '2e0', '1e400', '-1e400', '1e-400',
    '100000000000000000000000', '1.7976931348623157e308', '9007199254740993'];
  const strings = ["'a'", "'b'", "''", "'é'", "'😀'", "'\\uffff'", '"x"', "'A'", "'10'", "'a\\nb'", "'ab'", "'\\u00e9'"];
  const members = ['a', 'b', 'n', 's', 'x', 'nope'];
  const ops = ['==', '!=', '<', '<=', '>', '>='];
  const ws = () => pick(['', ' ', ' ', '  ']);

  function literal() {
    switch (int(4)) {
      case 0: case 1: return pick(numbers);
      case 2: return pick(strings);
      default: return pick(['true', 'false', 'null']);
    }
  }
  // a singular query: names and indexes only
  function singular() {
    let s = chance(0.8) ? '@' : '$';
    for (let i = int(s === '@' ? 3 : 4); i > 0; i--) s += chance(0.75) ? `.${pick(members)}` : `[${pick([0, 1, -1, 5])}]`;
    if (s === '$') s += pick(['.n', '.s', '.xs[0]', '.p', '.nope']);
    return s;
  }
  function nodes() {
    return pick(['@.*', '@[*]', '@..a', '@..*', '$.xs[*]', '@[0:2]', "@['a','b']", '@[?@ > 1]', '@.a[*]', '$..n']);
  }
  function comparable(d) {
    switch (int(8)) {
      case 0: case 1: case 2: return literal();
      case 3: case 4: return singular();
      case 5: return `length(${d > 0 && chance(0.3) ? comparable(d - 1) : singular()})`;
      case 6: return `count(${chance(0.5) ? nodes() : singular()})`;
      default: return `value(${chance(0.5) ? nodes() : singular()})`;
    }
  }
  // a JSONPath string literal holding s
  const quoted = (s) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'`;
  function regexCall(d) {
    const f = pick(['match', 'search']);
    const input = chance(0.8) ? singular() : comparable(d);
    const pat = chance(0.75) ? quoted(pattern()) : chance(0.5) ? singular() : comparable(d);
    return `${f}(${input},${ws()}${pat})`;
  }
  // test is one logical expression of depth at most d.
  function test(d) {
    switch (int(11)) {
      case 0: case 1: case 2: case 3:
        return `${comparable(d)}${ws()}${pick(ops)}${ws()}${comparable(d)}`;
      case 4: return `${chance(0.3) ? '!' : ''}${chance(0.6) ? singular() : nodes()}`;
      case 5: case 6: return `${chance(0.25) ? '!' : ''}${regexCall(d)}`;
      case 7: return d > 0 ? `${chance(0.4) ? '!' : ''}(${test(d - 1)})` : `${singular()} ${pick(ops)} ${literal()}`;
      case 8: return d > 0 ? `${test(d - 1)}${ws()}&&${ws()}${test(d - 1)}` : singular();
      case 9: return d > 0 ? `${test(d - 1)}${ws()}||${ws()}${test(d - 1)}` : singular();
      default: return `${literal()}${ws()}${pick(ops)}${ws()}${singular()}`;
    }
  }
  // path is a query over {xs, obj, …} with one or two filters.
  function path(root = '$') {
    const f = test(int(3));
    return pick([
      `${root}.xs[?${f}]`, `${root}.xs[?${f}]`, `${root}.xs[?${f}].a`, `${root}..[?${f}]`, `${root}.obj[?${f}]`,
      `${root}.xs[?@[?${f}]]`, `${root}.xs[?${f}][?${test(1)}]`, `${root}.xs[?${f}, ?${test(1)}]`, `${root}[?${f}]`,
    ]);
  }

  const atoms = ['a', 'b', '.', 'é', '😀', '\\.', '\\n', '\\p{L}', '\\p{Lu}', '\\P{Nd}', '[a-c]', '[^a]', '[-a]',
    '(a|b)', '(ab)', '()', '^', '$', '^', '$', '\\d', '\\w', '(?:a)', '[', '\\^', '[$]', '\\-', 'A',
    '(a{2})', '((a){20})', '(ab{2})'];
  const quants = ['', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '{2,1}', '{1000}', '{1001}', '{0,1001}',
    '{1,2000}', '{3000,}', '*?', '{,2}', '{0}', '{'];
  // pattern is an I-Regexp, or near one: anchors with and without a
  // quantifier, repeat counts either side of 1000, nested ones whose
  // product passes 1000 (of a fixed width: an ambiguous one makes the
  // reference backtrack for minutes), classes, groups.
  function pattern() {
    let r = '';
    for (let n = int(4); n >= 0; n--) {
      r += pick(atoms) + pick(quants);
      if (chance(0.1)) r += '|';
    }
    return r;
  }
  const strPool = ['', 'a', 'b', 'ab', 'ba', 'aab', 'A', 'é', '😀', 'a\nb', 'abc', 'a'.repeat(1001), 'b'.repeat(3000),
    'x.y', '-', '^', '$', '10', 'aaa'];
  const text = () => pick(strPool);

  const pool = [1, 2, 0, -1, 1.5, 3, 'a', 'b', '', 'é', '😀', 'ab', 'A', '10', true, false, null, [], [1], [1, 2],
    { a: 1 }, {}, { a: 'a', b: [1, 2] }, { n: 2 }, { s: 'a' }, 1e308, -1e308, 'a\nb', '\uffff'];
  // value is a JSON value of any type, members named as the filters ask.
  function value(depth = 2) {
    if (depth <= 0 || chance(0.5)) return pick(pool);
    if (chance(0.4)) return Array.from({ length: int(4) }, () => value(depth - 1));
    const o = {};
    for (let i = int(4); i > 0; i--) o[pick(members)] = value(depth - 1);
    return o;
  }
  // data is what the paths run over.
  function data() {
    return {
      xs: Array.from({ length: 2 + int(8) }, () => value()),
      obj: value(2),
      n: pick([2, 1, 'a', null, 1.5]),
      s: pick(['a', 'b', '', 2]),
      p: pattern(),
    };
  }
  return { test, path, pattern, text, data, value, literal };
}
