// Differential runs of the query area: generates random query documents
// and data from a seed, family by family, asks the reference for each
// outcome and writes one JSON line per document:
//
//   {"family", "name", "doc", "data", "out": golden}
//
// where the golden is what gen-query.mjs writes (result, count,
// empty, externals or error). engine/query's TestDifferential reads such a
// file (JETFLOW_DIFF=path go test ./engine/query -run TestDifferential)
// and reports where jetflow answers differently.
//
//   node conformance/differential.mjs [--seed N] [--count K] [--family F,...] > diff.jsonl
//
// Families: dates, format, mixed (one operator's answer fed to another), series, spatial, vectors, strings, numbers, arity,
// selectors (RFC 9535 selectors on $ and variables), encoding (§3–§4 rules), flwor (FLWOR clauses and quantifiers), sequences (§8.2–§8.10 over mixed items), paths (JSONPath filters, filters.mjs), regex (I-Regexp patterns, filters.mjs) and the rest of the families table below.
// Nothing here is committed as a golden: a class of disagreement found
// this way is written down as hand-picked cases in cases/query/diff-*.json.
import { run } from './gen-query.mjs';
import { compileJsonQuery } from '@jarenjs/json/query';
import { options, generator } from './random.mjs';
import { filterGenerator } from './filters.mjs';

const arg = options();
const firstSeed = Number(arg('seed', '1')) >>> 0;
const count = Number(arg('count', '1000'));

const { rnd, int, pick, chance } = generator(firstSeed);
const flt = filterGenerator({ int, pick, chance });
const pad = (n, w) => String(n).padStart(w, '0');

// ---- values of every type, for type errors
const scalars = [null, true, false, 0, -0, 1, -1, 1.5, 'x', '', 'a b', 1e21, -1e-7, 2 ** 53, NaN];
function anyValue() {
  switch (int(6)) {
    case 0: return pick(scalars.filter((x) => !Number.isNaN(x)));
    case 1: return [];
    case 2: return [pick([1, 'a', null]), pick([2, 'b', true])];
    case 3: return {};
    case 4: return { a: pick([1, 'x', null]) };
    default: return pick(['1', '2026-01-01', 'P1D', 'x', '0']);
  }
}

// ---- dates
function year() {
  if (chance(0.85)) return String(1900 + int(250));
  return pick(['2026', '2024', '1970', '0000', '0001', '9999', '1969', '2000', '1900', '2100', '2027', '2020',
    '+002026', '-000001', '12345', '26', '-0001', '+2026', '1582', '0100']);
}
function dateStr() {
  const y = year();
  const m = chance(0.95) ? pad(1 + int(12), 2) : pick(['00', '13', '1', '2', '012']);
  const lastDay = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][(Number(m) - 1 + 12) % 12] || 31;
  const d = chance(0.93) ? pad(1 + int(lastDay), 2) : pick(['00', '29', '30', '31', '32', '1', '3']);
  const sep = chance(0.97) ? '-' : pick(['', '/', '.']);
  let s = chance(0.97) ? `${y}${sep}${m}${sep}${d}` : pick([`${y}-W${pad(1 + int(53), 2)}-${1 + int(7)}`, `${y}-${pad(1 + int(366), 3)}`, `${y}-${m}`, y, `${y}${m}${d}`]);
  return s;
}
function timeStr() {
  const h = chance(0.97) ? pad(int(24), 2) : pick(['24', '25', '1', '7']);
  const mi = chance(0.97) ? pad(int(60), 2) : pick(['60', '5']);
  const se = chance(0.95) ? pad(int(60), 2) : pick(['60', '61', '5']);
  let t = chance(0.95) ? `${h}:${mi}:${se}` : pick([`${h}:${mi}`, `${h}${mi}${se}`, `${h}`]);
  if (chance(0.35)) t += chance(0.8) ? '.' + String(int(1e9)).slice(0, 1 + int(9)) : pick(['.5', '.123', '.000', '.1234567890', ',5', '.', '.999', '.0001', '.50']);
  return t;
}
function offsetStr() {
  if (chance(0.9)) return chance(0.3) ? `${pick(['+', '-'])}${pad(int(24), 2)}:${pad(int(60), 2)}` : pick(['Z', 'z', '+00:00', '-00:00', '+01:00', '-05:00', '+05:30', '+14:00', '-12:00', '-09:30', '+05:45', '+23:59', '-23:59']);
  return pick(['Z', 'Z', 'z', '+00:00', '-00:00', '+01:00', '-05:00', '+05:30', '+14:00', '-12:00', '+23:59',
    '+24:00', '-23:59', '+0530', '+05', '+5:30', '+01:60', ' Z', '', '[Europe/Paris]', 'Z[UTC]', 'UTC', 'GMT']);
}
function dateValue() {
  switch (int(14)) {
    case 0: case 1: case 10: return dateStr();
    case 2: return timeStr() + (chance(0.9) ? offsetStr() : '');
    case 3: case 11: return pick(['', ' ', '2026-01-01 ', ' 2026-01-01', 'now', 'T10:00:00', '2026-01-01T', 'P1D',
      '2026-02-29', '2024-02-29', '1900-02-29', '2000-02-29', '2026-01-01T24:00:00Z', '2016-12-31T23:59:60Z',
      '2026-03-29T01:30:00+01:00', '2026-10-25T02:30:00+02:00', '1970-01-01T00:00:00Z', '-271821-04-20T00:00:00Z',
      '+275760-09-13T00:00:00Z', '275760-09-13T00:00:00Z', '9999-12-31T23:59:59.999Z', '0000-01-01T00:00:00Z']);
    case 4: return chance(0.5) ? anyValue() : timeStr();
    default: return dateStr() + pick(['T', 'T', 'T', 'T', 'T', 'T', 't', ' ', 'T']) + timeStr() + offsetStr();
  }
}
function duration() {
  if (chance(0.1)) return pick(['', 'P', 'PT', 'P1', 'PT1', '1D', 'P-1D', '-P1D', '+P1D', 'P1.5D', 'P0.5M', 'P1,5D',
    'PT0.5S', 'PT.5S', 'P1W', 'P1W1D', 'P1Y2M3W', 'pt1h', 'P1DT', 'PT1H1H', 'P1MT1H', 'P0D', 'PT0S', 'P1.5Y',
    'P0.25Y', 'P1.5W', 'PT1.5H', 'PT1.0001S', 'P100000Y', 'P1E3D', 'P1d', 'P1Q']);
  const parts = [];
  if (chance(0.4)) parts.push(`${int(3)}Y`);
  if (chance(0.4)) parts.push(`${int(14)}M`);
  if (chance(0.2)) parts.push(`${int(3)}W`);
  if (chance(0.5)) parts.push(`${int(40)}D`);
  const tp = [];
  if (chance(0.4)) tp.push(`${int(30)}H`);
  if (chance(0.4)) tp.push(`${int(90)}M`);
  if (chance(0.4)) tp.push(`${int(90)}${chance(0.3) ? '.' + int(1000) : ''}S`);
  let s = 'P' + parts.join('') + (tp.length ? 'T' + tp.join('') : '');
  if (s === 'P') s = 'P1D';
  return (chance(0.1) ? '-' : '') + s;
}
const units = ['year', 'quarter', 'month', 'week', 'day', 'hour', 'minute', 'second', 'millisecond'];
const unit = () => (chance(0.95) ? pick(units) : pick(['days', 'Day', 'ms', '', 'decade', 'weeks', 1, null]));
function amount() {
  return pick([0, 1, -1, 2, 12, 13, -13, 1.5, 0.5, -0.5, 0.25, 1e6, -1e6, 1e15, 2 ** 53, 366, 100, 0.001, '1', null, -0, 1.0000001]);
}
function epochNumber() {
  return pick([0, -0, 1, -1, 1767225600000, 1767225600000.5, 8.64e15, -8.64e15, 8.64e15 + 1, -8.64e15 - 1,
    253402300799999, 253402300800000, -62167219200000, -62167219200001, 1e20, 0.1, -0.5, 1.7e308, 951782400000,
    1709164800000, '0', null]);
}
function datesDoc() {
  const V = () => dateValue();
  switch (int(8)) {
    case 0: return { [pick(['$is-date', '$is-time', '$is-datetime', '$is-duration'])]: chance(0.3) ? duration() : V() };
    case 1: return { [pick(['$year', '$month', '$day', '$hours', '$minutes', '$seconds', '$offset', '$week', '$week-year', '$quarter', '$weekday', '$epoch'])]: V() };
    case 2: return { $datetime: chance(0.8) ? epochNumber() : rnd() * 2e13 - 1e13 };
    case 3: {
      const op = pick(['$date-add', '$date-sub']);
      return chance(0.5) ? { [op]: [V(), duration()] } : { [op]: [V(), amount(), unit()] };
    }
    case 4: return { [pick(['$start-of', '$end-of'])]: [V(), unit()] };
    case 5: return { '$date-diff': [V(), V(), unit()] };
    case 6: return { '$epoch': { [pick(['$date-add', '$date-sub', '$start-of', '$end-of'])]: [V(), chance(0.5) ? duration() : unit()] } };
    default: return { '$datetime': { '$epoch': V() } };
  }
}

