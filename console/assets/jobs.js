// The jobs pages: every bulk job with its progress, and one job with its
// spec, live progress and a cancel button, following the job bucket.
'use strict';

// filterText is a job's filter as the command's flags read.
function filterText(f) {
  const names = { workflow: 'workflow', revision: 'revision', status: 'status', state: 'state', startedBefore: 'started-before', startedAfter: 'started-after', match: 'match', runs: 'run' };
  return Object.entries(names).filter(([k]) => f && f[k] !== undefined && f[k] !== '')
    .map(([k, flag]) => flag + ' ' + (typeof f[k] === 'string' ? f[k] : Array.isArray(f[k]) ? f[k].join(',') : JSON.stringify(f[k]))).join(', ');
}

function jobProgress(j) {
  const done = j.sent + j.skipped + j.errors;
  const settled = ['done', 'cancelled', 'failed'].includes(j.state);
  const max = j.matched || 1;
  return h('span', { class: 'progress' },
    h('progress', { max: max, value: j.matched ? done : (settled ? 1 : 0) }),
    ' ' + done.toLocaleString() + ' / ' + j.matched.toLocaleString());
}

function cancelJobButton(j, result) {
  if (['done', 'cancelled', 'failed'].includes(j.state)) return null;
  const b = h('button', { type: 'button', class: 'danger cancel-job', disabled: !ACTIONS, title: ACTIONS ? '' : 'read-only console', dataset: { job: j.id } }, 'Cancel job');
  b.addEventListener('click', () => {
    const box = result.box;
    confirmStep(box, 'Cancel job ' + j.id + '? Its dispatcher stops at its next checkpoint; runs already handled stay handled.',
      'jetflow jobs cancel ' + shellQuote(j.id) + (result.flags ? ' ' + result.flags : ''), 'Cancel job', async () => {
        try {
          await post('/jobs/' + encodeURIComponent(j.id) + '/cancel', {});
          result.say('Job ' + j.id + ' cancelled.');
        } catch (e) { result.say('Not cancelled: ' + e.message); }
      });
  });
  return b;
}

async function jobsPage(main) {
  setNav('jobs');
  const body = h('tbody');
  const err = h('div', { id: 'jobs-error' });
  const box = h('div', { id: 'confirm' });
  const said = h('p', { id: 'action-result', class: 'muted', 'aria-live': 'polite' });
  const result = { box: box, flags: '', say: t => { said.textContent = t; } };
  fill(main, h('h1', {}, 'Bulk jobs'),
    h('p', { class: 'muted' }, 'A bulk job applies one operation to every run its filter matches; the dispatchers carry it out. Submit one from the Runs page (with actions on) or with jetflow cancel, pause, resume, terminate or redrive and filter flags; jetflow jobs lists them.'),
    err, box, said,
    h('div', { class: 'table-wrap' }, h('table', { id: 'jobs', class: 'runs' },
      h('thead', {}, h('tr', {}, ['Job', 'Operation', 'Filter', 'State', 'Progress', 'Sent', 'Skipped', 'Errors', 'Created', ''].map(t => h('th', {}, t)))), body)));
  const jobs = new Map();
  const draw = () => {
    const list = [...jobs.values()].sort((a, b) => (b.created + b.id).localeCompare(a.created + a.id));
    fill(body, ...list.map(j => {
      result.flags = j.flags;
      return h('tr', { dataset: { job: j.id, state: j.state } },
        h('td', { class: 'id' }, link('/jobs/' + encodeURIComponent(j.id), j.id)),
        h('td', {}, j.operation + (j.revision ? ' to ' + j.revision : '')), h('td', {}, filterText(j.filter)), h('td', {}, statusBadge(j.state)), h('td', {}, jobProgress(j)),
        h('td', { class: 'num' }, String(j.sent)), h('td', { class: 'num' }, String(j.skipped)), h('td', { class: 'num' }, String(j.errors)),
        h('td', { class: 'time' }, j.created), h('td', {}, cancelJobButton(j, result)));
    }));
    if (!list.length) fill(body, h('tr', {}, h('td', { colspan: 10, class: 'empty' }, 'No bulk jobs yet.')));
  };
  try {
    const v = await api('/jobs');
    for (const j of v.jobs) jobs.set(j.id, j);
    draw();
  } catch (e) {
    fill(err, errorBox(e));
    return;
  }
  listenJobs(j => { jobs.set(j.id, j); draw(); });
}

async function jobPage(main, id) {
  setNav('jobs');
  const head = h('div', { id: 'job' });
  const box = h('div', { id: 'confirm' });
  const said = h('p', { id: 'action-result', class: 'muted', 'aria-live': 'polite' });
  const result = { box: box, flags: '', say: t => { said.textContent = t; } };
  fill(main, h('p', {}, link('/jobs', '← Bulk jobs')), head, box, said);
  const draw = j => {
    document.title = 'jetflow: job ' + j.id;
    result.flags = j.flags;
    fill(head,
      h('h1', {}, 'Bulk ' + j.operation + ' ', h('span', { class: 'id' }, j.id), ' ', h('span', { id: 'job-state' }, statusBadge(j.state))),
      h('dl', { class: 'meta job' },
        term('Progress', h('span', { id: 'job-progress' }, jobProgress(j))),
        term('Sent', h('span', { id: 'job-sent' }, String(j.sent))),
        term('Skipped', String(j.skipped) + ' (matched but could not take a ' + j.operation + ')'),
        term('Errors', String(j.errors)),
        j.error ? term('Error', h('span', { class: 'error' }, j.error)) : null,
        j.revision ? term('To revision', h('span', { id: 'job-to' }, j.revision)) : null,
        term('Filter', filterText(j.filter)),
        term('Reason', j.reason || ''),
        term('Submitted', j.created + (j.by ? ' by ' + j.by : '')),
        j.holder ? term('Held by', j.holder + ' until ' + j.leaseUntil) : null,
        j.finished ? term('Finished', j.finished) : null),
      h('p', { class: 'muted' }, 'The same job from a shell:'), commandLine('job-cmd', j.command),
      cancelJobButton(j, result));
  };
  try {
    draw(await api('/jobs/' + encodeURIComponent(id)));
  } catch (e) {
    fill(head, errorBox(e));
    return;
  }
  listenJobs(j => { if (j.id === id) draw(j); });
}
