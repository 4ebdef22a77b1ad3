// Times the reference on the stylesheets and the input of engine/jslt's
// BenchmarkTransform, so the two figures compare one transformation each:
//
//   node conformance/bench-jslt.mjs            # ns per transformation
//   go test ./engine/jslt -run - -bench Transform
import { compileJsltStylesheet } from '@jarenjs/json/jslt';

const sheets = {
  vat: [{ match: '$..price', body: { $mul: ['$', 1.21] } }],
  surgical: [{ match: '$.meta.version', body: { $add: ['$', 1] } }],
  modes: { $jslt: '0.1', rules: [
    { match: '$', body: { toc: [{ $apply: ['$.sections[*]', 'toc'] }], body: [{ $apply: ['$.sections[*]', 'render'] }] } },
    { mode: 'toc', match: '$.sections[*]', body: { ref: '$.id', label: '$.heading' } },
    { mode: 'render', match: '$.sections[*]', body: { anchor: '$.id', heading: '$.heading', text: '$.text' } }] },
  dispatch: { $jslt: '0.1', unmatched: 'error', rules: [
    { match: '$', body: [{ $apply: '$.events[*]' }] },
    { match: '$.events[?@.error]', body: { level: 'fatal', message: '$.error' } },
    { match: '$.events[?@.info]', body: { level: 'note', message: '$.info' } },
    { body: { level: 'unknown' } }] },
  flwor: [{ match: '$', body: { adults: [{ $for: { p: '$.people[*]' }, $where: { $ge: ['$p.age', 18] }, $return: ['li', {}, '$p.name'] }] } }],
};

// as benchInput builds it in Go
const input = {
  catalog: { book: Array.from({ length: 50 }, (_, i) => ({ title: `T${i}`, price: i + 1, tags: ['a', 'b'] })) },
  sections: Array.from({ length: 20 }, (_, i) => ({ id: `s${i}`, heading: `H${i}`, text: `text ${i}` })),
  events: Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? { info: `i${i}` } : i % 3 === 1 ? { error: `e${i}` } : { beep: true })),
  people: Array.from({ length: 50 }, (_, i) => ({ name: `p${i}`, age: i % 40 })),
  meta: { version: 1, owner: { name: 'N' } },
};

for (const [name, sheet] of Object.entries(sheets)) {
  const transform = compileJsltStylesheet(sheet);
  const n = name === 'vat' || name === 'modes' ? 2000 : 20000;
  for (let i = 0; i < n; i++) transform(input); // warm up the JIT
  // wall time (best round) and CPU time (user + system, all rounds): on a
  // loaded machine the CPU time is the figure to compare
  let best = Infinity;
  const c0 = process.cpuUsage();
  for (let round = 0; round < 5; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) transform(input);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
  }
  const c = process.cpuUsage(c0);
  const cpu = ((c.user + c.system) * 1000) / (5 * n);
  console.log(`jslt/${name}\t${best.toFixed(1)} ns/op\t${cpu.toFixed(1)} cpu-ns/op`);
}