// ---- $date-format patterns
const tokens = ['yyyy', 'yy', 'y', 'yyy', 'yyyyy', 'MM', 'M', 'MMM', 'MMMM', 'dd', 'd', 'ddd', 'HH', 'H', 'hh', 'h',
  'mm', 'm', 'ss', 's', 'S', 'SS', 'SSS', 'SSSS', 'XXX', 'XX', 'X', 'XXXX', 'x', 'xxx', 'Z', 'ZZ', 'DDD', 'D', 'DD',
  'ww', 'w', 'Q', 'QQ', 'E', 'EE', 'EEE', 'EEEE', 'a', 'e', 'u', 'G', 'k', 'K', 'W', 'L', 'z', 'O', 'Y', 'YYYY', 'c',
  "'T'", "''", "'", "'abc'", "'it''s'", '-', ':', ' ', '/', '.', ',', '[', ']', '\\', '%', 'T', 'q', 'n', '0', '9',
  'é', '😀', '{', '#'];
const safe = ['yyyy', 'yy', 'y', 'MM', 'M', 'dd', 'd', 'HH', 'H', 'hh', 'h', 'mm', 'm', 'ss', 's', 'S', 'SS', 'SSS',
  'XXX', 'XX', 'X', 'DDD', 'D', 'ww', 'w', 'Q', 'E', "'T'", "''", '-', ':', ' ', '/', '.', ','];
function safePattern() {
  let p = '';
  const n = 1 + int(6);
  for (let i = 0; i < n; i++) p += pick(safe);
  return p;
}
function pattern() {
  let p = '';
  const n = 1 + int(5);
  for (let i = 0; i < n; i++) p += pick(tokens);
  return p;
}
function formatDoc() {
  const p = chance(0.95) ? pattern() : anyValue();
  if (chance(0.5)) return { '$date-format': [dateStr() + 'T' + timeStr() + offsetStr(), safePattern()] };
  const v = chance(0.85) ? (chance(0.8) ? dateStr() : '') + (chance(0.7) ? 'T' + timeStr() + offsetStr() : '').replace(/^T/, (x) => x) : dateValue();
  return chance(0.2) ? { '$date-format': [v, '$.p'], _data: { p } } : { '$date-format': [v, p] };
}

// ---- series
const sampleAt = () => chance(0.7) ? pick([1767225600000 + int(48) * 900000, 1767225600000 + int(1e8), `2026-01-0${1 + int(3)}T${pad(int(24), 2)}:${pad(int(60), 2)}:00Z`, 86400000 * int(400), -86400000 * int(400)]) : pick([0, 1, -1, 3600000, 1767225600000 + int(8) * 1800000, 1767225600000 + int(100000000),
  '2026-01-01T00:00:00Z', '2026-01-01', '2026-03-29T01:30:00+01:00', '2026-02-28T23:59:59.999Z', 'x', null, true,
  1.5, -3600000.5, 86400000 * int(60), '2024-02-29T23:59:60Z', 8.64e15, [], {}]);
