// The bulk panel of the runs page: one operation over every run of the
// list's filter (narrowed further if wished), counted first, confirmed
// with the equivalent command, then submitted as a bulk job that the
// dispatchers carry out; the page follows it on the job's page.
'use strict';

const BULK_OPERATIONS = ['cancel', 'pause', 'resume', 'terminate', 'redrive', 'migrate'];

// whereOf reads the search box's NAME=VALUE words as search attribute
// conditions (the server checks them); null for a search by run id.
function whereOf(q) {
  if (!q || !q.includes('=')) return null;
  const out = {};
  for (const w of q.trim().split(/\s+/)) {
    const i = w.indexOf('=');
    if (i <= 0) return null;
    out[w.slice(0, i)] = w.slice(i + 1);
  }
  return out;
}

// bulkPanel builds the panel; current() returns the list's filter
// ({status, workflow, q}). It returns the element and reset, to call when
// that filter changes (a count shown is then stale).
function bulkPanel(current) {
  const field = (id, label, placeholder) => h('input', { id: id, placeholder: placeholder, 'aria-label': label, autocomplete: 'off' });
  const op = h('select', { id: 'bulk-op', 'aria-label': 'Operation' }, BULK_OPERATIONS.map(o => h('option', { value: o }, o)));
  const reason = field('bulk-reason', 'Reason', 'reason (required to terminate)');
  const to = field('bulk-to', 'To revision', 'the deployed revision (migrate)');
  const toLabel = h('label', { hidden: true }, 'To revision ', to);
  const revision = field('bulk-revision', 'Revision', 'any revision');
  const stateIn = field('bulk-state', 'State', 'any state (its name or id)');
  const after = field('bulk-started-after', 'Started after', 'RFC 3339 time, or 2h ago');
  const before = field('bulk-started-before', 'Started before', 'RFC 3339 time, or 2h ago');
  const match = h('textarea', { id: 'bulk-match', rows: 2, spellcheck: 'false', 'aria-label': 'Match query', placeholder: 'a Jaren JSON Query over {"input", "data"}' });
  const scope = h('p', { id: 'bulk-scope' });
  const count = h('button', { type: 'button', id: 'bulk-count' }, 'Count matching runs');
  const out = h('div', { id: 'bulk-result', 'aria-live': 'polite' });
  const el = h('details', { class: 'panel bulk', id: 'bulk' },
    h('summary', {}, 'Act on the runs of this filter'),
    scope,
    h('div', { class: 'form' }, h('label', {}, 'Operation ', op), toLabel, h('label', {}, 'Reason ', reason)),
    h('p', { class: 'muted' }, 'Narrow further (the list does not show these; the count does):'),
    h('div', { class: 'form' }, h('label', {}, 'Revision ', revision), h('label', {}, 'State ', stateIn),
      h('label', {}, 'Started after ', after), h('label', {}, 'Started before ', before)),
    h('div', { class: 'form' }, h('label', {}, 'Match (JSON) ', match), count),
    out);

  // reset forgets a count when the list's filter changed since.
  let shown = null;
  function reset() {
    const c = current();
    const key = [c.status, c.workflow, c.q].join('\n');
    if (key === shown) return;
    shown = key;
    fill(out);
    const where = whereOf(c.q);
    const byId = !!c.q && !where;
    count.disabled = byId;
    const parts = [];
    if (c.workflow) parts.push('workflow ' + c.workflow);
    if (c.status) parts.push('status ' + c.status);
    if (where) parts.push('search attributes ' + c.q.trim().split(/\s+/).join(' '));
    fill(scope, byId
      ? h('span', { class: 'error' }, 'A bulk job cannot select runs by id: clear the search, or search by attributes (customer=c-7), to act on the filter.')
      : 'Runs of ' + (parts.length ? parts.join(', ') : 'every workflow and status (add a filter)') + '.');
  }

  function filter() {
    const c = current();
    const f = { workflow: c.workflow, status: c.status, revision: revision.value.trim(), state: stateIn.value.trim(),
      startedAfter: after.value.trim(), startedBefore: before.value.trim() };
    const m = match.value.trim();
    if (m) f.match = JSON.parse(m);
    const where = whereOf(c.q);
    if (where) f.where = where;
    return f;
  }

  for (const input of [op, reason, to, revision, stateIn, after, before, match]) input.addEventListener('input', () => fill(out));
  op.addEventListener('change', () => { toLabel.hidden = op.value !== 'migrate'; });
  count.addEventListener('click', async () => {
    fill(out, h('p', { class: 'muted' }, 'Counting…'));
    const body = { operation: op.value, reason: reason.value.trim() };
    if (op.value === 'migrate') body.revision = to.value.trim();
    try { body.filter = filter(); } catch (e) { fill(out, errorBox('The match query is not JSON: ' + e.message)); return; }
    let n;
    try { n = await post('/bulk/count', body); } catch (e) { fill(out, errorBox(e)); return; }
    const confirmBox = h('div', { id: 'confirm' });
    fill(out, h('p', { id: 'bulk-counted' }, n.matched.toLocaleString() + ' run' + (n.matched === 1 ? '' : 's') + ' match; ' +
      n.eligible.toLocaleString() + ' can take a ' + body.operation + ' now (the job decides again at each run).'), confirmBox);
    confirmStep(confirmBox, 'Submit a bulk ' + body.operation + ' of the runs this filter matches? The dispatchers carry it out, even if this page closes.',
      n.command, 'Submit job', async () => {
        try {
          const j = await post('/jobs', { operation: body.operation, reason: body.reason, revision: body.revision, filter: n.filter });
          navigate('/jobs/' + encodeURIComponent(j.id));
        } catch (e) { fill(out, errorBox(e)); }
      });
  });
  reset();
  return { el, reset };
}
