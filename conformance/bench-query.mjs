// Times the reference on the guards of engine/query's BenchmarkDateGuard
// and BenchmarkSeriesGuard (the same documents and contexts), so the two
// figures compare one evaluation each:
//
//   node conformance/bench-query.mjs            # ns per evaluation
//   go test ./engine/query -run - -bench 'DateGuard|SeriesGuard'
import { compileJsonQuery } from '@jarenjs/json/query';

const due = '2023-11-14T22:13:19.999+00:00';
const dateCtx = { context: { data: { due } } };
const dateCases = {
  epoch: { $lt: [{ $epoch: '$.context.data.due' }, 1700000000000] },
  add: { $lt: [{ '$date-add': ['$.context.data.due', 1, 'month'] }, '2024'] },
  diff: { $ge: [{ '$date-diff': ['$.context.data.due', '2024-01-01T00:00:00+02:00', 'day'] }, 30] },
  format: { $eq: [{ '$date-format': ['$.context.data.due', 'yyyy-MM'] }, '2023-11'] },
};

// 96 quarter-hourly readings (every tenth a gap) and 24 hourly trades,
// as seriesBenchContext builds them in Go
const readings = Array.from({ length: 96 }, (_, i) => ({
  at: i * 900000, value: i % 10 === 9 ? null : (i % 7) * 0.5,
}));
const trades = Array.from({ length: 24 }, (_, i) => ({ at: i * 3600000 + 60000, value: i }));
const seriesCtx = { context: { data: { due, readings, trades } } };
const seriesCases = {
  bucket: { $lt: [{ '$time-bucket': ['$.context.data.due', 'PT1H'] }, 1700000000000] },
  'bucket-month': { $lt: [{ '$time-bucket': ['$.context.data.due', 'P1M', null, { offset: 120 }] }, 1700000000000] },
  resample: { $eq: [{ $count: { $resample: ['$.context.data.readings', { every: 'PT1H', fill: 'linear' }] } }, 24] },
  rolling: { $eq: [{ $count: { $rolling: ['$.context.data.readings', { width: 'PT1H', aggregate: 'max' }] } }, 96] },
  asof: { $eq: [{ $count: { $asof: ['$.context.data.trades', '$.context.data.readings', { tolerance: 'PT10M' }] } }, 24] },
};

function time(group, cases, ctx) {
  for (const [name, doc] of Object.entries(cases)) {
    const q = compileJsonQuery(doc);
    if (q.ebv(ctx) !== true) throw new Error(`${group}/${name}: the guard does not hold`);
    // warm up the JIT, then time rounds of a fixed count; report the best
    const n = group === 'series' && !name.startsWith('bucket') ? 20000 : 200000;
    for (let i = 0; i < n; i++) q.ebv(ctx);
    let best = Infinity;
    for (let round = 0; round < 5; round++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) q.ebv(ctx);
      best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
    }
    console.log(`${group}/${name}\t${best.toFixed(1)} ns/op`);
  }
}

time('date', dateCases, dateCtx);
time('series', seriesCases, seriesCtx);