const sampleValue = () => pick([1, 2.5, 0, -1, null, null, 0.1, 0.2, 1e308, -1e308, 'x', true, 3, 7, 1e-300]);
function row() {
  if (chance(0.02)) return anyValue();
  const r = { at: sampleAt(), value: chance(0.7) ? pick([1, 2.5, 0, -1, null, 0.1, 3, 7, 10, 0.2]) : sampleValue() };
  if (chance(0.03)) delete r.value;
  if (chance(0.02)) delete r.at;
  if (chance(0.2)) r.g = pick(['a', 'b', 1, null, true]);
  if (chance(0.1)) r.on = sampleAt();
  return r;
}
function rows() {
  const n = int(7);
  const out = [];
  for (let i = 0; i < n; i++) out.push(row());
  if (chance(0.6)) out.sort((a, b) => (typeof a?.at === 'number' && typeof b?.at === 'number' ? a.at - b.at : 0));
  return out;
}
const width = () => (chance(0.7) ? pick(['PT1H', 'PT30M', 'P1D', 'P1W', 'P7D', 'P1M', 'P1Y', 'P3M', 'PT15M', 'PT1S', 'P2D', 'PT1.5H', 'P1MT1H', 'P0D', 'PT0S', 'P1Q', 'x', '-PT1H', 'P1Y2M']) : pick([3600000, 1, 0, -1, 1.5, 86400000, 1e20, '3600000', null, 7 * 86400000]));
const origin = () => pick([0, 1767225600000, '2026-01-31', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00+05:00', -1, 'x', null, 1.5, '1969-12-31T23:00:00Z', '2024-02-29']);
function calendar(spec) {
  if (chance(0.3)) spec.offset = pick([0, 60, -300, 330, 840, -720, 1.5, 1440, '60', -0]);
  if (chance(0.1)) spec.zone = pick(['UTC', 'Europe/Paris', 'utc', 'Z', '']);
  if (chance(0.08)) spec.disambiguation = pick(['reject', 'earlier', 'later', 'x']);
  return spec;
}
function seriesDoc() {
  const src = () => (chance(0.7) ? '$.rows[*]' : pick(['$.rows', '$.missing', '$.rows[0]']));
  switch (int(5)) {
    case 0: {
      const args = [pick([sampleAt(), '$.rows[0].at']), width()];
      if (chance(0.5)) args.push(origin());
      if (chance(0.4)) { if (args.length < 3) args.push(null); args.push(calendar({})); }
      return { '$time-bucket': args };
    }
    case 1: {
      const spec = { every: width() };
      if (chance(0.4)) spec.aggregate = pick(['sum', 'mean', 'min', 'max', 'first', 'last', 'count', 'avg', 'median']);
      if (chance(0.4)) spec.fill = pick(['omit', 'null', 'zero', 'locf', 'linear', 'none']);
      if (chance(0.2)) spec.origin = origin();
      if (chance(0.15)) spec.start = pick([0, 1767225600000, '2026-01-01', 'x', 1767225600000 + 3600000 * int(5)]);
      if (chance(0.15)) spec.end = pick([0, 1767225600000 + 3600000 * int(30), '2026-01-02', 'x']);
      if (chance(0.1)) spec.at = pick(['$.on', '$.at', '$.x', '$[*]', 'at', '$.length']);
      if (chance(0.1)) spec.value = pick(['$.value', '$.g', '$.x', '$..v']);
      if (chance(0.05)) spec.every2 = 1;
      if (chance(0.05)) delete spec.every;
      return { $resample: [src(), calendar(spec)] };
    }
    case 2: {
      const spec = { width: width() };
      if (chance(0.4)) spec.aggregate = pick(['sum', 'mean', 'min', 'max', 'first', 'last', 'count', 'avg']);
      if (chance(0.3)) spec.minPeriods = pick([0, 1, 2, 3, -1, 1.5, '2', null]);
      if (chance(0.1)) spec.at = pick(['$.on', '$.at', '$.x']);
      if (chance(0.05)) spec.windth = 1;
      return { $rolling: [src(), calendar(spec)] };
    }
    case 3: {
      const spec = {};
      if (chance(0.5)) spec.direction = pick(['backward', 'forward', 'nearest', 'back']);
      if (chance(0.4)) spec.tolerance = pick(['PT1H', 'PT30M', 0, 3600000, 'P1M', -1, 'x', 'P1D']);
      if (chance(0.3)) spec.by = pick(['$.g', '$.x', '$.value']);
      if (chance(0.1)) spec.leftAt = pick(['$.on', '$.at']);
      if (chance(0.1)) spec.rightAt = pick(['$.on', '$.at']);
      const args = [src(), pick(['$.rows2[*]', '$.rows[*]', '$.rows2'])];
      if (Object.keys(spec).length || chance(0.3)) args.push(spec);
      return { $asof: args };
    }
    default: {
      const iv = () => (chance(0.85) ? { start: sampleAt(), end: sampleAt() } : anyValue());
      return { $overlaps: [{ $const: iv() }, { $const: iv() }] };
    }
  }
}

// ---- spatial
function coord() {
  return chance(0.9) ? pick([0, 1, -1, 10, 45.5, 90, -90, 180, -180, 179.9, -179.9, 89.999, 120, 30.25, 5, 3])
    : pick([200, -200, 91, 1e5, -7.5e6, 1e-320, 360, 540, -270]);
}
// coordinates JavaScript reads as NaN
const nanOk = true;
const nanCoord = () => (nanOk && chance(0.05) ? pick(['1', null, 'x', true, []]) : coord());
const pos = () => (chance(0.9) ? [nanCoord(), nanCoord()] : nanOk ? pick([[coord()], [coord(), coord(), coord()], [], 'x', 1]) : [coord(), coord(), coord()]);
function ring() {
  const n = pick([3, 4, 4, 5, 5, 6]);
  const r = [];
  for (let i = 0; i < n - 1; i++) r.push(pos());
  if (chance(0.85) && r.length) r.push(r[0]);
  else r.push(pos());
  return r;
}
function geometry(depth = 0) {
  const t = pick(['Point', 'LineString', 'Polygon', 'MultiPoint', 'MultiLineString', 'MultiPolygon', 'GeometryCollection', 'Feature', 'FeatureCollection', 'Polygon', 'Bad']);
  switch (t) {
    case 'Point': return { type: t, coordinates: pos() };
    case 'LineString': return { type: t, coordinates: [pos(), pos(), ...(chance(0.5) ? [pos()] : [])] };
    case 'Polygon': return { type: t, coordinates: chance(0.8) ? [ring(), ...(chance(0.3) ? [ring()] : [])] : pick([[], [[]], ring()]) };
    case 'MultiPoint': return { type: t, coordinates: [pos(), pos()] };
    case 'MultiLineString': return { type: t, coordinates: [[pos(), pos()], [pos(), pos()]] };
    case 'MultiPolygon': return { type: t, coordinates: [[ring()], [ring()]] };
    case 'GeometryCollection': return depth > 1 ? { type: 'Point', coordinates: pos() } : { type: t, geometries: [geometry(depth + 1), geometry(depth + 1)] };
    case 'Feature': return { type: t, geometry: depth > 1 ? null : geometry(depth + 1), properties: chance(0.5) ? {} : null };
    case 'FeatureCollection': return depth > 1 ? { type: t, features: [] } : { type: t, features: [geometry(depth + 1)] };
    default: return chance(0.5) ? anyValue() : { type: pick(['point', 'Circle', 'Polygon']), coordinates: pick([[], 'x', 5, [[1, 2]]]) };
  }
}
const wkt = () => pick(['POINT (1 2)', 'POINT(1 2)', 'point (1 2)', 'POINT EMPTY', 'POINT Z (1 2 3)', 'POINT M (1 2 3)',
  'POINT ZM (1 2 3 4)', 'LINESTRING (0 0, 1 1)', 'LINESTRING (0 0)', 'POLYGON ((0 0, 1 0, 1 1, 0 0))', 'POLYGON ((0 0, 1 0, 1 1))',
  'MULTIPOINT ((1 2), (3 4))', 'MULTIPOINT (1 2, 3 4)', 'GEOMETRYCOLLECTION (POINT (1 2))', 'GEOMETRYCOLLECTION EMPTY',
  ' POINT (1 2)', 'POINT (1 2) ', 'POINT (1e400 2)', 'POINT (-0 0)', 'POINT (1 2 3)', 'POINT (1)', 'POLYGON EMPTY',
  'MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))', 'LINESTRING (0 0, 1 1 1)', 'POINT (.5 1.)', 'POINT (+1 2)',
  'POINT (1 2)\n', 'POINT\t(1 2)', 'MULTILINESTRING ((0 0, 1 1), EMPTY)', 'POINT (0x10 2)', 'TRIANGLE ((0 0, 1 0, 1 1, 0 0))']);
function spatialDoc() {
  const G = () => (chance(0.1) ? '$.missing' : { $const: geometry() });
  switch (int(12)) {
    case 0: return { $bbox: G() };
    case 1: return { $area: G() };
    case 2: return { $length: G() };
    case 3: return { $centroid: G() };
    case 4: return { $distance: [G(), G()] };
    case 5: return { $within: [{ $const: pos() }, G()] };
    case 6: return { '$bbox-intersects': [G(), G()] };
    case 7: return { $geohash: [G(), pick([1, 5, 12, 0, 13, 1.5, '5', -1, null])] };
    case 8: return { [pick(['$geohash-bounds', '$geohash-neighbours'])]: pick(['u4pruyd', 'u', '', 'zzzz', '0000', 'a', 'U4PR', 'ezs42', 'b', 'p', 1, null]) };
    case 9: return { '$geo-parse': chance(0.9) ? wkt() : anyValue() };
    case 10: return { '$geo-text': G() };
    default: return { '$geo-simplify': [G(), pick([0, 0.1, 1, 10, -1, 'x', null, 1e308])] };
  }
}

// ---- vectors
function vec() {
  const n = pick([0, 1, 2, 3, 3, 4]);
  const v = [];
  for (let i = 0; i < n; i++) v.push(chance(0.95) ? pick([0, 1, -1, 0.5, 2, 1e-3, 3.14159, 1e200, -1e200, 1e-200, 7]) : pick(['1', null, true, []]));
  return chance(0.95) ? v : anyValue();
}
function vectorsDoc() {
  return { $similarity: [{ $const: vec() }, chance(0.1) ? '$.missing' : { $const: vec() }] };
}

// ---- strings and regular expressions
const strPool = ['', 'a', 'abc', 'ABC', 'Straße', 'İ', 'ß', 'ǅ', 'ﬀ', 'é', 'e\u0301', '😀', 'a😀b',
  '  a  b  ', '\ta\nb\r', '\u00a0a', 'a.b', 'a\nb', '日本語', 'ΣΑΣ', 'σς', 'aaa', 'a-b_c', 'x y z', '123', '\u2028'];
const rePool = ['a', '.', 'a*', 'a+', '^a', 'a$', '[a-c]', '[^a]', '\\d', '\\w', '\\s', '\\p{L}', '\\p{Lu}', '\\P{L}',
  '(a|b)', 'a{2}', 'a{2,}', 'a{,2}', '[', '(', '\\', '.*', '.+', '\\.', '[\\d]', '\\p{IsBasicLatin}', '(?:a)', '(?i)a',
  'a?', '\\n', '\\r', '\\t', '[a-]', '[-a]', '\\b', 'a|', '|', '()', 'é', '😀', '.{2}', '[😀]', '\\p{Nd}', '\\p{Greek}',
  '\\S', '\\W', '\\D', '\\^', 'x*y', '[\\p{L}]', '\\$', '$', '^', 'a{1,2}?'];
const S = () => (chance(0.9) ? pick(strPool) : anyValue());
function stringsDoc() {
  switch (int(10)) {
    case 0: return { $concat: Array.from({ length: int(4) }, () => (chance(0.7) ? S() : pick([1.5, -0, 1e21, true, null]))) };
    case 1: return { '$string-join': [{ $const: Array.from({ length: int(4) }, S) }, ...(chance(0.5) ? [S()] : [])] };
    case 2: return { $substring: [S(), pick([0, 1, -1, 1.5, 2.5, -0.5, 1e10, '1', null]), ...(chance(0.5) ? [pick([0, 1, 2, -1, 0.5, 1.5, 1e10, '1'])] : [])] };
    case 3: return { [pick(['$contains', '$starts-with', '$ends-with'])]: [S(), S()] };
    case 4: return { [pick(['$upper', '$lower', '$string-length', '$normalize-space'])]: S() };
    case 5: case 6: return { [pick(['$match', '$search'])]: [S(), chance(0.9) ? pick(rePool) : anyValue()] };
    case 7: return { $replace: [S(), chance(0.9) ? pick(rePool) : anyValue(), chance(0.9) ? pick(['', 'x', '$1', '\\', '$$']) : anyValue()] };
    case 8: return { $string: pick(strPool) };
    default: return { '$string-length': { $concat: [S(), S()] } };
  }
}

// ---- numbers
const nums = [0, -0, 1, -1, 0.1, 0.2, 0.3, 1e21, 1e-7, 1e-6, 123456789012345680000, 2 ** 53, 2 ** 53 + 2, -(2 ** 53),
  1.7976931348623157e308, 5e-324, 0.5, 1.5, 2.5, -2.5, -0.5, 3, 7, 1e308, 123.456, 100, 1e100, 4.35, 0.000001, 1e-10];
const numStr = ['1', '-0', '0', '1e3', '1E+3', '+1', '.5', '5.', '01', '0x10', ' 1', '1 ', 'Infinity', 'NaN', '1e400',
  '-1e-400', '1.0', '-', '', '1_000', '12345678901234567890', '0.1e-7', '1e', 'true'];
function numbersDoc() {
  const N = () => (chance(0.9) ? pick(nums) : pick(['1', null, true, 'x']));
  switch (int(9)) {
    case 0: return { $string: { [pick(['$add', '$sub', '$mul', '$div', '$idiv', '$mod'])]: [N(), N()] } };
    case 1: return { [pick(['$add', '$sub', '$mul', '$div', '$idiv', '$mod'])]: [N(), N()] };
    case 2: return { $string: N() };
    case 3: return { $number: chance(0.8) ? pick(numStr) : N() };
    case 4: return { [pick(['$sum', '$avg', '$min', '$max', '$count'])]: Array.from({ length: int(4) }, N) };
    case 5: return { $range: [pick([0, 1, -1, 1.5, 2 ** 53, 2 ** 53 - 1, 'x', null, 3]), pick([0, 3, 5, 1.5, 2 ** 53, -1, null])] };
    case 6: return { $subsequence: [{ $const: [1, 2, 3, 4] }, pick([0, 1, -1, 1.5, 2.5, -0.5, 1e300, -1e300]), ...(chance(0.5) ? [pick([0, 1, 2, 1.5, -1, 1e300, 2.5])] : [])] };
    case 7: return { [pick(['$eq', '$ne', '$lt', '$le', '$gt', '$ge'])]: [N(), N()] };
    default: return { $concat: [{ $neg: N() }, '|', { $div: [N(), N()] }] };
  }
}

// ---- wrong types and arity in every operator
const allOps = ['$add', '$and', '$area', '$asof', '$avg', '$bbox', '$bbox-intersects', '$boolean', '$centroid', '$coalesce',
  '$concat', '$contains', '$count', '$date-add', '$date-diff', '$date-format', '$date-sub', '$datetime', '$day', '$default',
  '$distance', '$distinct', '$div', '$end-of', '$ends-with', '$entries', '$epoch', '$eq', '$exists', '$from-entries', '$ge',
  '$geo-parse', '$geo-simplify', '$geo-text', '$geohash', '$geohash-bounds', '$geohash-neighbours', '$get', '$gt', '$head',
  '$hours', '$idiv', '$if', '$index-of', '$is-array', '$is-boolean', '$is-date', '$is-datetime', '$is-duration', '$is-null',
  '$is-number', '$is-object', '$is-string', '$is-time', '$le', '$length', '$lower', '$lt', '$match', '$max', '$min',
  '$minutes', '$mod', '$month', '$mul', '$ne', '$neg', '$normalize-space', '$not', '$number', '$offset', '$or', '$overlaps',
  '$quarter', '$range', '$replace', '$resample', '$reverse', '$rolling', '$search', '$seconds', '$seq', '$similarity',
  '$sort', '$start-of', '$starts-with', '$string', '$string-join', '$string-length', '$subsequence', '$substring', '$sum',
  '$tail', '$time-bucket', '$upper', '$week', '$week-year', '$weekday', '$within', '$year',
  // §8.11 and §8.12, refused as the reference refuses them, and the escapes
  '$valid', '$assert', '$call', '$map', '$empty', '$nosuch', '$as'];
function operand() {
  switch (int(7)) {
    case 0: return pick([1, 'x', null, true, 0, -1, 'P1D', '2026-01-01', 1.5]);
    case 1: return { $const: anyValue() };
    case 2: return pick(['$.missing', '$.two[*]', '$.obj', '$.arr', '$.num', '$.str']);
    case 3: return [];
    case 4: return { $seq: [1, 2] };
    case 5: return {};
    default: return { $const: pick([[1, 2], { a: 1 }, 'x', 3]) };
  }
}
function arityDoc() {
  const op = pick(allOps);
  const n = int(5);
  const args = Array.from({ length: n }, operand);
  let body;
  if (n === 1 && chance(0.5)) body = args[0];
  else body = args;
  const doc = { [op]: body };
  // place it inside other constructs, so positions vary
  switch (int(9)) {
    case 4: return { $for: { x: '$.arr[*]' }, $return: doc };
    case 5: return { $for: { x: '$.arr[*]' }, $where: doc, $return: '$x' };
    case 6: return { $let: { v: doc }, $return: '$v' };
    case 7: return { $some: { x: '$.arr[*]' }, $satisfies: doc };
    case 8: return { $for: { x: '$.arr[*]' }, $orderby: [doc], $return: '$x' };
    case 0: return [1, doc];
    case 1: return { a: doc };
    case 2: return { $if: [true, doc, 0] };
    default: return doc;
  }
}

// ---- compositions: one operator's answer fed to another
function mixedDoc() {
  const V = () => (chance(0.8) ? dateStr() + (chance(0.7) ? 'T' + timeStr() + offsetStr() : '') : dateValue());
  const U = () => pick(units);
  switch (int(12)) {
    case 0: return { '$date-format': [{ [pick(['$date-add', '$date-sub'])]: [V(), duration()] }, safePattern()] };
    case 1: return { '$date-diff': [{ '$start-of': [V(), U()] }, { '$end-of': [V(), U()] }, U()] };
    case 2: return { $datetime: { '$time-bucket': [{ $epoch: V() }, width(), ...(chance(0.5) ? [origin()] : [])] } };
    case 3: return { $string: { $epoch: V() } };
    case 4: return { [pick(['$seconds', '$offset', '$week', '$week-year', '$weekday', '$quarter', '$day'])]: { [pick(['$date-add', '$date-sub', '$start-of', '$end-of'])]: [V(), chance(0.5) ? U() : duration()] } };
    case 5: return { '$date-add': [V(), amount(), U()] };
    case 6: return { '$date-diff': [V(), { '$date-add': [V(), duration()] }, U()] };
    case 7: return { $datetime: { $add: [{ $epoch: V() }, pick([1, -1, 0.5, 86400000, -0.5, 999, 1e3])] } };
    case 8: return { '$date-format': [{ $datetime: epochNumber() }, safePattern()] };
    case 9: return { $for: { d: { $const: [V(), V(), V()] } }, $return: { [pick(['$epoch', '$year', '$hours', '$is-datetime', '$is-date'])]: '$d' } };
    case 10: return { $sort: { $for: { d: { $const: [V(), V(), V()] } }, $where: { '$is-datetime': '$d' }, $return: { $epoch: '$d' } } };
    default: return { '$end-of': [{ '$start-of': [V(), U()] }, U()] };
  }
}

// ---- random floats and code points where the pools above hold few
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
function anyDouble() {
  u32[0] = int(2 ** 32); u32[1] = int(2 ** 32);
  return Number.isFinite(f64[0]) ? f64[0] : 1;
}
function realish() {
  switch (int(6)) {
    case 0: return anyDouble();
    case 1: return (rnd() - 0.5) * 10 ** (int(40) - 20);
    case 2: return Math.round((rnd() - 0.5) * 10 ** int(22));
    case 3: return Number((rnd() * 1000).toFixed(int(8)));
    case 4: return int(1000) / pick([3, 7, 10, 100, 1000, 1024]);
    default: return (rnd() - 0.5) * 2 ** (int(2100) - 1050);
  }
}
const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x530, 0x58f], [0x1e00, 0x1fff],
  [0x2000, 0x206f], [0x2c00, 0x2c7f], [0xfb00, 0xfb4f], [0xff00, 0xffef], [0x10400, 0x1044f], [0x1f600, 0x1f64f],
  [0x10a0, 0x10ff], [0x1c80, 0x1cbf], [0xa640, 0xa69f], [0x0130, 0x0131], [0x1e9e, 0x1e9e], [0x3000, 0x303f]];
