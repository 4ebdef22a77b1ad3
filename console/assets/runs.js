// The runs page: counts by status, filters, a search by run id or by
// search attributes (NAME=VALUE words, answered by the run index), pages
// of runs (most recently changed first), updated live.
'use strict';

const STATUSES = ['running', 'waiting', 'paused', 'done', 'failed', 'cancelled', 'terminated'];

async function runsPage(main) {
  setNav('runs');
  const params = new URLSearchParams(location.search);
  const state = {
    status: params.get('status') || '',
    workflow: params.get('workflow') || '',
    q: params.get('q') || '',
    before: params.get('before') || '',
    previous: [],
  };

  const chips = h('div', { class: 'chips', id: 'status-filter' });
  const workflowSelect = h('select', { id: 'workflow-filter', 'aria-label': 'Workflow' }, h('option', { value: '' }, 'All workflows'));
  const search = h('input', { id: 'search', type: 'search', placeholder: 'Search run id, or customer=c-7…', value: state.q, 'aria-label': 'Search by run id or search attributes (NAME=VALUE)', autocomplete: 'off' });
  const tbody = h('tbody');
  const table = h('table', { id: 'runs', class: 'runs' },
    h('thead', {}, h('tr', {}, ['Run', 'Workflow', 'Status', 'State', 'Started', 'Settled', 'Duration', 'Updated'].map(t => h('th', {}, t)))),
    tbody);
  const info = h('span', { id: 'page-info', class: 'muted' });
  const newer = h('button', { type: 'button', id: 'newer' }, '← Newer');
  const older = h('button', { type: 'button', id: 'older' }, 'Older →');
  const status = h('div', { id: 'list-status' });
  const bulk = ACTIONS ? bulkPanel(() => state) : null;
  fill(main,
    h('h1', {}, 'Runs'),
    h('div', { class: 'filters' }, chips, workflowSelect, search),
    bulk ? bulk.el : null,
    status,
    h('div', { class: 'table-wrap' }, table),
    h('div', { class: 'pager' }, newer, info, older));

  let counts = { total: 0, byStatus: {}, loaded: false };
  let page = null;

  function drawChips() {
    const chip = (value, label, n) => {
      const b = h('button', { type: 'button', class: 'chip' + (state.status === value ? ' current' : ''), dataset: { status: value } },
        label, h('span', { class: 'count' }, (n || 0).toLocaleString()));
      b.addEventListener('click', () => { state.status = value; state.before = ''; state.previous = []; refresh(); });
      return b;
    };
    fill(chips, chip('', 'All', counts.total), ...STATUSES.map(s => chip(s, s, counts.byStatus[s])));
  }

  function row(r) {
    return h('tr', { dataset: { run: r.id, status: r.status } },
      h('td', { class: 'id' }, link('/runs/' + encodeURIComponent(r.id), r.id)),
      h('td', {}, link('/workflows/' + encodeURIComponent(r.workflow), r.workflow), h('span', { class: 'muted' }, ' ' + r.revision)),
      h('td', {}, statusBadge(r.status, r.caught)),
      h('td', { class: 'state' }, stateLabel(r.state)),
      h('td', { class: 'time' }, fmtTime(r.started)),
      h('td', { class: 'time' }, fmtTime(r.settled)),
      h('td', { class: 'num' }, duration(r)),
      h('td', { class: 'time' }, fmtTime(r.updated)));
  }

  function draw() {
    fill(tbody, ...page.runs.map(row));
    if (page.runs.length === 0) {
      fill(tbody, h('tr', {}, h('td', { colspan: 8, class: 'empty' }, counts.loaded ? 'No runs match.' : 'Loading runs…')));
    }
    info.textContent = !page.runs.length ? '' : page.matched < 0 ? 'runs whose search attributes match, from the run index'
      : (page.matched.toLocaleString() + ' matching of ' + page.total.toLocaleString() + ' runs');
    fill(status, page.loaded ? '' : h('p', { class: 'muted' }, 'Reading the run bucket: ' + page.total.toLocaleString() + ' runs so far…'));
    newer.disabled = state.previous.length === 0 && !state.before;
    older.disabled = !page.next && !page.cursor;
  }

  function syncURL() {
    const p = new URLSearchParams();
    for (const k of ['status', 'workflow', 'q', 'before']) if (state[k]) p.set(k, state[k]);
    const qs = p.toString();
    history.replaceState(null, '', BASE + '/' + (qs ? '?' + qs : ''));
  }

  let seq = 0;
  async function refresh() {
    const mine = ++seq;
    syncURL();
    if (bulk) bulk.reset();
    drawChips();
    const p = new URLSearchParams();
    for (const k of ['status', 'workflow', 'q', 'before']) if (state[k]) p.set(k, state[k]);
    try {
      const got = await api('/runs?' + p.toString());
      if (mine !== seq) return;
      page = got;
      draw();
    } catch (e) {
      fill(status, errorBox(e));
    }
  }

  newer.addEventListener('click', () => { state.before = state.previous.pop() || ''; refresh(); });
  older.addEventListener('click', () => {
    if (!page || !page.next && !page.cursor) return;
    state.previous.push(state.before);
    state.before = String(page.cursor || page.next);
    refresh();
  });
  search.addEventListener('input', debounce(() => {
    state.q = search.value.trim();
    state.before = '';
    state.previous = [];
    refresh();
  }, 250));
  workflowSelect.addEventListener('change', () => {
    state.workflow = workflowSelect.value;
    state.before = '';
    state.previous = [];
    refresh();
  });

  const overview = await api('/overview').catch(() => null);
  if (overview) counts = overview;
  api('/workflows').then(v => {
    for (const w of v.workflows) workflowSelect.append(h('option', { value: w.name }, w.name));
    if (state.workflow && !v.workflows.some(w => w.name === state.workflow)) {
      workflowSelect.append(h('option', { value: state.workflow }, state.workflow));
    }
    workflowSelect.value = state.workflow;
  }).catch(() => {});
  await refresh();

  // Live: counts at once; rows shown are updated in place; the first
  // page is read again when runs appear or move.
  const reread = debounce(refresh, 300);
  listen('', ev => {
    counts = ev.counts;
    drawChips();
    if (!page) return;
    let stale = ev.more || !state.before && ev.runs.length > 0;
    for (const r of ev.runs) {
      const tr = tbody.querySelector('tr[data-run="' + CSS.escape(r.id) + '"]');
      if (tr) {
        const known = page.runs.find(x => x.id === r.id);
        if (known) r.started = r.started || known.started;
        tr.replaceWith(row(r));
      }
    }
    if ((ev.removed || []).length) stale = true;
    if (stale) reread();
  });
}
