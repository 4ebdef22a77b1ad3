// Helpers shared by every page of the jetflow console. Every string from
// the server becomes a text node or an attribute value: nothing is ever
// parsed as HTML. Diagrams are SVG drawn by the server with every name
// escaped, parsed as XML and imported as elements.
'use strict';

const BASE = document.body.dataset.base;
const ACTIONS = document.body.dataset.actions === 'true';

// h builds an element: attrs holds attributes, on* listeners, and
// `dataset`; children are nodes or strings (made text nodes).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// link is an in-console link the router follows without reloading.
function link(path, ...children) {
  return h('a', { href: BASE + path, 'data-link': true }, ...children);
}

async function api(path, options) {
  const res = await fetch(BASE + '/api' + path, Object.assign({ headers: { Accept: 'application/json' } }, options));
  let body = null;
  try { body = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) throw new Error((body && body.error) || (res.status + ' ' + res.statusText));
  return body;
}

// post sends an action; the header proves it comes from this page.
function post(path, body) {
  return api(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Jetflow-Console': '1', Accept: 'application/json' },
    body: JSON.stringify(body),
  });
}

function pad(n, w) { return String(n).padStart(w || 2, '0'); }

function fmtTime(ms) {
  if (!ms || ms < 0) return '';
  const d = new Date(ms);
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
    pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + '.' + pad(d.getMilliseconds(), 3);
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null || ms < 0) return '';
  if (ms < 1000) return Math.round(ms) + 'ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + 's';
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h > 0) return h + 'h' + pad(m % 60) + 'm';
  return m + 'm' + pad(Math.floor(s % 60)) + 's';
}

function duration(run) {
  if (!run.started || run.started < 0) return '';
  return fmtDuration((run.settled || Date.now()) - run.started);
}

// stateLabel reads a state id as people do: /states/a/flow/states/b → a › b.
function stateLabel(id) {
  if (!id) return '';
  if (!id.startsWith('/states/')) return id;
  return id.slice(8).split('/flow/states/').map(s => s.replace(/~1/g, '/').replace(/~0/g, '~')).join(' › ');
}

// statusBadge shows a status; caught (a run's summary's code) marks a
// run done through a catch, which is not a plain success.
function statusBadge(status, caught) {
  const cls = 'badge st-' + String(status).replace(/[^a-z]/g, '');
  if (caught && status === 'done') {
    return h('span', { class: cls + ' caught', title: 'done through a catch: the run recovered from a failure (' + caught + ')' }, 'done · caught ' + caught);
  }
  return h('span', { class: cls }, status);
}

// jsonBlock shows a value as indented JSON, cut at limit characters with
// a button that shows the rest.
function jsonBlock(value, limit) {
  limit = limit || 4000;
  const text = value === undefined ? '(none)' : JSON.stringify(value, null, 2);
  const pre = h('pre', { class: 'json' });
  if (text.length <= limit) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, limit) + '…';
  const more = h('button', { type: 'button', class: 'more' }, 'Show all (' + text.length.toLocaleString() + ' characters)');
  more.addEventListener('click', () => {
    const all = pre.textContent.length > limit + 1;
    pre.textContent = all ? text.slice(0, limit) + '…' : text;
    more.textContent = all ? 'Show all (' + text.length.toLocaleString() + ' characters)' : 'Show less';
  });
  return h('div', { class: 'json-wrap' }, pre, more);
}

// svgNode parses server-drawn SVG as XML (never as HTML) and imports it.
function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  if (doc.querySelector('parsererror') || doc.documentElement.localName !== 'svg') {
    return h('p', { class: 'error' }, 'The diagram could not be drawn.');
  }
  return document.importNode(doc.documentElement, true);
}

// shellQuote quotes a word for a POSIX shell, as the server does.
function shellQuote(s) {
  s = String(s);
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return "'" + s.replace(/'/g, "'\\''") + "'";
}

// commandLine shows a command with a button that copies it.
function commandLine(id, text) {
  const code = h('code', { id: id }, text);
  const copy = h('button', { type: 'button', class: 'copy', title: 'Copy to the clipboard' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(code.textContent);
      copy.textContent = 'Copied';
    } catch (e) {
      const r = document.createRange();
      r.selectNodeContents(code);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      copy.textContent = 'Selected: press Ctrl+C';
    }
    setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
  });
  return h('div', { class: 'cmd' }, code, copy);
}

function errorBox(err) {
  return h('p', { class: 'error', role: 'alert' }, String(err && err.message || err));
}

// debounce runs f once calls stop for ms.
function debounce(f, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => f(...args), ms);
  };
}

// Live updates: one event stream at a time, opened by the page shown.
let eventSource = null;

function listen(query, onRuns) {
  stopListening();
  const live = document.getElementById('live');
  const es = new EventSource(BASE + '/api/events' + query);
  eventSource = es;
  es.addEventListener('hello', () => { live.textContent = 'live'; live.className = 'live on'; });
  es.addEventListener('runs', e => {
    live.textContent = 'live';
    live.className = 'live on';
    onRuns(JSON.parse(e.data));
  });
  es.addEventListener('error', () => {
    live.textContent = 'reconnecting…';
    live.className = 'live off';
  });
}

// listenJobs follows the job bucket: onJob gets each job's record now
// and after every change.
function listenJobs(onJob) {
  stopListening();
  const live = document.getElementById('live');
  const es = new EventSource(BASE + '/api/jobs/events');
  eventSource = es;
  es.addEventListener('hello', () => { live.textContent = 'live'; live.className = 'live on'; });
  es.addEventListener('job', e => onJob(JSON.parse(e.data)));
  es.addEventListener('error', () => {
    live.textContent = 'reconnecting…';
    live.className = 'live off';
  });
}

// navigate shows another console page without reloading.
function navigate(path) {
  history.pushState(null, '', BASE + path);
  route();
}

function stopListening() {
  if (eventSource) eventSource.close();
  eventSource = null;
}

function setNav(which) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('current', a.dataset.nav === which);
  }
}

// fill replaces an element's children, skipping null and false as h does
// (the DOM's own replaceChildren would write them out as text).
function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// confirmStep asks before an action, in the page: what will happen, the
// equivalent command, and a button that calls act. Back forgets it.
function confirmStep(box, question, command, label, act) {
  const yes = h('button', { type: 'button', id: 'confirm-yes', class: 'danger' }, label);
  const no = h('button', { type: 'button', id: 'confirm-no' }, 'Back');
  no.addEventListener('click', () => fill(box));
  yes.addEventListener('click', async () => {
    yes.disabled = true;
    no.disabled = true;
    try { await act(); } finally { fill(box); }
  });
  fill(box, h('div', { class: 'confirm', role: 'alertdialog', 'aria-label': question },
    h('p', {}, question), h('p', { class: 'muted' }, 'The same from a shell:'), commandLine('confirm-cmd', command),
    h('div', { class: 'form' }, yes, no)));
  yes.focus();
}
