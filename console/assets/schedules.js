// The schedules page: each schedule with its times, policies, next fires
// and last run (docs/SCHEDULES.md), and, on a console started with
// --console-actions, its actions: create and update from a form, pause,
// resume, trigger and delete, each confirmed with the jetflow command
// that does the same.
'use strict';

// scheduleFlags are a change's flags in the order jetflow lists them
// (schedule.Change.Flags), values quoted.
function scheduleFlags(c) {
  const out = [];
  const add = (flag, v) => { if (v !== undefined) out.push(flag, shellQuote(v)); };
  add('--workflow', c.workflow);
  add('--cron', c.cron);
  add('--every', c.every);
  add('--time-zone', c.timeZone);
  if (c.input !== undefined) out.push('--input', shellQuote(JSON.stringify(c.input)));
  add('--jitter', c.jitter);
  add('--overlap', c.overlap);
  add('--catch-up', c.catchUp);
  return out.join(' ');
}

async function schedulesPage(main) {
  setNav('schedules');
  const body = h('tbody');
  const confirmBox = h('div', { id: 'confirm' });
  const result = h('p', { id: 'action-result', class: 'muted', 'aria-live': 'polite' });
  const formBox = h('section', { id: 'schedule-form', class: 'panel' });
  let flags = '';
  const off = ACTIONS ? {} : { disabled: true, title: 'read-only console' };
  const cmd = (verb, name, rest) => 'jetflow schedule ' + verb + ' ' + shellQuote(name) + (rest ? ' ' + rest : '') + flags;

  // act asks, then posts the action and says how it went.
  const act = (question, command, label, path, payload, done) => {
    result.textContent = '';
    confirmStep(confirmBox, question, command, label, async () => {
      try {
        const res = await post(path, payload);
        result.textContent = done(res);
        await draw();
      } catch (e) { result.textContent = 'Not done: ' + e.message; }
    });
    confirmBox.scrollIntoView({ block: 'nearest' });
  };

  // drawForm offers a new schedule (s undefined) or an update of s:
  // only the fields changed from s are sent, and shown in the command.
  const drawForm = (s) => {
    const field = (id, label, value, attrs) => {
      const input = h('input', Object.assign({ id: id, value: value || '', 'aria-label': label, autocomplete: 'off' }, attrs || {}));
      return [h('label', {}, label + ' ', input), input];
    };
    const choice = (id, label, options, value) => {
      const sel = h('select', { id: id, 'aria-label': label }, options.map(o => h('option', { value: o, selected: o === value }, o)));
      return [h('label', {}, label + ' ', sel), sel];
    };
    const [nameL, name] = field('sf-name', 'Name', s ? s.name : '', s ? { disabled: true } : { placeholder: 'nightly' });
    const [wfL, wf] = field('sf-workflow', 'Workflow', s ? s.workflow : '', { placeholder: 'order' });
    const [kindL, kind] = choice('sf-kind', 'Times', ['cron', 'every'], s && s.every ? 'every' : 'cron');
    const [whenL, when] = field('sf-when', 'Cron expression or interval', s ? (s.every || s.cron) : '', { placeholder: "0 2 * * * or 30s" });
    const [tzL, tz] = field('sf-time-zone', 'Time zone (cron)', s ? s.timeZone : '', { placeholder: 'UTC' });
    const input = h('textarea', { id: 'sf-input', rows: 3, spellcheck: 'false', 'aria-label': 'Input (JSON)', placeholder: 'null' });
    input.value = s && s.input !== undefined ? JSON.stringify(s.input) : '';
    const [jitterL, jitter] = field('sf-jitter', 'Jitter', s ? s.jitter : '', { placeholder: 'none (0)' });
    const [overlapL, overlap] = choice('sf-overlap', 'Overlap', ['skip', 'buffer-one', 'allow'], s ? s.overlap : 'skip');
    const [catchL, catchUp] = choice('sf-catch-up', 'Catch-up', ['none', 'one', 'all'], s ? s.catchUp : 'one');
    const command = commandLine('schedule-form-cmd', '');
    const problem = h('p', { class: 'error', id: 'sf-problem' });
    // change is what the form asks, or throws what is wrong with it.
    const change = () => {
      const c = {};
      const differs = (k, v) => !s || (s[k] || '') !== v;
      const put = (k, v) => { if (differs(k, v) && (s || v !== '')) c[k] = v; };
      put('workflow', wf.value.trim());
      const w = when.value.trim();
      if (kind.value === 'every') {
        if (!s || s.every !== w) c.every = w;
      } else {
        if (!s || s.cron !== w) c.cron = w;
        put('timeZone', tz.value.trim());
      }
      const text = input.value.trim();
      let value = null;
      if (text) {
        try { value = JSON.parse(text); } catch (e) { throw new Error('the input is not JSON: ' + e.message); }
      }
      if (s ? JSON.stringify(s.input === undefined ? null : s.input) !== JSON.stringify(value) : text !== '') c.input = value;
      const j = jitter.value.trim();
      if (s ? (s.jitter || '') !== j : j !== '') c.jitter = s && j === '' ? '0' : j;
      if (!s || s.overlap !== overlap.value) c.overlap = overlap.value;
      if (!s || s.catchUp !== catchUp.value) c.catchUp = catchUp.value;
      return c;
    };
    const sync = () => {
      problem.textContent = '';
      try {
        const c = change();
        const n = s ? s.name : (name.value.trim() || 'NAME');
        command.querySelector('code').textContent = cmd(s ? 'update' : 'create', n, scheduleFlags(c));
      } catch (e) { problem.textContent = e.message; }
    };
    [name, wf, when, tz, input, jitter].forEach(el => el.addEventListener('input', sync));
    [kind, overlap, catchUp].forEach(el => el.addEventListener('change', sync));
    const submit = h('button', Object.assign({ type: 'button', id: 'sf-submit' }, off), s ? 'Update schedule' : 'Create schedule');
    submit.addEventListener('click', () => {
      let c;
      sync();
      try { c = change(); } catch (e) { problem.textContent = e.message; return; }
      if (s && !Object.keys(c).length) { problem.textContent = 'Nothing changed.'; return; }
      const n = s ? s.name : name.value.trim();
      const code = command.querySelector('code').textContent;
      if (s) {
        act('Update schedule ' + n + '? New times re-arm it (fires stored before are dropped); the next fires follow the new definition.',
          code, 'Update', '/schedules/' + encodeURIComponent(n) + '/update', c, () => 'Schedule ' + n + ' updated.');
      } else {
        act('Create schedule ' + n + '? It fires at once on its times.', code, 'Create', '/schedules', Object.assign({ name: n }, c),
          () => 'Schedule ' + n + ' created.');
      }
    });
    const cancel = h('button', { type: 'button', id: 'sf-new' }, 'New schedule');
    cancel.addEventListener('click', () => drawForm());
    fill(formBox, h('h2', {}, s ? 'Update schedule ' + s.name : 'New schedule'),
      ACTIONS ? null : h('p', { class: 'muted' }, 'This console is read-only (start it with --console-actions to act from here). The commands do the same from a shell.'),
      h('div', { class: 'form' }, nameL, wfL, kindL, whenL, tzL),
      h('div', { class: 'form' }, h('label', {}, 'Input (JSON) ', input), jitterL, overlapL, catchL, submit, s ? cancel : null),
      problem, command);
    sync();
  };

  const actions = (s) => {
    const b = (verb, label, cls) => h('button', Object.assign({ type: 'button', class: 'sched-' + verb + (cls ? ' ' + cls : ''), dataset: { schedule: s.name } }, off), label);
    const toggle = s.paused ? b('resume', 'Resume') : b('pause', 'Pause');
    toggle.addEventListener('click', () => s.paused
      ? act('Resume schedule ' + s.name + '? It fires again from now on; fires missed while paused are not caught up.', cmd('resume', s.name), 'Resume',
        '/schedules/' + encodeURIComponent(s.name) + '/resume', {}, () => 'Schedule ' + s.name + ' resumed.')
      : act('Pause schedule ' + s.name + '? It fires nothing until resumed; its runs go on.', cmd('pause', s.name), 'Pause',
        '/schedules/' + encodeURIComponent(s.name) + '/pause', {}, () => 'Schedule ' + s.name + ' paused.'));
    const trigger = b('trigger', 'Trigger');
    trigger.addEventListener('click', () => act('Start one run of schedule ' + s.name + ' now, whatever its overlap policy?', cmd('trigger', s.name), 'Trigger',
      '/schedules/' + encodeURIComponent(s.name) + '/trigger', {}, res => 'Run ' + res.run + ' started.'));
    const edit = h('button', { type: 'button', class: 'sched-edit', dataset: { schedule: s.name } }, 'Edit');
    edit.addEventListener('click', () => { drawForm(s); formBox.scrollIntoView({ block: 'nearest' }); });
    const del = b('delete', 'Delete', 'danger');
    del.addEventListener('click', () => act('Delete schedule ' + s.name + '? It fires no more; the runs it started are left alone.', cmd('delete', s.name), 'Delete',
      '/schedules/' + encodeURIComponent(s.name) + '/delete', {}, () => 'Schedule ' + s.name + ' deleted.'));
    return h('td', { class: 'actions' }, toggle, ' ', trigger, ' ', edit, ' ', del);
  };

  fill(main, h('h1', {}, 'Schedules'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'schedules', class: 'runs' },
      h('thead', {}, h('tr', {}, ['Schedule', 'When', 'Workflow', 'Overlap', 'Catch-up', 'Next fires', 'Last run', 'Started', 'Skipped', 'Actions'].map(t => h('th', {}, t)))), body)),
    confirmBox, result, formBox);
  const draw = async () => {
    try {
      const v = await api('/schedules');
      flags = v.flags ? ' ' + v.flags : '';
      fill(body, ...v.schedules.map(s => h('tr', { dataset: { schedule: s.name } },
        h('td', {}, s.name, s.paused ? h('span', { class: 'muted' }, ' (paused)') : ''),
        h('td', {}, s.when, s.jitter ? h('span', { class: 'muted' }, ' jitter ' + s.jitter) : ''),
        h('td', {}, link('/workflows/' + encodeURIComponent(s.workflow), s.workflow)),
        h('td', {}, s.overlap),
        h('td', {}, s.catchUp),
        h('td', { class: 'next-fires' }, s.next.length ? s.next.map((t, i) => [i ? ', ' : '', new Date(t).toISOString()]) : h('span', { class: 'muted' }, 'none (paused)')),
        h('td', {}, s.lastRun ? [link('/runs/' + encodeURIComponent(s.lastRun), s.lastRun), s.lastStatus ? h('span', { class: 'muted' }, ' ' + s.lastStatus) : ''] : '–'),
        h('td', { class: 'num' }, String(s.started)),
        h('td', { class: 'num', title: s.lastSkip || '' }, String(s.skipped)),
        actions(s))));
      if (!v.schedules.length) fill(body, h('tr', {}, h('td', { colspan: 10, class: 'empty' }, 'No schedules yet (the form below, or jetflow schedule create NAME --workflow W --every 1h).')));
    } catch (e) {
      fill(body, h('tr', {}, h('td', { colspan: 10 }, errorBox(e))));
    }
  };
  await draw();
  drawForm();
  // Runs starting and settling redraw it: each fire starts one.
  listen('', debounce(draw, 1000));
}
