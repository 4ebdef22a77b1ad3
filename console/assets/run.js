// The run page: status and times, the statechart with the run on it, the
// DAG of a work state, input, data, result or error, the actions, and
// the history with the replay check, all updated live.
'use strict';

async function runPage(main, id) {
  setNav('runs');
  const header = h('div', { id: 'run-header' });
  const actions = h('section', { id: 'actions', class: 'panel' });
  const chart = h('div', { id: 'chart', class: 'diagram' });
  const works = h('div', { id: 'work-states', class: 'chips' });
  const dag = h('div', { id: 'dag', class: 'diagram' });
  const dagNodes = h('div', { id: 'dag-nodes' });
  const dagTitle = h('h3', { id: 'dag-title' }, 'DAG');
  const data = h('section', { id: 'data', class: 'panel' });
  const extra = h('div', { id: 'extra' });
  const replayBox = h('div', { id: 'replay' });
  const timeline = h('ol', { id: 'timeline', class: 'timeline' });
  const err = h('div', { id: 'run-error' });
  fill(main, 
    h('p', {}, link('/', '← Runs')),
    header, err,
    h('div', { class: 'columns' },
      h('section', { class: 'panel' }, h('h2', {}, 'Statechart'), legend(), chart, h('h3', {}, 'Work states'), works),
      h('section', { class: 'panel' }, dagTitle, dag, dagNodes)),
    actions, data, extra,
    h('section', { class: 'panel' }, h('h2', {}, 'History'), replayBox, timeline));

  let view = null;
  let chosen = '';
  // actionsFor is what the actions panel was drawn for: it is drawn again
  // only when that changes, so that a live update of a running run keeps
  // what is typed and a confirmation open.
  let actionsFor = '';

  async function load() {
    try {
      const q = chosen ? '?state=' + encodeURIComponent(chosen) : '';
      view = await api('/runs/' + encodeURIComponent(id) + q);
      fill(err, );
      draw();
    } catch (e) {
      fill(err, errorBox(e));
    }
  }

  function draw() {
    const v = view;
    document.title = 'jetflow: ' + v.id;
    fill(header, 
      h('h1', {}, 'Run ', h('span', { class: 'id' }, v.id), ' ', h('span', { id: 'run-status' }, runBadge(v))),
      h('dl', { class: 'meta' },
        term('Workflow', link('/workflows/' + encodeURIComponent(v.workflow) + '?revision=' + encodeURIComponent(v.revision), v.workflow), ' ', h('span', { class: 'muted' }, 'revision ' + v.revision)),
        term('State', h('span', { id: 'run-state' }, v.active.map(stateLabel).join(', '))),
        term('Started', fmtTime(v.started)),
        term('Settled', fmtTime(v.settled)),
        term('Duration', duration(v)),
        term('Updated', fmtTime(v.updated)),
        term('Steps', String(v.seq) + ' inputs applied, generation ' + v.generation)));
    fill(chart, svgNode(v.chart));
    for (const g of chart.querySelectorAll('g.jf-work[data-id]')) {
      g.classList.add('clickable');
      g.addEventListener('click', () => chooseState(g.dataset.id));
    }
    fill(works, ...v.workStates.map(ws => {
      const b = h('button', { type: 'button', class: 'chip' + (v.dag && v.dag.state === ws.id ? ' current' : ''), dataset: { state: ws.id } },
        ws.name, h('span', { class: 'count' }, ws.visits ? '×' + ws.visits : '–'));
      b.addEventListener('click', () => chooseState(ws.id));
      return b;
    }));
    drawDAG(v.dag);
    const key = v.status + '|' + (v.awaiting || []).map(a => a.event).join(',');
    if (key !== actionsFor) {
      actionsFor = key;
      drawActions(v);
    }
    drawData(v);
    drawExtra(v);
  }

  // runBadge is the run's status; a run done through a catch says which
  // failure it caught, the whole error on hover and in the data panel.
  function runBadge(v) {
    const b = statusBadge(v.status, v.caught);
    if (v.caught && v.caughtError) b.title = 'caught in ' + stateLabel(v.caughtError.state) + ': ' + v.caughtError.message;
    return b;
  }

  function chooseState(stateId) {
    chosen = stateId;
    load();
  }

  function drawDAG(d) {
    if (!d) {
      dagTitle.textContent = 'DAG';
      fill(dag, h('p', { class: 'muted' }, 'Choose a work state to see its DAG.'));
      fill(dagNodes, );
      return;
    }
    dagTitle.textContent = 'DAG of ' + stateLabel(d.state);
    fill(dag, svgNode(d.svg));
    fill(dagNodes, h('table', { class: 'small', id: 'dag-table' },
      h('thead', {}, h('tr', {}, ['Node', 'Kind', 'Task', 'Status', 'Attempt'].map(t => h('th', {}, t)))),
      h('tbody', {}, d.nodes.map(n => h('tr', { dataset: { node: n.id } },
        h('td', {}, n.id), h('td', {}, n.kind), h('td', {}, n.task ? n.task + '@' + n.version : ''),
        h('td', {}, n.status ? statusBadge(n.status) : h('span', { class: 'muted', title: 'no status: not run, or abandoned when the run ended' }, '–')),
        h('td', { class: 'num' }, n.attempt || ''))))));
  }

  // drawActions offers what the run's status allows: events, cancel,
  // pause or resume and terminate while it runs, redrive once it failed.
  // Each asks for confirmation showing the equivalent command.
  function drawActions(v) {
    const flags = v.commands.flags ? ' ' + v.commands.flags : '';
    resetFlags = flags;
    const result = h('p', { id: 'action-result', class: 'muted', 'aria-live': 'polite' });
    const confirmBox = h('div', { id: 'confirm' });
    const off = ACTIONS ? {} : { disabled: true, title: 'read-only console' };
    const readOnly = ACTIONS ? null : h('p', { class: 'muted' }, 'This console is read-only (start it with --console-actions to act from here). The commands below do the same from a shell.');
    // act asks, then posts the action and says how it went.
    const act = (question, cmd, label, what, body, done) => {
      result.textContent = '';
      confirmStep(confirmBox, question, cmd.querySelector('code').textContent, label, async () => {
        try {
          const res = await post('/runs/' + encodeURIComponent(v.id) + '/' + what, body());
          result.textContent = done(res);
        } catch (e) { result.textContent = 'Not done: ' + e.message; }
      });
    };
    const button = (id, label, cls) => h('button', Object.assign({ type: 'button', id: id, class: cls || null }, off), label);

    if (['done', 'failed', 'cancelled', 'terminated'].includes(v.status)) {
      const parts = [h('h2', {}, 'Actions'), h('p', { class: 'muted' }, 'The run is ' + v.status + ': it takes no more events.')];
      if (v.status === 'failed') {
        const reason = h('input', { id: 'redrive-reason', placeholder: 'reason (optional)', 'aria-label': 'Redrive reason', autocomplete: 'off' });
        const latest = h('input', { id: 'redrive-latest', type: 'checkbox' });
        const cmd = commandLine('redrive-cmd', '');
        const sync = () => {
          cmd.querySelector('code').textContent = 'jetflow redrive ' + shellQuote(v.id) + (latest.checked ? ' --to-revision latest' : '') +
            (reason.value.trim() ? ' --reason ' + shellQuote(reason.value.trim()) : '') + flags;
        };
        reason.addEventListener('input', sync);
        latest.addEventListener('change', sync);
        const redrive = button('redrive-run', 'Redrive run');
        redrive.addEventListener('click', () => act('Redrive run ' + v.id + '? Its failed tasks run again, with their side effects.', cmd, 'Redrive', 'redrive',
          () => ({ reason: reason.value.trim(), revision: latest.checked ? 'latest' : '' }),
          res => res.status ? 'Redriven: the run is ' + res.status + '.' : 'Redrive sent; no dispatcher has taken it yet.'));
        parts.push(readOnly, h('p', {}, 'A failed run can be redriven: it continues from its failed work state, whose failed tasks run again.'),
          h('div', { class: 'form' }, h('label', {}, 'Reason ', reason), h('label', { class: 'check' }, latest, ' move it to the latest revision (the same document, another task policy)'), redrive),
          cmd);
        sync();
      }
      fill(actions, ...parts, commandLine('status-cmd', v.commands.status), confirmBox, result);
      return;
    }

    const awaited = (v.awaiting || []).map(a => a.event);
    const type = h('input', { id: 'event-type', list: 'awaited-events', value: awaited[0] || '', placeholder: 'event type', 'aria-label': 'Event type', autocomplete: 'off' });
    const payload = h('textarea', { id: 'event-payload', rows: 4, spellcheck: 'false', 'aria-label': 'Event payload (JSON)', placeholder: '{"amount": 10}' });
    const eventCmd = commandLine('event-cmd', '');
    const reason = h('input', { id: 'cancel-reason', placeholder: 'reason (optional)', 'aria-label': 'Cancel reason', autocomplete: 'off' });
    const cancelCmd = commandLine('cancel-cmd', '');
    const sync = () => {
      let p = payload.value.trim();
      try { if (p) p = JSON.stringify(JSON.parse(p)); } catch (e) { /* shown on send */ }
      eventCmd.querySelector('code').textContent = 'jetflow event ' + shellQuote(v.id) + ' ' + shellQuote(type.value.trim() || 'TYPE') +
        (p ? ' --payload ' + shellQuote(p) : '') + flags;
      cancelCmd.querySelector('code').textContent = 'jetflow cancel ' + shellQuote(v.id) + (reason.value.trim() ? ' --reason ' + shellQuote(reason.value.trim()) : '') + flags;
    };
    type.addEventListener('input', sync);
    payload.addEventListener('input', sync);
    reason.addEventListener('input', sync);
    const send = button('send-event', 'Send event');
    send.addEventListener('click', async () => {
      let body = { type: type.value.trim() };
      const text = payload.value.trim();
      if (text) {
        try { body.payload = JSON.parse(text); } catch (e) { result.textContent = 'The payload is not JSON: ' + e.message; return; }
      }
      try {
        await post('/runs/' + encodeURIComponent(v.id) + '/event', body);
        result.textContent = 'Event ' + body.type + ' sent.';
      } catch (e) { result.textContent = 'Not sent: ' + e.message; }
    });
    const cancel = button('cancel-run', 'Cancel run', 'danger');
    cancel.addEventListener('click', () => act('Cancel run ' + v.id + '? Its catch, if it has one, still runs.', cancelCmd, 'Cancel run', 'cancel',
      () => ({ reason: reason.value.trim() }), () => 'Cancel sent.'));
    // The operator's: pause or resume, and terminate with a reason.
    const paused = v.status === 'paused';
    const opReason = h('input', { id: 'operator-reason', placeholder: 'reason (required to terminate)', 'aria-label': 'Operator reason', autocomplete: 'off' });
    const opCmd = commandLine('operator-cmd', '');
    const terminateCmd = commandLine('terminate-cmd', '');
    const opSync = () => {
      const why = opReason.value.trim() ? ' --reason ' + shellQuote(opReason.value.trim()) : '';
      opCmd.querySelector('code').textContent = 'jetflow ' + (paused ? 'resume ' : 'pause ') + shellQuote(v.id) + why + flags;
      terminateCmd.querySelector('code').textContent = 'jetflow terminate ' + shellQuote(v.id) + (why || ' --reason REASON') + flags;
    };
    opReason.addEventListener('input', opSync);
    const what = paused ? 'resume' : 'pause';
    const toggle = button(what + '-run', paused ? 'Resume run' : 'Pause run');
    toggle.addEventListener('click', () => act(paused ? 'Resume run ' + v.id + '? What it held applies in order.' : 'Pause run ' + v.id + '? It invokes no task and fires no timer until resumed.',
      opCmd, paused ? 'Resume' : 'Pause', what, () => ({ reason: opReason.value.trim() }), () => (paused ? 'Resume' : 'Pause') + ' sent.'));
    const terminate = button('terminate-run', 'Terminate run', 'danger');
    terminate.addEventListener('click', () => {
      if (!opReason.value.trim()) { result.textContent = 'Say why the run is terminated.'; return; }
      act('Terminate run ' + v.id + '? It ends at once; nothing more runs, not even catch.', terminateCmd, 'Terminate', 'terminate',
        () => ({ reason: opReason.value.trim() }), () => 'Terminate sent.');
    });
    fill(actions,
      h('h2', {}, 'Actions'),
      paused ? h('p', {}, 'The run is paused: it holds what it receives until resumed.') : null,
      readOnly,
      awaited.length ? h('p', {}, 'Waiting for: ', (v.awaiting || []).map((a, i) => [i ? ', ' : '', h('code', {}, a.event), a.guard ? h('span', { class: 'muted' }, ' when ' + JSON.stringify(a.guard)) : '', h('span', { class: 'muted' }, ' → ' + a.to)])) : null,
      h('datalist', { id: 'awaited-events' }, awaited.map(e => h('option', { value: e }))),
      h('div', { class: 'form' }, h('label', {}, 'Event type ', type), h('label', {}, 'Payload (JSON) ', payload), send),
      eventCmd,
      h('div', { class: 'form' }, h('label', {}, 'Reason ', reason), cancel),
      cancelCmd,
      h('div', { class: 'form' }, h('label', {}, 'Operator reason ', opReason), toggle, terminate),
      opCmd, terminateCmd, confirmBox, result);
    sync();
    opSync();
  }

  function drawData(v) {
    const blocks = [h('h2', {}, 'Data'),
      h('div', { class: 'columns' },
        h('div', { id: 'input' }, h('h3', {}, 'Input'), jsonBlock(v.input)),
        h('div', { id: 'current-data' }, h('h3', {}, 'Current data'), jsonBlock(v.data)))];
    if (v.result !== undefined) blocks.push(h('div', { id: 'result' }, h('h3', {}, 'Result'), jsonBlock(v.result)));
    if (v.caughtError) {
      const c = v.caughtError;
      blocks.push(h('div', { id: 'caught', class: 'failure caught' }, h('h3', {}, 'Caught error'),
        h('p', { class: 'muted' }, 'A task failed and the work state\'s catch took the run on; the error is the run\'s data.'),
        h('dl', { class: 'meta' }, term('Code', c.code), c.state ? term('Caught in', stateLabel(c.state)) : null,
          c.node ? term('Node', c.node + (c.task ? ' (' + c.task + ')' : '')) : null, term('Message', c.message))));
    }
    if (v.failure) {
      blocks.push(h('div', { id: 'failure', class: 'failure' }, h('h3', {}, 'Error'),
        h('dl', { class: 'meta' }, term('Code', v.failure.code), term('Path', v.failure.path || (v.failure.unlocated ? '(none)' : "''")), term('Message', v.failure.message))));
    }
    fill(data, ...blocks);
  }

  function drawExtra(v) {
    const parts = [];
    if (v.pending) {
      const running = Object.entries(v.pending.running || {});
      parts.push(h('section', { class: 'panel', id: 'pending' }, h('h2', {}, 'Work in flight'),
        h('p', {}, stateLabel(v.pending.state) + ', visit ' + v.pending.visit + (v.pending.activation ? ', activation ' + v.pending.activation : '')),
        running.length ? h('ul', {}, running.map(([node, a]) => h('li', {}, node + ': attempt ' + a.attempt + (a.waiting ? ' (waiting to retry)' : ' (invoked)')))) : null));
    }
    if (v.parent || (v.children || []).length) {
      const tree = kids => h('ul', {}, kids.map(k => h('li', {},
        link('/runs/' + encodeURIComponent(k.run), k.run), ' ', statusBadge(k.status),
        k.status === 'removed' ? h('span', { class: 'muted' }, ' by retention' + (k.removedAt ? ' at ' + fmtTime(k.removedAt) : '')) : null,
        h('span', { class: 'muted' }, ' ' + k.workflow + ', node ' + k.node + ', attempt ' + k.attempt + (k.detached ? ', detached' : '')),
        (k.children || []).length ? tree(k.children) : null)));
      parts.push(h('section', { class: 'panel', id: 'family' }, h('h2', {}, 'Parent and children'),
        v.parent ? h('p', {}, 'Child of ', link('/runs/' + encodeURIComponent(v.parent.run), v.parent.run),
          h('span', { class: 'muted' }, ' (node ' + v.parent.node + ', ' + v.parent.task + '@' + v.parent.version + ' attempt ' + v.parent.attempt + ')')) : null,
        (v.children || []).length ? tree(v.children) : null));
    }
    if ((v.buffered || []).length) {
      parts.push(h('section', { class: 'panel' }, h('h2', {}, 'Buffered events'), jsonBlock(v.buffered)));
    }
    if ((v.rejected || []).length) {
      parts.push(h('section', { class: 'panel', id: 'rejected' }, h('h2', {}, 'Refused inputs'),
        h('ul', {}, v.rejected.map(r => h('li', {}, fmtTime(r.time) + ' seq ' + r.seq + ' ' + r.kind + ': ' + r.reason)))));
    }
    fill(extra, ...parts);
  }

  async function loadHistory() {
    try {
      const hv = await api('/runs/' + encodeURIComponent(id) + '/history');
      drawHistory(hv);
    } catch (e) {
      fill(replayBox, errorBox(e));
    }
  }

  function drawHistory(hv) {
    const r = hv.replay;
    const text = {
      equal: 'Replay: the history rebuilds this state exactly',
      differs: 'Replay: the history does NOT rebuild this state',
      trimmed: 'Replay: the history was trimmed by the stream\'s retention',
      error: 'Replay: not checked',
    }[r.verdict] || r.verdict;
    fill(replayBox, h('p', { class: 'replay rp-' + r.verdict, dataset: { verdict: r.verdict } }, text,
      h('span', { class: 'muted' }, ' (' + r.applied + ' applied, ' + r.rejected + ' refused' + (r.order ? ', ' + r.order + ' order' : '') + ')')),
    r.detail ? h('p', { class: 'muted' }, r.detail) : null,
    r.divergence ? h('p', {}, 'First difference at ', h('code', {}, r.divergence), ': saved ', h('code', {}, r.saved), ', rebuilt ', h('code', {}, r.rebuilt)) : null,
    (r.notes || []).length ? h('ul', { class: 'muted' }, r.notes.map(n => h('li', {}, n))) : null,
    hv.truncated ? h('p', { class: 'muted' }, 'Only the first ' + hv.entries.length + ' messages are shown.') : null);
    const open = new Set([...timeline.querySelectorAll('li.open')].map(li => li.dataset.seq));
    fill(timeline, ...hv.entries.map(e => entryItem(e, open.has(String(e.seq)))));
  }

  function entryItem(e, open) {
    const details = h('div', { class: 'details' },
      e.why ? h('p', { class: 'muted' }, e.why) : null,
      h('h4', {}, 'Message'), jsonBlock(e.body, 2000),
      (e.effects || []).length ? [h('h4', {}, 'Sent'), jsonBlock(e.effects, 4000)] : null,
      resetControl(id, e));
    const li = h('li', { class: 'entry k-' + e.kind + (open ? ' open' : ''), dataset: { seq: String(e.seq), kind: e.kind } },
      h('button', { type: 'button', class: 'entry-head', 'aria-expanded': open ? 'true' : 'false' },
        h('span', { class: 'time' }, fmtTime(e.time)),
        h('span', { class: 'kind' }, e.kind),
        h('span', { class: 'summary' }, e.summary),
        e.outcome && e.outcome !== 'applied' ? h('span', { class: 'badge st-' + e.outcome.replace(/[^a-z]/g, ''), title: e.why || null }, e.outcome) : null),
      e.to ? h('div', { class: 'transition' }, (e.from || []).map(stateLabel).join(', ') || '(start)', ' → ', e.to.map(stateLabel).join(', '),
        e.status ? h('span', { class: 'muted' }, ' · ' + e.status) : null) : null,
      (e.effects || []).length ? h('ul', { class: 'effects' }, e.effects.map(f => h('li', { class: 'e-' + f.kind }, f.summary))) : null,
      details);
    li.querySelector('.entry-head').addEventListener('click', ev => {
      li.classList.toggle('open');
      ev.currentTarget.setAttribute('aria-expanded', li.classList.contains('open') ? 'true' : 'false');
    });
    return li;
  }

  await load();
  loadHistory();
  const reload = debounce(load, 150);
  const rehistory = debounce(loadHistory, 700);
  listen('?run=' + encodeURIComponent(id), () => { reload(); rehistory(); });
}

function term(name, ...value) {
  return [h('dt', {}, name), h('dd', {}, ...value)];
}

function legend() {
  const item = (cls, text) => h('span', { class: 'legend-item ' + cls }, text);
  return h('p', { class: 'legend' }, item('lg-active', 'active'), item('lg-visited', 'visited'), item('lg-failed', 'failed'),
    h('span', { class: 'muted' }, ' · the badge counts visits; click a work state for its DAG'));
}