function randomText() {
  let t = '';
  const n = int(6);
  for (let i = 0; i < n; i++) {
    const [lo, hi] = pick(blocks);
    const cp = lo + int(hi - lo + 1);
    // no lone surrogates, nor letters newer than Go's Unicode 15.0 tables
    if (cp >= 0xd800 && cp <= 0xdfff || cp === 0x1c89 || cp === 0x1c8a) continue;
    t += String.fromCodePoint(cp);
  }
  return t;
}
function randomRegex() {
  const atoms = ['a', '.', '\\d', '\\w', '\\s', '[a-z]', '[^a]', '\\p{L}', '\\p{Lu}', '\\p{Ll}', '\\p{N}', '\\p{P}',
    '\\p{S}', '\\p{Z}', '\\p{M}', '\\p{Lt}', '\\p{Nd}', '\\p{IsGreek}', '\\P{L}', 'é', 'Σ', '😀', '[α-ω]', '(a|b)', '\\.',
    '[\\p{L}\\d]', '[0-9]', 'x', '\\S', '\\W', '\\D', '\\p{Sm}', '\\p{Cc}', '\\p{Co}', '\\p{Cn}'];
  const qs = ['', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '{0}'];
  let r = '';
  const n = 1 + int(3);
  for (let i = 0; i < n; i++) r += pick(atoms).replaceAll('\\\\', '\\') + pick(qs);
  return r;
}
function randomDoc() {
  const D = () => realish();
  const V = (n) => Array.from({ length: n }, D);
  switch (int(14)) {
    case 0: return { $string: D() };
    case 1: return { $string: { [pick(['$add', '$sub', '$mul', '$div', '$idiv', '$mod'])]: [D(), D()] } };
    case 2: { const n = 1 + int(6); return { $similarity: [{ $const: V(n) }, { $const: V(n) }] }; }
    case 3: return { $distance: [{ $const: [rnd() * 360 - 180, rnd() * 180 - 90] }, { $const: [rnd() * 360 - 180, rnd() * 180 - 90] }] };
    case 4: return { $geohash: [{ $const: [rnd() * 360 - 180, rnd() * 180 - 90] }, 1 + int(12)] };
    case 5: return { '$geo-text': { $const: { type: 'LineString', coordinates: [[D(), D()], [D(), D()]] } } };
    case 6: return { $datetime: Math.round((rnd() - 0.5) * 2 * 253402300799999 * rnd()) + pick([0, 0.5, 0.25]) };
    case 7: return { '$date-format': [{ $datetime: Math.round((rnd() - 0.3) * 1e13) }, safePattern()] };
    case 8: return { [pick(['$upper', '$lower', '$string-length', '$normalize-space'])]: randomText() };
    case 9: return { [pick(['$match', '$search'])]: [randomText() + pick(['', 'a', '1', ' ', 'aa']), randomRegex()] };
    case 10: return { $replace: [randomText() + pick(['', 'a', '1', ' ', 'aa']), randomRegex(), pick(['', '-', 'é'])] };
    case 11: {
      const rowsN = Array.from({ length: 1 + int(8) }, () => ({ at: 1767225600000 + int(20) * 900000 + int(3) * 1000, value: chance(0.1) ? null : D() }));
      return chance(0.5)
        ? { $resample: [{ $const: rowsN }, { every: pick(['PT1H', 'PT30M', 'PT15M', 'PT2H']), aggregate: pick(aggregates), fill: pick(['omit', 'null', 'zero', 'locf', 'linear']) }] }
        : { $rolling: [{ $const: rowsN }, { width: pick(['PT1H', 'PT30M', 'PT15M', 'PT2H']), aggregate: pick(aggregates), minPeriods: 1 + int(3) }] };
    }
    case 12: return { [pick(['$sum', '$avg', '$min', '$max'])]: { $const: V(int(6)) } };
    default: return { $number: String(D()) };
  }
}
const aggregates = ['sum', 'mean', 'min', 'max', 'first', 'last', 'count'];

