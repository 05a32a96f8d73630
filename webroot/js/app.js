// SPDX-License-Identifier: ISC
// The console's shell: the header, the router (hash routes, so the server serves one page),
// and the move to the login page whenever the session ends.
//
// A page is a module under js/pages/ exporting render(main, ctx). ctx has:
//   parts   the route's segments after the page's own (e.g. ['jobs', '12'])
//   query   URLSearchParams of the route
//   signal  an AbortSignal that fires when the user leaves the page
//   ready() marks the page as showing its first data (body[data-ready=NAME])
//   cleanup(fn) runs fn when the user leaves the page
// render may be async; its errors are shown in the page.

import { can, loggedIn, logout, onExpire, session } from './api.js';
import { clear, h, onTimeZone, prefs } from './dom.js';

// first segment -> [module, page name for a given route]
const routes = {
  login: ['login', () => 'login'],
  dashboard: ['dashboard', () => 'dashboard'],
  worksheets: ['worksheets', (p) => (p.length ? 'worksheet' : 'worksheets')],
  bench: [
    'bench',
    (p) => ({ new: 'bench-new', jobs: p.length > 1 ? 'job' : 'bench', compare: 'compare', sweeps: p.length > 1 ? 'sweep' : 'sweeps' })[p[0]] || 'bench',
  ],
  hardware: ['hardware', () => 'hardware'],
  admin: ['admin', () => 'admin'],
};

const main = document.getElementById('main');
let leave = null; // ends the current page

export function parseRoute(hash = location.hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query), raw };
}

export function go(route) {
  const target = `#/${route.replace(/^#?\/?/, '')}`;
  if (location.hash === target) show();
  else location.hash = target;
}

function toLogin() {
  const here = parseRoute().raw;
  const next = here && !here.startsWith('login') ? here : '';
  go(next ? `login?next=${encodeURIComponent(next)}` : 'login');
}

function header() {
  const top = document.getElementById('top');
  const inside = loggedIn();
  top.hidden = !inside;
  if (!inside) return;
  document.getElementById('who-name').textContent = session.user || '';
  for (const a of top.querySelectorAll('[data-needs]')) a.hidden = !can(a.dataset.needs);
  const section = parseRoute().parts[0] || 'dashboard';
  for (const a of top.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const utc = document.getElementById('utc-toggle');
  utc.setAttribute('aria-pressed', String(prefs.utc));
  utc.textContent = prefs.utc ? 'UTC' : 'Local time';
}

async function show() {
  if (leave) leave();
  const { parts, query } = parseRoute();
  let [first, ...rest] = parts;
  if (!first) first = loggedIn() ? 'dashboard' : 'login';
  if (!loggedIn() && first !== 'login') {
    toLogin();
    return;
  }
  if (loggedIn() && first === 'login') first = 'dashboard';
  const route = routes[first];
  const controller = new AbortController();
  const cleanups = [];
  leave = () => {
    controller.abort();
    for (const fn of cleanups.splice(0)) fn();
    leave = null;
  };
  document.getElementById('nav').classList.remove('open');
  document.getElementById('nav-toggle').setAttribute('aria-expanded', 'false');
  header();
  clear(main);
  delete document.body.dataset.ready;
  if (!route) {
    main.dataset.page = 'missing';
    main.append(h('h1', { text: 'No such page' }), h('p', {}, h('a', { href: '#/dashboard', text: 'Back to the dashboard' })));
    return;
  }
  const name = route[1](rest);
  main.dataset.page = name;
  const ctx = {
    parts: rest,
    query,
    signal: controller.signal,
    ready: () => {
      if (!controller.signal.aborted) document.body.dataset.ready = name;
    },
    cleanup: (fn) => cleanups.push(fn),
  };
  try {
    const mod = await import(`./pages/${route[0]}.js`);
    if (controller.signal.aborted) return;
    await mod.render(main, ctx);
  } catch (e) {
    if (controller.signal.aborted || e.name === 'AbortError' || e.status === 401) return;
    main.append(h('p', { class: 'error', role: 'alert', text: `Cannot show this page: ${e.details || e.message}` }));
  }
}

onExpire(toLogin);
onTimeZone(() => show());

document.getElementById('logout').addEventListener('click', async () => {
  await logout();
  go('login');
});
document.getElementById('utc-toggle').addEventListener('click', () => {
  prefs.utc = !prefs.utc;
});
document.getElementById('nav-toggle').addEventListener('click', (e) => {
  const nav = document.getElementById('nav');
  const open = nav.classList.toggle('open');
  e.currentTarget.setAttribute('aria-expanded', String(open));
});

window.addEventListener('hashchange', show);
show();
