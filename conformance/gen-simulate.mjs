// Regenerates conformance/golden/simulate/*.json: every case of every
// conformance/cases/simulate/*.json file is run through simulate.mjs (the
// reference) and its output recorded under the same file name, in case order.
// Each scenario runs twice; differing outputs abort, so a golden can never
// capture timing-dependent behaviour of the oracle.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { render, simulate } from './simulate.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const caseDir = join(here, 'cases', 'simulate');
const goldenDir = join(here, 'golden', 'simulate');
const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

function readCases(file) {
  const cases = JSON.parse(readFileSync(join(caseDir, file), 'utf8'));
  if (!Array.isArray(cases) || cases.length === 0) throw new Error(`${file}: expected a non-empty array of cases`);
  return cases;
}

export async function generate() {
  mkdirSync(goldenDir, { recursive: true });
  const files = readdirSync(caseDir).filter((f) => f.endsWith('.json')).sort();
  // A golden whose case file is gone would otherwise linger and be tested.
  for (const f of readdirSync(goldenDir)) if (f.endsWith('.json') && !files.includes(f)) rmSync(join(goldenDir, f));
  const seen = new Map();
  let count = 0;
  for (const file of files) {
    const goldens = [];
    for (const [i, k] of readCases(file).entries()) {
      const where = `${file}[${i}]`;
      const extra = Object.keys(k ?? {}).filter((key) => !['name', 'description', 'scenario'].includes(key));
      if (typeof k?.name !== 'string' || !NAME.test(k.name)) throw new Error(`${where}: name must be kebab-case`);
      if (typeof k.description !== 'string' || !k.description.trim()) throw new Error(`${where}: description is required`);
      if (extra.length) throw new Error(`${where}: unknown member '${extra[0]}'`);
      if (seen.has(k.name)) throw new Error(`${where}: case name '${k.name}' repeats ${seen.get(k.name)}`);
      seen.set(k.name, where);
      let first;
      try { first = render(await simulate(k.scenario)); }
      catch (err) { throw new Error(`${where} (${k.name}): ${err.message}`); }
      const second = render(await simulate(k.scenario));
      if (first !== second) throw new Error(`${where} (${k.name}): the reference answered differently on a second run`);
      goldens.push({ name: k.name, output: JSON.parse(first) });
      count++;
    }
    writeFileSync(join(goldenDir, file), `${JSON.stringify(goldens, null, 2)}\n`);
  }
  return count;
}