// ---- calendar series: valid specs across month, year and week seams
function calendarDoc() {
  const base = Date.UTC(2023 + int(4), int(12), 1 + int(31), int(24), int(4) * 15);
  const span = pick([3600000, 86400000, 7 * 86400000, 31 * 86400000, 400 * 86400000]);
  const at = () => {
    const t = base + Math.round((rnd() - 0.3) * span);
    switch (int(4)) {
      case 0: return new Date(t).toISOString().replace('.000Z', 'Z');
      case 1: return new Date(t).toISOString().slice(0, 10);
      default: return t;
    }
  };
  const w = () => pick(['P1M', 'P1Y', 'P3M', 'P1W', 'P7D', 'P1D', 'PT1H', 'P2M', 'P6M', 'PT6H', 'P1DT12H', 'P2W', 'P1Y6M', 'P10D']);
  const clock = () => {
    const c = {};
    if (chance(0.5)) c.offset = pick([60, -300, 330, 840, -720, 345, -570, 0]);
    if (chance(0.1)) c.zone = 'UTC';
    return c;
  };
  const org = () => pick([at(), '2026-01-31', '2024-02-29', '2026-03-31T12:00:00Z', 0, '2025-12-31T23:00:00-05:00', Date.UTC(2026, 0, 31)]);
  const rowsN = () => Array.from({ length: int(9) }, () => ({ at: at(), value: chance(0.15) ? null : pick([1, 2, 3.5, -1, 0.25, 10, 7]) }));
  switch (int(5)) {
    case 0: case 1: {
      const args = [at(), w()];
      if (chance(0.5)) args.push(org());
      if (chance(0.5)) { if (args.length < 3) args.push(null); args.push(clock()); }
      return chance(0.5) ? { $datetime: { '$time-bucket': args } } : { '$time-bucket': args };
    }
    case 2: {
      const spec = { every: w(), ...clock() };
      if (chance(0.5)) spec.aggregate = pick(aggregates);
      if (chance(0.5)) spec.fill = pick(['omit', 'null', 'zero', 'locf', 'linear']);
      if (chance(0.3)) spec.origin = org();
      if (chance(0.2)) { spec.start = at(); spec.end = at(); }
      return { $resample: [{ $const: rowsN() }, spec] };
    }
    case 3: {
      const spec = { width: pick(['PT1H', 'P1D', 'P1W', 'PT30M', 'P2D', 'PT6H']), ...clock() };
      if (chance(0.5)) spec.aggregate = pick(aggregates);
      if (chance(0.3)) spec.minPeriods = 1 + int(3);
      return { $rolling: [{ $const: rowsN() }, spec] };
    }
    default: {
      const spec = {};
      if (chance(0.6)) spec.direction = pick(['backward', 'forward', 'nearest']);
      if (chance(0.5)) spec.tolerance = pick(['PT1H', 'P1D', 'PT30M', 3600000, 'P1W']);
      const l = rowsN().map((r, i) => ({ ...r, g: i % 2 }));
      const r = rowsN().map((x, i) => ({ ...x, g: i % 3 === 0 ? 0 : 1 }));
      if (chance(0.4)) spec.by = '$.g';
      return { $asof: [{ $const: l }, { $const: r }, spec] };
    }
  }
}

// ---- containment on a small grid, coordinates sometimes spelled as
// strings, arrays or unreadable values, which JavaScript compares its way
function withinDoc() {
  const c = () => {
    const n = int(13) - 2;
    switch (int(12)) {
      case 0: return String(n);
      case 1: return [n];
      case 2: return pick(['x', '', null, true, [], {}, [1, 2]]);
      default: return n;
    }
  };
  const ring = () => {
    const r = Array.from({ length: 2 + int(6) }, () => (chance(0.05) ? pick(['ab', 5, []]) : [c(), c()]));
    if (chance(0.8)) r.push(r[0]);
    return r;
  };
  const rings = [ring(), ...(chance(0.3) ? [ring()] : [])];
  const p = [int(25) / 2 - 2, int(25) / 2 - 2];
  const g = chance(0.8) ? { type: 'Polygon', coordinates: rings } : { type: 'MultiPolygon', coordinates: [rings, [ring()]] };
  return { $within: [{ $const: p }, { $const: g }] };
}

// ---- text across the BMP's end and the astral planes: positions,
// lengths and the order of strings
function textDoc() {
  const T = () => pick([randomText(), randomText() + '\uffff', '😀' + randomText(), '\ue000', '\uffff', '😀', 'a', '', 'ä', 'a\u0308', 'Z', 'z', '\u{10ffff}']);
  const n = () => pick([0, 1, 2, 3, -1, 1.5, 2.5, 0.5, -0.5, 10]);
  switch (int(10)) {
    case 0: return { $substring: [T(), n(), ...(chance(0.6) ? [n()] : [])] };
    case 1: { const t = [...T()]; const i = int(t.length + 1); return { [pick(['$contains', '$starts-with', '$ends-with'])]: [t.join(''), (chance(0.5) ? t.slice(i) : t.slice(0, i)).join('')] }; }
    case 2: return { $sort: { $const: Array.from({ length: 2 + int(4) }, T) } };
    case 3: return { [pick(['$min', '$max'])]: { $const: Array.from({ length: 1 + int(4) }, T) } };
    case 4: return { [pick(['$lt', '$le', '$gt', '$ge', '$eq', '$ne'])]: [T(), T()] };
    case 5: return { $for: { s: { $const: Array.from({ length: 2 + int(4) }, T) } }, $orderby: [pick(['$s', { $desc: '$s' }])], $return: '$s' };
    case 6: return { $distinct: { $const: Array.from({ length: 2 + int(4), }, () => pick(['a', 'a\u0308', 'ä', '😀', '\ue000'])) } };
    case 7: return { '$string-join': [{ $const: Array.from({ length: int(4) }, T) }, T()] };
    case 8: return { $replace: [T(), pick(['.', '[😀]', '\\p{L}', 'a|ä', '[\ue000-\uffff]', '[^a]']), '#'] };
    default: return { $for: { s: { $const: Array.from({ length: 2 + int(3) }, T) } }, $groupby: { k: { $substring: ['$s', 0, 1] } }, $orderby: ['$k'], $return: { k: '$k', n: { $count: '$s' } } };
  }
}

// ---- valid instants anywhere in 0000-9999, in any offset and precision
function instant() {
  const ms = Math.round((rnd() * 2 - 0.2) * pick([1e9, 1e11, 1e12, 5e12, 1e13, 2.5e14]));
  const off = chance(0.3) ? 0 : pick([60, -300, 330, 345, -570, 840, -720, 1439, -1439, 1, int(2879) - 1439]);
  const local = new Date(ms + off * 60000);
  if (Number.isNaN(local.getTime())) return '2026-01-01T00:00:00Z';
  const y = local.getUTCFullYear();
  if (y < 0 || y > 9999) return '2026-01-01T00:00:00Z';
  const iso = local.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ
  let frac = '';
  const digits = chance(0.95) ? int(7) : 7 + int(3);
  if (digits > 0) frac = '.' + (iso.slice(20, 23) + String(int(1e6)).padStart(6, '0')).slice(0, digits);
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  const zone = off === 0 && chance(0.6) ? pick(['Z', 'z']) : `${sign}${pad(Math.floor(a / 60), 2)}:${pad(a % 60, 2)}`;
  const body = iso.slice(0, 10) + pick(['T', 'T', 't', ' ']) + iso.slice(11, 19) + frac;
  switch (int(6)) {
    case 0: return iso.slice(0, 10);
    case 1: return iso.slice(11, 19) + frac + zone;
    default: return body + zone;
  }
}
function instantsDoc() {
  const V = instant;
  const U = () => pick(units);
  switch (int(9)) {
    case 0: return { [pick(['$year', '$month', '$day', '$hours', '$minutes', '$seconds', '$offset', '$week', '$week-year', '$quarter', '$weekday', '$epoch', '$is-datetime', '$is-date', '$is-time'])]: V() };
    case 1: return { [pick(['$date-add', '$date-sub'])]: [V(), duration()] };
    case 2: return { [pick(['$date-add', '$date-sub'])]: [V(), amount(), U()] };
    case 3: return { [pick(['$start-of', '$end-of'])]: [V(), U()] };
    case 4: return { '$date-diff': [V(), V(), U()] };
    case 5: return { '$date-format': [V(), safePattern()] };
    case 6: return { $datetime: { $epoch: V() } };
    case 7: return { $for: { d: { $const: [V(), V(), V(), V()] } }, $groupby: { w: { '$start-of': ['$d', U()] } }, $orderby: ['$w'], $return: { w: '$w', n: { $count: '$d' } } };
    default: return { '$date-diff': [V(), { [pick(['$date-add', '$date-sub'])]: [V(), amount(), U()] }, U()] };
  }
}

