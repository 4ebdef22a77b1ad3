// The router: every console path renders the same document; this picks
// the page from the path and follows in-console links without reloading.
'use strict';

function route() {
  const main = document.getElementById('main');
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  let m;
  stopListening();
  if (path === '/' || path === '') return runsPage(main);
  if ((m = path.match(/^\/runs\/([^/]+)$/))) return runPage(main, decodeURIComponent(m[1]));
  if (path === '/workflows') return workflowsPage(main);
  if ((m = path.match(/^\/workflows\/([^/]+)$/))) return workflowPage(main, decodeURIComponent(m[1]));
  if (path === '/jobs') return jobsPage(main);
  if ((m = path.match(/^\/jobs\/([^/]+)$/))) return jobPage(main, decodeURIComponent(m[1]));
  if (path === '/audit') return auditPage(main);
  if (path === '/schedules') return schedulesPage(main);
  fill(main, h('h1', {}, 'Not found'), h('p', {}, link('/', 'Runs')));
}

document.addEventListener('click', e => {
  const a = e.target.closest && e.target.closest('a[data-link]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  e.preventDefault();
  history.pushState(null, '', url.pathname + url.search);
  route();
});

window.addEventListener('popstate', route);
route();
