// Times the reference on the guards of engine/query's BenchmarkDateGuard,
// BenchmarkSeriesGuard and BenchmarkSpatialGuard (the same documents and
// contexts), so the two figures compare one evaluation each:
//
//   node conformance/bench-query.mjs            # ns and CPU ns per evaluation
//   go test ./engine/query -run - -bench 'DateGuard|SeriesGuard|SpatialGuard'
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
    // wall time (best round) and CPU time (user + system, all rounds): on
    // a loaded machine the CPU time is the figure to compare
    let best = Infinity;
    const c0 = process.cpuUsage();
    for (let round = 0; round < 5; round++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) q.ebv(ctx);
      best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
    }
    const c = process.cpuUsage(c0);
    const cpu = ((c.user + c.system) * 1000) / (5 * n);
    console.log(`${group}/${name}\t${best.toFixed(1)} ns/op\t${cpu.toFixed(1)} cpu-ns/op`);
  }
}

// the context and guards of BenchmarkSpatialGuard (spatialBenchContext)
const spatialCtx = { context: { data: {
  at: [4.9, 52.37], home: [5.12, 52.09],
  region: { type: 'Feature', properties: { name: 'west' }, geometry: { type: 'Polygon', coordinates: [
    [[3, 50], [8, 50], [8, 54], [3, 54], [3, 50]],
    [[6, 51], [7, 51], [7, 52], [6, 52], [6, 51]]] } },
  route: { type: 'LineString', coordinates: [[4.88, 52.36], [4.89, 52.365], [4.9, 52.37], [4.91, 52.372],
    [4.92, 52.371], [4.95, 52.36], [4.99, 52.34], [5.05, 52.3], [5.1, 52.2], [5.12, 52.09]] },
  wkt: 'POLYGON ((3 50, 8 50, 8 54, 3 54, 3 50), (6 51, 7 51, 7 52, 6 52, 6 51))',
  cell: 'u173zt',
} } };
const spatialCases = {
  bbox: { $eq: [{ $bbox: '$.context.data.region' }, [3, 50, 8, 54]] },
  area: { $gt: [{ $area: '$.context.data.region' }, 1e10] },
  length: { $gt: [{ $length: '$.context.data.route' }, 1000] },
  centroid: { $exists: { $centroid: '$.context.data.region' } },
  distance: { $lt: [{ $distance: ['$.context.data.at', '$.context.data.home'] }, 50000] },
  within: { $within: ['$.context.data.at', '$.context.data.region'] },
  'bbox-intersects': { '$bbox-intersects': ['$.context.data.route', '$.context.data.region'] },
  geohash: { $eq: [{ $geohash: ['$.context.data.at', 6] }, 'u173zt'] },
  'geo-parse': { $exists: { '$geo-parse': '$.context.data.wkt' } },
  'geo-text': { $eq: [{ '$geo-text': '$.context.data.at' }, 'POINT (4.9 52.37)'] },
  'geohash-bounds': { $exists: { '$geohash-bounds': '$.context.data.cell' } },
  'geohash-neighbours': { $eq: [{ $count: { '$geohash-neighbours': '$.context.data.cell' } }, 9] },
  'geo-simplify': { $exists: { '$geo-simplify': ['$.context.data.route', 0.01] } },
};

time('date', dateCases, dateCtx);
time('series', seriesCases, seriesCtx);
time('spatial', spatialCases, spatialCtx);