// ---- random expression trees over every operator: which operand is
// evaluated, checked and refused first
function leaf() {
  switch (int(8)) {
    case 0: return instant();
    case 1: return realish();
    case 2: return pick(strPool);
    case 3: return duration();
    case 4: return pick(units);
    case 5: return { $const: pick([[1, 2], [0.5, 0.5], { type: 'Point', coordinates: [1, 2] }, { at: 0, value: 1 }, [{ at: 0, value: 1 }]]) };
    case 6: return pick(['$.two[*]', '$.missing', '$.arr', '$.num', '$.str', '$.obj']);
    default: return pick([null, true, false, 0, 1, -1, 2]);
  }
}
function tree(depth, vars = []) {
  if (depth <= 0 || chance(0.35)) return vars.length && chance(0.3) ? pick(vars) : leaf();
  const sub = () => tree(depth - 1, vars);
  switch (int(12)) {
    case 0: return { $for: { x: sub() }, $return: tree(depth - 1, [...vars, '$x']) };
    case 1: return { $let: { v: sub() }, ...(chance(0.5) ? { $where: tree(depth - 1, [...vars, '$v']) } : {}), $return: tree(depth - 1, [...vars, '$v']) };
    case 2: return { [pick(['$some', '$every'])]: { q: sub() }, $satisfies: tree(depth - 1, [...vars, '$q']) };
    case 3: return { $if: chance(0.5) ? [sub(), sub()] : [sub(), sub(), sub()] };
    case 4: return { $map: [[pick(['k', 'z', '1']), sub()], [pick(['a', '0', 'k']), sub()]] };
    case 5: {
      const op = pick(['$time-bucket', '$resample', '$rolling', '$asof']);
      const spec = { '$time-bucket': 'PT1H', $resample: { every: 'PT1H' }, $rolling: { width: 'PT1H' }, $asof: {} }[op];
      return { [op]: op === '$asof' ? [sub(), sub(), spec] : [sub(), spec] };
    }
    default: {
      const op = pick(treeOps);
      const shapes = arities.get(op);
      const n = chance(0.9) && shapes.length ? pick(shapes) : int(4);
      if (n === 'unary') return { [op]: sub() };
      return { [op]: Array.from({ length: n }, sub) };
    }
  }
}
const treeOps = allOps.filter((o) => !['$nosuch', '$as', '$valid', '$assert', '$call', '$map', '$resample', '$rolling', '$asof', '$time-bucket'].includes(o));
// the shapes each operator compiles with, as the reference reports them
const arities = new Map(treeOps.map((op) => {
  const ok = (doc) => {
    try { compileJsonQuery(doc); return true; } catch (e) { return !/operand|array of expressions|takes/.test(e.message); }
  };
  const shapes = [0, 1, 2, 3, 4].filter((n) => ok({ [op]: Array(n).fill(1) }));
  if (ok({ [op]: 1 }) && !shapes.includes(1)) shapes.push('unary');
  return [op, shapes];
}));
const deepDoc = () => tree(3 + int(2));

// ---- JSONPath filters: comparisons of every pair of types, Nothing,
// functions, match()/search(), number literals past float64
function pathsDoc() {
  const p = flt.path();
  // a path on a variable, and on an object built at run time (its
  // members in insertion order)
  const bound = { $let: { v: '$' }, $return: flt.path('$v') };
  const built = { $let: { v: { $map: [['xs', '$.xs'], ['s', '$.s'], ['n', '$.n'], ['obj', '$.obj'], ['a', { $map: [['n', 1], ['s', '$.s']] }]] } }, $return: flt.path('$v') };
  const doc = pick([p, p, p, { $count: p }, [p, flt.path()], { $exists: p }, bound, built]);
  return Object.assign(typeof doc === 'string' ? { $seq: [doc] } : doc, { _data: flt.data() });
}

// ---- I-Regexp: anchors with quantifiers, repeat counts either side of
// 1000, through the regex operators and match()/search() in filters
function regexDoc() {
  const doc = (() => {
    switch (int(5)) {
      case 0: case 1: return { [pick(['$match', '$search'])]: [flt.text(), flt.pattern()] };
      case 2: return { $replace: [flt.text(), flt.pattern(), pick(['', 'x', '$1'])] };
      case 3: return `$.xs[?${pick(['match', 'search'])}(@, '${flt.pattern().replaceAll('\\', '\\\\').replaceAll("'", "\\'")}')]`;
      default: return `$.xs[?${pick(['match', 'search'])}(@, $.p)]`;
    }
  })();
  const data = { xs: Array.from({ length: 1 + int(5) }, flt.text), p: flt.pattern() };
  return Object.assign(typeof doc === 'string' ? { $seq: [doc] } : doc, { _data: data });
}

