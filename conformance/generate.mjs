// Regenerates every expected output of the conformance corpus by running
// the reference library on the committed cases. Each area has a gen-*.mjs
// module exporting `generate()`; run all with `npm run generate`, or one
// area with `node generate.mjs query`.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv[2];
const modules = readdirSync(here).filter((f) => /^gen-.*\.mjs$/.test(f)).sort();
for (const file of modules) {
  const area = file.slice(4, -4);
  if (only && only !== area) continue;
  const mod = await import(join(here, file));
  const count = await mod.generate();
  console.log(`${area}: ${count} cases`);
}
