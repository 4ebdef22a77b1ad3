'use strict';
// The reset action of the history timeline (docs/OPERATIONS.md#reset):
// each input the run took offers to take the run back to its state after
// it, with the equivalent command.

// resetFlags are the connection flags of the page's commands, set by the
// run page when it loads the run.
let resetFlags = '';

// resetControl returns the reset control of one history entry, or null
// for an input the run cannot go back to (superseded, refused as
// malformed, never applied).
function resetControl(runID, e) {
  if (!['applied', 'rejected', 'ignored'].includes(e.outcome)) return null;
  const cmd = 'jetflow reset ' + shellQuote(runID) + ' --to ' + e.seq + resetFlags;
  const result = h('p', { class: 'muted', 'aria-live': 'polite' });
  const ask = h('div', { class: 'reset-confirm' });
  const button = h('button', { type: 'button', class: 'reset-here', disabled: !ACTIONS, title: ACTIONS ? '' : 'read-only console' }, 'Reset the run to its state after this input');
  button.addEventListener('click', () => {
    confirmStep(ask, 'Take run ' + runID + ' back to its state after input ' + e.seq + '? What it did since is superseded, and its tasks from there run again.', cmd, 'Reset', async () => {
      try {
        const res = await post('/runs/' + encodeURIComponent(runID) + '/reset', { to: e.seq, reason: '' });
        result.textContent = 'Reset sent (input ' + res.seq + '): the history marks its verdict.';
      } catch (err) {
        result.textContent = String(err.message || err);
      }
    });
  });
  return h('div', { class: 'reset' }, h('h4', {}, 'Reset'), button, commandLine('reset-cmd-' + e.seq, cmd), ask, result);
}