// ---- FLWOR phrases: $fold, correlated $for bindings with $at,
// $allowing-empty and windows, $let, $where, $groupby, $orderby key
// specs, $count, and the quantifiers; names bound twice and options out
// of place
function flworDoc() {
  const item = () => {
    const o = {};
    if (chance(0.85)) o.k = pick(['a', 'b', 'B', 'é', '', 'a ', 1, 2, 2.5, -0, null, true, [1], { z: 1 }]);
    if (chance(0.85)) o.v = pick([0, 1, 2, 3, -1, 0.5, 10, 1e21, 'x', null]);
    if (chance(0.5)) o.tags = pick([[], ['t'], ['t', 'u'], [[1, 2], 3], 't']);
    return o;
  };
  const data = { items: Array.from({ length: int(7) }, item), nums: Array.from({ length: int(8) }, () => pick([1, 2, 3, 4, 5, -1, 0.5, 1e21])), empty: [], nested: [[1, 2], [], [3], 4] };
  const vars = [];
  const names = ['x', 'y', 'z', 'i', 'w', 'n', 'p', 'q', 'r', 's'];
  const fresh = () => (chance(0.04) && vars.length ? pick(vars) : pick(names.filter((n) => !vars.includes(n))));
  const bind = (n) => { vars.push(n); return n; };
  const source = () => pick(['$.items[*]', '$.items', '$.nums[*]', '$.nums', '$.empty', '$.nested', '$.nested[*]', '$.missing',
    { $const: pick([[1, 2, 3], [], [[1], [2, 3]], 'a', 7, null]) }, { $seq: ['$.nums[0]', '$.nums[1]'] }, { $div: [0, 0] }]);
  const ref = (v) => pick([`$${v}`, `$${v}.k`, `$${v}.v`, `$${v}.tags`, `$${v}[0]`, `$${v}.tags[*]`]);
  const val = () => (vars.length && chance(0.8) ? ref(pick(vars)) : leafVal());
  const leafVal = () => pick([0, 1, 'a', null, true, '$.nums[0]', '$.missing', { $div: [0, 0] }, { $const: [1, 2] }]);
  const expr = () => {
    switch (int(9)) {
      case 0: return { [pick(['$count', '$sum', '$avg', '$min', '$max', '$distinct', '$first', '$last', '$string-join'])]: val() };
      case 1: return { [pick(['$add', '$sub', '$mul'])]: [val(), val()] };
      case 2: return { [pick(['$eq', '$ne', '$lt', '$gt', '$le', '$ge'])]: [val(), val()] };
      case 3: return [val(), val()];
      case 4: return { $map: [['a', val()], ['b', val()]] };
      case 5: return { $exists: val() };
      case 6: return { $not: val() };
      default: return val();
    }
  };
  const windowed = () => {
    const w = { $in: source(), $window: chance(0.95) ? pick(['tumbling', 'sliding']) : pick(['hopping', 1]) };
    if (chance(0.97)) w.$size = chance(0.9) ? 1 + int(4) : pick([0, -1, 1.5, '2', 1e21]);
    if (chance(0.4)) w.$step = chance(0.9) ? 1 + int(3) : pick([0, 2.5, 1e21]);
    if (chance(0.4)) w.$at = bind(fresh());
    return w;
  };
  const binding = (correlated) => {
    const src = correlated && vars.length && chance(0.5) ? pick([`$${pick(vars)}.tags`, `$${pick(vars)}.tags[*]`, `$${pick(vars)}`]) : source();
    switch (int(6)) {
      case 0: return { $in: src, $at: bind(fresh()) };
      case 1: return { $in: src, '$allowing-empty': pick([true, true, false, 1]), ...(chance(0.5) ? { $at: bind(fresh()) } : {}) };
      case 2: return windowed();
      case 3: return chance(0.1) ? { $in: src, $size: 2 } : { $in: src };
      default: return src;
    }
  };
  const doc = {};
  if (chance(0.3)) { const a = bind('acc'); doc.$fold = { [a]: pick([0, [], '', { $const: [] }, '$.nums[0]', null]) }; if (chance(0.05)) doc.$fold.other = 1; }
  if (chance(0.85)) {
    doc.$for = {};
    for (let i = 0, n = 1 + int(2); i < n; i++) { const name = fresh(); const b = binding(i > 0); doc.$for[name] = b; bind(name); }
  }
  if (chance(0.4) || !doc.$for) {
    doc.$let = {};
    for (let i = 0, n = 1 + int(2); i < n; i++) { const name = fresh(); doc.$let[name] = chance(0.05) ? { $in: source(), $at: 'j' } : chance(0.5) ? expr() : source(); bind(name); }
  }
  if (chance(0.4)) doc.$where = expr();
  if (chance(0.3)) {
    doc.$groupby = {};
    for (let i = 0, n = 1 + int(2); i < n; i++) { const name = chance(0.04) && vars.length ? pick(vars) : pick(['g', 'h', 'key'].filter((n) => !vars.includes(n))); doc.$groupby[name] = chance(0.8) ? val() : expr(); }
    for (const g of Object.keys(doc.$groupby)) bind(g);
  }
  if (chance(0.45)) {
    const spec = () => {
      if (chance(0.5)) return val();
      const o = { $key: val() };
      if (chance(0.6)) o.$dir = pick(['asc', 'desc', 'desc', 'up']);
      if (chance(0.5)) o.$empty = pick(['least', 'greatest', 'greatest', 'first']);
      if (chance(0.03)) o.$collation = 'nl';
      if (chance(0.03)) delete o.$key;
      return o;
    };
    doc.$orderby = chance(0.6) ? [spec(), ...(chance(0.4) ? [spec()] : [])] : chance(0.05) ? [] : spec();
  }
  if (chance(0.3)) doc.$count = chance(0.9) ? bind(fresh()) : pick([1, '', '9x']);
  if (chance(0.95)) doc.$return = doc.$fold && chance(0.8) ? pick([{ $add: ['$acc', val()] }, ['$acc', val()], { $concat: ['$acc', val()] }, val()]) : expr();
  const whole = pick([doc, doc, doc, { $count: doc }, { $sum: doc },
    { [pick(['$some', '$every'])]: { x: source(), ...(chance(0.4) ? { y: pick(['$x.tags', '$x', { $in: '$x' }]) } : {}) }, $satisfies: pick([{ $gt: ['$x.v', 1] }, { $exists: '$x.k' }, { $eq: ['$y', 't'] }, { $div: [1, '$x'] }]) }]);
  return Object.assign(whole, { _data: data });
}

// ---- sequence operators, comparisons, arithmetic, casts and EBV
// (§8.2–§8.10) over sequences of mixed items: NaN, -0, ±Infinity, 2^53
// and past it, 1e21, strings past the BMP, nested arrays and objects
function sequencesDoc() {
  return Object.assign(sequencesExpr(), { _data: sequencesData() });
}
function sequencesExpr() {
  const atom = () => pick([0, 1, 2, -1, 0.5, 1.5, 2.5, -2.5, 1e21, 9007199254740991, 9007199254740993, 4294967296, -0.0000001,
    'a', 'B', '', 'é', 'e\u0301', '😀', '1', '-0', '1e3', ' 1', '0x1', '1.', '.5', 'NaN', 'Infinity', 'true', null, true, false]);
  const item = () => (chance(0.8) ? atom() : pick([[], [1], [1, [2]], {}, { a: 1 }, { a: 1, b: [2] }, { key: 'k', value: 1 }, { key: 1, value: 2 }, { key: 'z' }]));
  const special = () => pick([{ $div: [0, 0] }, { $div: [1, 0] }, { $div: [-1, 0] }, { $neg: 0 }, { $mul: [-1, 0] }]);
  const seq = () => {
    switch (int(6)) {
      case 0: return '$.xs[*]';
      case 1: return { $seq: Array.from({ length: int(5) }, () => (chance(0.2) ? special() : chance(0.5) ? { $const: item() } : atom())) };
      case 2: return pick(['$.xs', '$.ys[*]', '$.o', '$.o.*', '$.missing', '$.xs[0]', '$.pairs[*]', '$.nested[*]', '$.nested[*][*]']);
      case 3: return special();
      case 4: return { $range: [pick([0, 1, -2, 2.5, 1e21, '$.missing', 9007199254740991]), pick([0, 3, -1, 4.5, '$.missing', 9007199254740992])] };
      default: return chance(0.5) ? atom() : { $const: item() };
    }
  };
  const one = () => (chance(0.7) ? pick([0, 1, -1, 2, 0.5, 1.5, -1.5, 2.5, 1e21, -1e21, 9007199254740993, '1', null, true, '$.xs[0]', '$.missing', '$.n']) : special());
  switch (int(16)) {
    case 0: return { [pick(['$distinct', '$reverse', '$sort', '$head', '$tail', '$entries', '$from-entries'])]: seq() };
    case 1: return { $subsequence: chance(0.8) ? [seq(), one(), one()] : [seq(), one()] };
    case 2: return { '$index-of': [seq(), chance(0.8) ? pick([0, 1, 'a', null, '$.xs[0]', { $const: [1] }, { $const: { a: 1 } }, -0]) : seq()] };
    case 3: return { $get: [pick(['$.xs', '$.o', '$.nested', { $const: [1, 2, 3] }, '$.xs[*]', seq()]), chance(0.7) ? one() : pick(['a', 'b', '0', '', '-1', 'length', '__proto__', 'constructor'])] };
    case 4: return { [pick(['$eq', '$ne', '$lt', '$le', '$gt', '$ge'])]: [seq(), seq()] };
    case 5: return { [pick(['$add', '$sub', '$mul', '$div', '$idiv', '$mod'])]: [one(), one()] };
    case 6: return { [pick(['$string', '$number', '$boolean'])]: chance(0.7) ? { $const: item() } : seq() };
    case 7: return { [pick(['$is-string', '$is-number', '$is-boolean', '$is-null', '$is-array', '$is-object', '$exists', '$empty', '$not'])]: seq() };
    case 8: return { [pick(['$coalesce', '$seq'])]: Array.from({ length: 1 + int(3) }, seq) };
    case 9: return { $default: [seq(), seq()] };
    case 10: return { $if: chance(0.7) ? [seq(), seq(), seq()] : [seq(), seq()] };
    case 11: return { [pick(['$count', '$sum', '$avg', '$min', '$max'])]: seq() };
    case 12: return { [pick(['$and', '$or'])]: [seq(), seq()] };
    case 13: return { $neg: one() };
    case 14: return { '$from-entries': { $seq: Array.from({ length: int(4) }, () => ({ $const: pick([{ key: 'a', value: 1 }, { key: 'a', value: 2 }, { key: 'b' }, { key: 1, value: 1 }, { key: '', value: null }, { value: 3 }, { key: '__proto__', value: 1 }, { key: '__proto__', value: null }, { key: '__proto__' }, [1], 'x', { key: 'b', value: [1], extra: 1 }]) })) } };
    default: return { $entries: pick(['$.o', '$.xs', '$.nested[*]', { $seq: ['$.o', '$.o'] }, { $const: { b: 1, a: 2, 1: 3, 0: 4 } }]) };
  }
}
const sequencesData = () => ({ xs: Array.from({ length: int(6) }, () => pick([0, 1, 2, -1, 0.5, 1e21, 'a', 'B', '', '😀', null, true, [1], { a: 1 }])),
  ys: [1, 'a', 2, 'b'], o: { b: 1, a: [2], c: { d: 3 } }, n: 2, pairs: [{ key: 'a', value: 1 }, { key: 'b' }, { key: 3, value: 4 }], nested: [[1, 2], [], [[3]], 4] });

