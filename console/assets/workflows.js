// The workflows pages: every deployed workflow with its revisions and
// active runs, and one revision's statechart and DAGs.
'use strict';

async function workflowsPage(main) {
  setNav('workflows');
  const body = h('tbody');
  fill(main, h('h1', {}, 'Workflows'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'workflows', class: 'runs' },
      h('thead', {}, h('tr', {}, ['Workflow', 'Latest revision', 'Revisions', 'Active runs'].map(t => h('th', {}, t)))), body)));
  const draw = async () => {
    try {
      const v = await api('/workflows');
      fill(body, ...v.workflows.map(w => h('tr', { dataset: { workflow: w.name } },
        h('td', {}, link('/workflows/' + encodeURIComponent(w.name), w.name)),
        h('td', {}, w.latest),
        h('td', {}, w.revisions.map((r, i) => [i ? ', ' : '', r.revision, r.active ? h('span', { class: 'muted' }, ' (' + r.active + ' active)') : ''])),
        h('td', { class: 'num' }, link('/?workflow=' + encodeURIComponent(w.name), String(w.active))))));
      if (!v.workflows.length) fill(body, h('tr', {}, h('td', { colspan: 4, class: 'empty' }, 'Nothing is deployed yet (jetflow deploy NAME FILE).')));
    } catch (e) {
      fill(body, h('tr', {}, h('td', { colspan: 4 }, errorBox(e))));
    }
  };
  await draw();
  listen('', debounce(draw, 1000));
}

async function workflowPage(main, name) {
  setNav('workflows');
  const revision = new URLSearchParams(location.search).get('revision') || '';
  const head = h('div');
  const chart = h('div', { id: 'chart', class: 'diagram' });
  const works = h('div', { id: 'work-states', class: 'chips' });
  const dag = h('div', { id: 'dag', class: 'diagram' });
  const doc = h('details', {}, h('summary', {}, 'Document'));
  const check = h('div');
  fill(main, h('p', {}, link('/workflows', '← Workflows')), head,
    h('div', { class: 'columns' },
      h('section', { class: 'panel' }, h('h2', {}, 'Statechart'), chart, h('h3', {}, 'Work states'), works),
      h('section', { class: 'panel' }, h('h2', { id: 'dag-title' }, 'DAG'), dag)),
    h('section', { class: 'panel' }, doc), check);
  let v;
  try {
    v = await api('/workflows/' + encodeURIComponent(name) + (revision ? '?revision=' + encodeURIComponent(revision) : ''));
  } catch (e) {
    fill(head, errorBox(e));
    return;
  }
  document.title = 'jetflow: ' + name;
  const drawHead = w => fill(head,
    h('h1', {}, 'Workflow ', h('span', { class: 'id' }, name), ' ', h('span', { class: 'muted' }, 'revision ' + w.revision)),
    h('p', { id: 'revisions' }, 'Revisions: ', (w.revisions || []).map((r, i) => [i ? ' · ' : '',
      r.revision === w.revision ? h('strong', {}, r.revision) : link('/workflows/' + encodeURIComponent(name) + '?revision=' + encodeURIComponent(r.revision), r.revision),
      h('span', { class: 'muted' }, ' deployed ' + fmtTime(r.deployed) + ', '),
      link('/?workflow=' + encodeURIComponent(name), h('span', { class: 'active-count', dataset: { revision: r.revision } }, String(r.active)), ' active')])));
  drawHead(v);
  fill(check, checkPanel(name, v.checkRevisions || []));
  fill(chart, svgNode(v.chart));
  const show = async state => {
    try {
      const d = await api('/workflows/' + encodeURIComponent(name) + '/dag?revision=' + encodeURIComponent(v.revision) + '&state=' + encodeURIComponent(state));
      document.getElementById('dag-title').textContent = 'DAG of ' + stateLabel(state);
      fill(dag, svgNode(d.svg));
      for (const b of works.querySelectorAll('.chip')) b.classList.toggle('current', b.dataset.state === state);
    } catch (e) {
      fill(dag, errorBox(e));
    }
  };
  fill(works, ...v.workStates.map(ws => {
    const b = h('button', { type: 'button', class: 'chip', dataset: { state: ws.id } }, ws.name, h('span', { class: 'count' }, ws.tasks + (ws.tasks === 1 ? ' task' : ' tasks')));
    b.addEventListener('click', () => show(ws.id));
    return b;
  }));
  for (const g of chart.querySelectorAll('g.jf-work[data-id]')) {
    g.classList.add('clickable');
    g.addEventListener('click', () => show(g.dataset.id));
  }
  doc.append(jsonBlock(v.document, 20000));
  if (v.workStates.length) show(v.workStates[0].id);
  else fill(dag, h('p', { class: 'muted' }, 'This workflow has no work states.'));
  // Live: the revisions' active counts follow the runs; the diagrams of
  // a deployed revision never change.
  listen('', debounce(async () => {
    try {
      drawHead(await api('/workflows/' + encodeURIComponent(name) + '?revision=' + encodeURIComponent(v.revision)));
    } catch (e) { /* the next change tries again */ }
  }, 1000));
}
