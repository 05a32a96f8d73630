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
//   stash(fn)   fn() returns the page's unsaved state (JSON) to keep when the session
//               expires; after the next login the same route gets it back as ctx.draft
//   draft       that state, or null
//   guard(fn)   fn() returns a question ("unsaved changes: leave?") while leaving would lose
//               work, else null: a link, Back or a reload asks it first
// render may be async; its errors are shown in the page.

import { can, loggedIn, logout, onExpire, onLeave, onReachable, resume, session } from './api.js';
import { clear, h, onTimeZone, prefs, time } from './dom.js';

// first segment -> [module, page name for a given route]
const routes = {
  login: ['login', () => 'login'],
  dashboard: ['dashboard', () => 'dashboard'],
  worksheets: ['worksheets', (p) => (p.length ? 'worksheet' : 'worksheets')],
  bench: [
    'bench',
    (p) => ({ new: 'bench-new', jobs: p.length > 1 ? 'job' : 'bench', compare: 'compare', sweeps: p[1] === 'new' ? 'sweep-new' : p.length > 1 ? 'sweep' : 'sweeps' })[p[0]] || 'bench',
  ],
  hardware: ['hardware', () => 'hardware'],
  problems: ['problems', () => 'problems'],
  admin: ['admin', () => 'admin'],
};

const main = document.getElementById('main');
let leave = null; // ends the current page
let guard = null; // the current page's guard (ctx.guard), if it set one
let shownHash = location.hash; // the route on screen (put back when a guard says stay)
let stash = null; // the current page's ctx.stash
const DRAFT = 'spindle.draft'; // sessionStorage: {route, state} kept across a login

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

function toLogin(expired = false) {
  guard = null; // the session ended: nothing can be saved now, but it can be kept
  const here = parseRoute().raw;
  const next = here && !here.startsWith('login') ? here : '';
  if (next && stash) {
    try {
      const state = stash();
      if (state) sessionStorage.setItem(DRAFT, JSON.stringify({ route: next, state }));
    } catch {
      /* a page that cannot say its state loses it, as before */
    }
  }
  stash = null;
  const q = new URLSearchParams();
  if (next) q.set('next', next);
  if (expired) q.set('expired', '1');
  const qs = q.toString();
  go(qs ? `login?${qs}` : 'login');
}

// The state a page kept for this route when the session expired (once).
function takeDraft(route) {
  try {
    const d = JSON.parse(sessionStorage.getItem(DRAFT) || 'null');
    if (!d || d.route !== route) return null;
    sessionStorage.removeItem(DRAFT);
    return d.state;
  } catch {
    sessionStorage.removeItem(DRAFT);
    return null;
  }
}

// What the signed-in user may do, in a word: on a shared phone admin and monitor must not
// look the same.
function roleOf() {
  const all = session.authorizations || [];
  if (can('user:modify')) return { id: 'admin', label: 'admin', title: 'Administrator: may change users, roles and settings' };
  const writes = all.filter((a) => /:(modify|run)$/.test(a));
  if (!writes.length)
    return { id: 'read-only', label: 'read-only', title: can('hardware:locate') ? 'May look at everything and light locator LEDs, nothing else' : 'May look, not change' };
  return { id: 'operator', label: 'operator', title: `May also: ${writes.join(', ')}` };
}

function header() {
  const top = document.getElementById('top');
  const inside = loggedIn();
  top.hidden = !inside;
  if (!inside) return;
  document.getElementById('who-name').textContent = session.user || '';
  const role = roleOf();
  const roleEl = document.getElementById('who-role');
  roleEl.textContent = role.label;
  roleEl.title = role.title;
  roleEl.dataset.role = role.id;
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
    guard = null;
    stash = null;
  };
  document.getElementById('nav').classList.remove('open');
  document.getElementById('top').classList.remove('menu-open');
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
    guard: (fn) => {
      guard = fn;
    },
    stash: (fn) => {
      stash = fn;
    },
    draft: loggedIn() ? takeDraft(parseRoute().raw) : null,
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

onExpire(() => toLogin(true));
// logged out in another tab: here too
onLeave(() => {
  guard = null;
  go('login');
});

// The box not answering: said once, at the top, until it answers again (the pages try
// again less and less often meanwhile), rather than "Failed to fetch" in every corner.
onReachable((on, since) => {
  const el = document.getElementById('offline');
  el.hidden = on;
  el.textContent = on ? '' : `Cannot reach the box since ${time(since, { date: false })}: what the page shows is from before. Trying again…`;
});
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
  document.getElementById('top').classList.toggle('menu-open', open);
  e.currentTarget.setAttribute('aria-expanded', String(open));
});

// Whatever scrolls into view (a field that refused, a disk's details) clears the sticky
// header, whose height depends on the screen.
const topBar = document.getElementById('top');
new ResizeObserver(() => {
  document.documentElement.style.scrollPaddingTop = topBar.hidden ? '' : `${topBar.offsetHeight + 8}px`;
}).observe(topBar);

// Leaving a page with work it would lose asks first; "stay" puts its route back in the
// address bar without showing the page again.
window.addEventListener('hashchange', () => {
  const question = guard && guard();
  // eslint-disable-next-line no-alert
  if (question && !window.confirm(question)) {
    history.replaceState(history.state, '', shownHash || '#/');
    return;
  }
  shownHash = location.hash;
  show();
});
window.addEventListener('beforeunload', (e) => {
  if (guard && guard()) {
    e.preventDefault();
    e.returnValue = ''; // what older browsers look at
  }
});
// A page may rewrite its own route (its window, its filters) without being shown anew.
export function setRoute(route) {
  const target = `#/${route.replace(/^#?\/?/, '')}`;
  if (target === location.hash) return;
  history.replaceState(history.state, '', target);
  shownHash = target;
}
// The session of this tab, an open tab's, or the kept device's, then the page.
resume().finally(show);

// The app shell kept for a reload while the box cannot be reached (sw.js); with what this
// page loaded before the worker ran. A browser registers one only over HTTPS it trusts.
if ('serviceWorker' in navigator && window.isSecureContext)
  navigator.serviceWorker
    .register('/sw.js')
    .then(() => navigator.serviceWorker.ready)
    .then((reg) => {
      const urls = performance.getEntriesByType('resource').map((e) => e.name);
      if (reg.active) reg.active.postMessage({ type: 'keep', urls: [location.pathname, ...urls] });
    })
    .catch(() => {
      /* no worker (an untrusted certificate, a private window): reloads need the network */
    });
