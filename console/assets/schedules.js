// The schedules page: each schedule with its times, policies, next fires
// and last run (docs/SCHEDULES.md). Read-only: jetflow schedule changes them.
'use strict';

async function schedulesPage(main) {
  setNav('schedules');
  const body = h('tbody');
  fill(main, h('h1', {}, 'Schedules'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'schedules', class: 'runs' },
      h('thead', {}, h('tr', {}, ['Schedule', 'When', 'Workflow', 'Overlap', 'Catch-up', 'Next fires', 'Last run', 'Started', 'Skipped'].map(t => h('th', {}, t)))), body)));
  const draw = async () => {
    try {
      const v = await api('/schedules');
      fill(body, ...v.schedules.map(s => h('tr', { dataset: { schedule: s.name } },
        h('td', {}, s.name, s.paused ? h('span', { class: 'muted' }, ' (paused)') : ''),
        h('td', {}, s.when, s.jitter ? h('span', { class: 'muted' }, ' jitter ' + s.jitter) : ''),
        h('td', {}, link('/workflows/' + encodeURIComponent(s.workflow), s.workflow)),
        h('td', {}, s.overlap),
        h('td', {}, s.catchUp),
        h('td', { class: 'next-fires' }, s.next.length ? s.next.map((t, i) => [i ? ', ' : '', new Date(t).toISOString()]) : h('span', { class: 'muted' }, 'none (paused)')),
        h('td', {}, s.lastRun ? [link('/runs/' + encodeURIComponent(s.lastRun), s.lastRun), s.lastStatus ? h('span', { class: 'muted' }, ' ' + s.lastStatus) : ''] : '–'),
        h('td', { class: 'num' }, String(s.started)),
        h('td', { class: 'num', title: s.lastSkip || '' }, String(s.skipped)))));
      if (!v.schedules.length) fill(body, h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No schedules yet (jetflow schedule create NAME --workflow W --every 1h).')));
    } catch (e) {
      fill(body, h('tr', {}, h('td', { colspan: 9 }, errorBox(e))));
    }
  };
  await draw();
  // Runs starting and settling redraw it: each fire starts one.
  listen('', debounce(draw, 1000));
}
