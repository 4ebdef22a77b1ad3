// Times the reference on the date guards of engine/query's
// BenchmarkDateGuard (the same documents and context), so the two figures
// compare one evaluation each:
//
//   node conformance/bench-query.mjs            # ns per evaluation
//   go test ./engine/query -run - -bench DateGuard
import { compileJsonQuery } from '@jarenjs/json/query';

const ctx = { context: { data: { due: '2023-11-14T22:13:19.999+00:00' } } };
const cases = {
  epoch: { $lt: [{ $epoch: '$.context.data.due' }, 1700000000000] },
  add: { $lt: [{ '$date-add': ['$.context.data.due', 1, 'month'] }, '2024'] },
  diff: { $ge: [{ '$date-diff': ['$.context.data.due', '2024-01-01T00:00:00+02:00', 'day'] }, 30] },
  format: { $eq: [{ '$date-format': ['$.context.data.due', 'yyyy-MM'] }, '2023-11'] },
};

for (const [name, doc] of Object.entries(cases)) {
  const q = compileJsonQuery(doc);
  if (q.ebv(ctx) !== true) throw new Error(`${name}: the guard does not hold`);
  // warm up the JIT, then time rounds of a fixed count; report the best
  for (let i = 0; i < 200000; i++) q.ebv(ctx);
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const n = 200000;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) q.ebv(ctx);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
  }
  console.log(`${name}\t${best.toFixed(1)} ns/op`);
}