// ---- encoding rules (§3, §4): operator, map and mixed objects, the
// string forms ($$ escapes, variables, bad heads), $const, $map with
// duplicate and empty-valued pairs, member cardinality, the envelope
function encodingDoc() {
  const str = () => pick(['$', '$$', '$$$', '$$x', '$$$x', '$$.a', '$x', '$x.a', '$_', '$_1', '$a1', '$1', '$9foo', '$ x', '$-', '$é', '$x[0]', '$x..a',
    '$.a', '$.a.b', '$[0]', '$..a', '$["a"]', "$['a']", '$.', '$[', '$.a[', 'x$', '', ' $', 'a$.b', '$x.', '$x[', '$x y', '$.a ', '$ .a', '$$ ']);
  const key = () => pick(['a', 'b', '', ' ', '$', '$$', '$a', '$const', '$map', '$seq', '$query', '$expr', 'é', '😀', '0', '1', 'a$', ' $x', '__proto__', 'constructor']);
  const expr = (d) => {
    if (d <= 0 || chance(0.3)) return chance(0.6) ? str() : pick([0, 1, null, true, 'lit', [], {}]);
    switch (int(9)) {
      case 0: { const o = {}; for (let i = 0, n = int(4); i < n; i++) o[key()] = expr(d - 1); return o; }
      case 1: return Array.from({ length: int(4) }, () => expr(d - 1));
      case 2: return { $const: pick([{ $for: 'x', a: '$b' }, ['$.a', { $seq: [] }], '$x', '$$x', { '': 1 }, null, [[]]]) };
      case 3: return { $map: Array.from({ length: int(4) }, () => (chance(0.9) ? [chance(0.7) ? key() : expr(d - 1), chance(0.3) ? pick(['$.missing', { $seq: [] }, { $seq: [1, 2] }, '$.two[*]']) : expr(d - 1)] : pick([[1], [1, 2, 3], 'a', []]))) };
      case 4: return { $seq: Array.from({ length: int(4) }, () => expr(d - 1)) };
      case 5: return { $let: { x: expr(d - 1) }, $return: expr(d - 1) };
      case 6: return { [key()]: pick(['$.two[*]', '$.missing', { $seq: [] }, '$.obj', expr(d - 1)]) };
      case 7: return { $query: pick(['0.1', '0.2', 0.1, null, '']), $expr: expr(d - 1) };
      default: return { [pick(['$const', '$map', '$seq', '$x', '$', '$$', '$query', '$expr'])]: expr(d - 1), ...(chance(0.3) ? { [key()]: 1 } : {}) };
    }
  };
  const top = chance(0.15) ? { $query: pick(['0.1', '0.1', '0.2', 1, null, '0.10']), ...(chance(0.9) ? { $expr: expr(2) } : {}), ...(chance(0.1) ? { $where: true } : {}) } : expr(3);
  return Object.assign(top !== null && typeof top === 'object' && !Array.isArray(top) ? top : { $seq: [top] }, { _data: { a: { b: 1 }, x: 5, '': 0, $: 7, 'a$': 8, '$a': 9 } });
}

// ---- path selectors (§5, RFC 9535): names (quoted, escaped, odd),
// wildcards, indexes either side of the bounds, slices of every sign and
// step, unions, descendants, on $ and on variables bound to sequences
function selectorsDoc() {
  const num = () => pick([0, 1, 2, -1, -2, 3, 5, -5, 10, -10, '', '007', '-0', '1e2', 9007199254740991, 9007199254740992, -9007199254740991, 4294967295]);
  const name = () => pick(['a', 'b', 'c', 'x', 'é', '😀', '', ' ', 'a b', "'", '"', '\\', '0', '1', '-1', '$', '@', '*', '.', 'length', '__proto__', 'a\nb']);
  const quoted = (n) => (chance(0.5) ? `'${n.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n')}'` : `"${n.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`);
  const slice = () => {
    const part = () => (chance(0.6) ? String(pick([0, 1, 2, -1, -2, 3, 10, -10, 9007199254740991, -9007199254740991])) : '');
    return chance(0.5) ? `${part()}:${part()}` : `${part()}:${part()}:${pick(['', '1', '2', '-1', '-2', '0', '3', '-3', '10', '9007199254740991'])}`;
  };
  const selector = () => {
    switch (int(6)) {
      case 0: return quoted(name());
      case 1: return '*';
      case 2: return String(num());
      case 3: return slice();
      default: return `${pick([quoted(name()), '*', String(pick([0, 1, -1, 2])), slice()])},${pick([quoted(name()), '*', String(pick([0, -1, 3])), slice()])}`;
    }
  };
  const segment = () => {
    switch (int(7)) {
      case 0: return `.${pick(['a', 'b', 'c', 'x', 'é', '_', 'a1', '*'])}`;
      case 1: return `..${pick(['a', 'b', '*', 'x'])}`;
      case 2: return `..[${selector()}]`;
      default: return `[${selector()}]`;
    }
  };
  const path = (root) => root + Array.from({ length: 1 + int(3) }, segment).join('');
  const leafData = () => pick([0, 1, 'a', '', null, true, [], {}]);
  const data = (d) => {
    if (d <= 0 || chance(0.25)) return leafData();
    if (chance(0.5)) return Array.from({ length: int(6) }, () => data(d - 1));
    const o = {};
    // defined, so that __proto__ is a member
    for (let i = int(5); i > 0; i--) Object.defineProperty(o, pick(['a', 'b', 'c', 'x', 'é', '', '0', '1', 'a b', "'", '__proto__']), { value: data(d - 1), enumerable: true, configurable: true, writable: true });
    return o;
  };
  const doc = (() => {
    switch (int(6)) {
      case 0: return { $let: { v: pick(['$.t', '$.t.*', '$.t[*]', '$.t..*', { $seq: ['$.t', '$.t.a'] }, { $const: [[1, 2], { a: 3 }] }]) }, $return: path('$v') };
      case 1: return { $for: { v: pick(['$.t[*]', '$.t.*', '$.t']) }, $return: [path('$v')] };
      case 2: return { $count: path('$') };
      case 3: return [path('$'), path('$')];
      default: return path('$');
    }
  })();
  const t = data(3);
  return Object.assign(typeof doc === 'string' ? { $seq: [doc] } : doc, { _data: { t, a: data(2), b: [0, 1, 2, 3, 4, 5], x: { a: { a: 1 } } } });
}

const families = { paths: pathsDoc, selectors: selectorsDoc, encoding: encodingDoc, sequences: sequencesDoc, flwor: flworDoc, regex: regexDoc, deep: deepDoc, instants: instantsDoc, text: textDoc, within: withinDoc, calendar: calendarDoc, random: randomDoc, mixed: mixedDoc, dates: datesDoc, format: formatDoc, series: seriesDoc, spatial: spatialDoc, vectors: vectorsDoc, strings: stringsDoc, numbers: numbersDoc, arity: arityDoc };
const chosen = arg('family', Object.keys(families).join(',')).split(',');
const baseData = { rows: [], rows2: [], two: [1, 2], obj: { a: 1 }, arr: [1, 2], num: 3, str: 'x' };

// a $resample walks every bucket between its first and last row: keep the
// walk small enough for both sides
const approxMs = { PT1S: 1e3, 'PT0S': 0, 'P0D': 0, 'PT15M': 9e5, 'PT30M': 18e5, 'PT1.5H': 54e5 };
function tooWide(c) {
  const text = JSON.stringify(c.doc);
  if (!text.includes('$resample')) return false;
  const ats = [...c.data.rows, ...c.data.rows2].flatMap((r) => [r?.at, r?.on])
    .map((a) => (typeof a === 'number' ? a : typeof a === 'string' ? Date.parse(a) : NaN)).filter(Number.isFinite);
  ats.push(0, 1767225600000, 1767225600000 + 30 * 3600000);
  const span = Math.max(...ats) - Math.min(...ats);
  const widths = [...text.matchAll(/"every":("[^"]*"|[-0-9.e+]+)/g)].map((m) => m[1]);
  return widths.some((w) => {
    const ms = w.startsWith('"') ? (approxMs[JSON.parse(w)] ?? 3600000) : Number(w);
    return !(ms > 0) || span / ms > 2e5;
  });
}

let written = 0;
const lines = [];
for (const fam of chosen) {
  const gen = families[fam];
  if (!gen) throw new Error(`unknown family ${fam}`);
  for (let i = 0; i < count; i++) {
    let doc = gen();
    const data = { ...baseData, rows: rows(), rows2: rows() };
    if (doc && doc._data) { Object.assign(data, doc._data); delete doc._data; }
    // a batch of three documents in one array tells positions apart
    if (fam !== 'arity' && chance(0.12)) doc = [doc, gen(), gen()].map((d) => { if (d && d._data) { Object.assign(data, d._data); delete d._data; } return d; });
    if (fam !== 'series') { delete data.rows; delete data.rows2; }
    // the reference reads what the file holds (-0 is 0, NaN is null)
    const c = JSON.parse(JSON.stringify({ name: `${fam}-${i}`, doc, data }));
    if (fam === 'series' && tooWide(c)) continue;
    let out;
    try { out = run(c); }
    catch (e) { out = { crash: String(e?.message ?? e).slice(0, 200) }; }
    lines.push(JSON.stringify({ family: fam, ...c, out: { name: c.name, ...out } }));
    written++;
  }
}
process.stdout.write(lines.join('\n') + '\n');
process.stderr.write(`${written} documents\n`);
