// Golden outputs of the query area: every case in cases/query/*.json is
// compiled and evaluated by the reference (@jarenjs/json compileJsonQuery)
// and the outcome written to golden/query/<same file>.json.
//
// Object keys of each case's doc, data and externals are re-ordered the
// way jetflow's JSON model (Go maps, value.Keys) iterates them before the
// reference sees them, as a workflow's canonicalized documents are; a
// case with "written": true hands the reference its doc as written
// instead, and jetflow compiles it with the order kept
// (value.DecodeWritten), as a simulation's mock queries are read.
//
// A file is an array of cases or { data, cases } (data shared by cases
// without their own). A case is { name, doc, data?, externals?, limits?,
// mode?, written? } where mode is
// "eval" (default; the result of query(data)), "ebv" or "items".
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { compileJsonQuery } from '@jarenjs/json/query';

const here = dirname(fileURLToPath(import.meta.url));
const casesDir = join(here, 'cases', 'query');
const goldenDir = join(here, 'golden', 'query');

// JavaScript's property order for a JSON-parsed object whose keys are
// sorted by UTF-16 code units: array-index keys first (the engine does
// that itself), then the sort order.
function jetflowOrder(v) {
  if (Array.isArray(v)) return v.map(jetflowOrder);
  if (v === null || typeof v !== 'object') return v;
  // fromEntries makes own members, __proto__ too, where out[k] = v would not
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, jetflowOrder(v[k])]));
}

// JSON cannot hold NaN or the infinities a query can compute.
function encode(v) {
  if (typeof v === 'number' && !Number.isFinite(v)) return { '@number': String(v) };
  if (Array.isArray(v)) return v.map(encode);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).map((k) => [k, encode(v[k])]));
  return v;
}

export function run(c) {
  // a case marked written keeps its doc's member order as written
  const doc = c.written ? c.doc : jetflowOrder(c.doc);
  const data = jetflowOrder(c.data ?? null);
  const ext = c.externals === undefined ? undefined : jetflowOrder(c.externals);
  const options = c.limits ? { limits: c.limits } : {};
  try {
    const q = compileJsonQuery(doc, options);
    const externals = [...q.externals];
    switch (c.mode ?? 'eval') {
      case 'ebv':
        return { ebv: q.ebv(data, ext), externals };
      case 'items':
        return { items: encode(q.items(data, ext)), externals };
      default: {
        // the item count tells a sequence from a single array item
        const v = q(data, ext);
        const count = q.items(data, ext).length;
        return v === undefined ? { empty: true, externals } : { result: encode(v), count, externals };
      }
    }
  }
  catch (e) {
    if (typeof e?.code !== 'string') throw e;
    return { error: { code: e.code, path: e.docPath, message: e.message } };
  }
}

export async function generate() {
  mkdirSync(goldenDir, { recursive: true });
  let count = 0;
  for (const file of readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort()) {
    const parsed = JSON.parse(readFileSync(join(casesDir, file), 'utf8'));
    // a file is an array of cases, or { data, cases } with shared data
    const cases = Array.isArray(parsed) ? parsed : parsed.cases;
    const shared = Array.isArray(parsed) ? null : parsed.data;
    const names = new Set();
    const out = cases.map((c) => {
      if (names.has(c.name)) throw new Error(`${file}: duplicate case name ${c.name}`);
      names.add(c.name);
      count++;
      return { name: c.name, ...run('data' in c ? c : { ...c, data: shared }) };
    });
    writeFileSync(join(goldenDir, file), JSON.stringify(out, null, 1) + '\n');
  }
  return count;
}
