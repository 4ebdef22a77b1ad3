// The revision check of a workflow's page: pick a deployed revision, and
// the console replays the histories of the workflow's recent runs under
// it, as `jetflow check-revision` does, and says per run whether it stays
// the same, where it diverges, or why it cannot be judged. With actions,
// the waiting and running runs can then be migrated as a bulk job.
'use strict';

// checkPanel builds the panel for workflow name; revisions are the
// revisions a check may move runs onto, newest first (those deployed
// after the oldest revision its waiting and running runs are on).
function checkPanel(name, revisions) {
  if (!revisions.length) {
    return h('section', { class: 'panel', id: 'check' },
      h('h2', {}, 'Check a revision'),
      h('p', { class: 'muted', id: 'check-none' }, 'No revision of this workflow was deployed after the one its waiting and running runs are on: deploy a new revision (jetflow deploy --check) to check them against it.'));
  }
  const rev = h('select', { id: 'check-revision', 'aria-label': 'Revision to check' },
    revisions.map((r, i) => h('option', { value: r, selected: i === 0 }, r)));
  const runs = h('input', { id: 'check-runs-limit', type: 'number', min: 1, max: 10000, value: '1000', 'aria-label': 'Runs to check' });
  const status = h('select', { id: 'check-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'any status'), ['waiting', 'running', 'paused', 'done', 'failed', 'cancelled'].map(s => h('option', { value: s }, s)));
  const go = h('button', { type: 'button', id: 'check-run' }, 'Check');
  const out = h('div', { id: 'check-result', 'aria-live': 'polite' });
  const el = h('section', { class: 'panel', id: 'check' },
    h('h2', {}, 'Check a revision'),
    h('p', { class: 'muted' }, 'Replays the histories of the runs of this workflow started last under a deployed revision, offline, and says which would stay the same (those a migration may move) and where the others diverge. Nothing is changed.'),
    h('div', { class: 'form' }, h('label', {}, 'Revision ', rev), h('label', {}, 'Runs started last ', runs), h('label', {}, 'Status ', status), go),
    out);

  go.addEventListener('click', async () => {
    go.disabled = true;
    fill(out, h('p', { class: 'muted' }, 'Checking…'));
    const q = '?revision=' + encodeURIComponent(rev.value) + '&runs=' + encodeURIComponent(runs.value.trim()) +
      (status.value ? '&status=' + encodeURIComponent(status.value) : '');
    let v;
    try { v = await api('/workflows/' + encodeURIComponent(name) + '/check' + q); } catch (e) { fill(out, errorBox(e)); return; } finally { go.disabled = false; }
    const rows = v.runs.map(k => h('tr', { dataset: { run: k.run, verdict: k.verdict } },
      h('td', { class: 'id' }, link('/runs/' + encodeURIComponent(k.run), k.run)),
      h('td', {}, k.revision || ''), h('td', {}, k.status ? statusBadge(k.status) : ''),
      h('td', { class: 'verdict verdict-' + k.verdict }, k.verdict),
      h('td', { class: 'check-text' }, k.text)));
    const box = h('div', { id: 'confirm' });
    const migrate = migrateButton(name, v, box, out);
    fill(out, h('p', { id: 'check-summary' }, v.text),
      h('p', { class: 'muted' }, 'The same check from a shell, with FILE the revision\'s document:'), commandLine('check-cmd', v.command),
      migrate, box,
      h('div', { class: 'table-wrap' }, h('table', { id: 'check-runs', class: 'runs' },
        h('thead', {}, h('tr', {}, ['Run', 'On revision', 'Status', 'Verdict', 'Detail'].map(t => h('th', {}, t)))),
        h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 5, class: 'empty' }, 'No runs of this workflow to check.'))))));
  });
  return el;
}

// migrateButton offers the bulk migration of the workflow's waiting and
// running runs onto the checked revision: the job checks each run again
// and moves only those whose history is the same; the others refuse it.
function migrateButton(name, v, box, out) {
  if (!v.summary.movable) return null;
  if (!v.migrate) return h('p', { class: 'muted', id: 'check-migrate-note' }, v.migrateNote);
  const b = h('button', { type: 'button', id: 'check-migrate', disabled: !ACTIONS, title: ACTIONS ? '' : 'read-only console: start it with --console-actions' },
    'Migrate the runs that are the same (' + v.summary.movable + ') to ' + v.revision);
  b.addEventListener('click', async () => {
    // The job names exactly the runs the check found the same: a run
    // that diverges is not offered the move.
    const body = { operation: 'migrate', revision: v.revision, reason: '', filter: { workflow: name, runs: v.move } };
    let n;
    try { n = await post('/bulk/count', body); } catch (e) { fill(box, errorBox(e)); return; }
    confirmStep(box, 'Submit a bulk migrate of the ' + n.eligible + ' waiting or running run' + (n.eligible === 1 ? '' : 's') + ' of ' + name +
      ' the check found the same to revision ' + v.revision + '? Each is checked again against its own history when the job reaches it: one that took another input meanwhile and no longer is the same refuses it and stays.',
    n.command, 'Submit job', async () => {
      try {
        const j = await post('/jobs', { operation: 'migrate', revision: v.revision, reason: '', filter: n.filter });
        navigate('/jobs/' + encodeURIComponent(j.id));
      } catch (e) { fill(out, errorBox(e)); }
    });
  });
  return h('p', {}, b);
}
