// The audit page: every action taken through the console and the
// state-changing commands, newest first, a page at a time (the audit
// stream, read backwards by sequence).
'use strict';

async function auditPage(main) {
  setNav('audit');
  document.title = 'jetflow: audit';
  const params = new URLSearchParams(location.search);
  const run = h('input', { type: 'text', id: 'audit-run', placeholder: 'run id', value: params.get('run') || '' });
  const who = h('input', { type: 'text', id: 'audit-who', placeholder: 'who', value: params.get('who') || '' });
  const apply = h('button', { type: 'submit' }, 'Filter');
  const form = h('form', { class: 'filters', id: 'audit-filter' }, run, who, apply);
  const body = h('tbody');
  const err = h('div', { id: 'audit-error' });
  const more = h('button', { type: 'button', id: 'audit-older', hidden: true }, 'Older');
  fill(main, h('h1', {}, 'Audit log'),
    h('p', { class: 'muted' }, 'Who did what through this console and the jetflow commands that change state (jetflow audit prints the same). Newest first.'),
    form, err,
    h('div', { class: 'table-wrap' }, h('table', { id: 'audit', class: 'runs' },
      h('thead', {}, h('tr', {}, ['Time', 'Who', 'Source', 'Action', 'Target', 'Result', 'Remote', 'Command'].map(t => h('th', {}, t)))), body)),
    more);
  let next = 0;
  const target = e => e.run || e.job || (e.filter ? filterText(e.filter) : '') || e.task || e.workflow || '';
  const row = e => h('tr', { dataset: { seq: e.seq, result: e.result } },
    h('td', { class: 'time' }, e.time), h('td', { class: 'who' }, e.who), h('td', {}, e.source),
    h('td', { class: 'action' }, e.action),
    h('td', { class: 'id' }, e.run ? link('/runs/' + encodeURIComponent(e.run), e.run) : target(e)),
    h('td', {}, statusBadge(e.result), e.detail ? ' ' + e.detail : ''),
    h('td', {}, e.remote || ''), h('td', {}, h('code', {}, e.command || '')));
  const load = async reset => {
    const q = new URLSearchParams({ limit: '50' });
    if (run.value) q.set('run', run.value);
    if (who.value) q.set('who', who.value);
    if (!reset && next) q.set('before', String(next));
    try {
      const page = await api('/audit?' + q.toString());
      if (reset) fill(body);
      append(body, page.entries.map(row));
      if (reset && !page.entries.length) fill(body, h('tr', {}, h('td', { colspan: 8, class: 'empty' }, 'No entries.')));
      next = page.next || 0;
      more.hidden = !next;
      fill(err);
    } catch (e) {
      fill(err, errorBox(e));
    }
  };
  form.addEventListener('submit', e => { e.preventDefault(); next = 0; load(true); });
  more.addEventListener('click', () => load(false));
  await load(true);
}
