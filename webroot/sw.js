// SPDX-License-Identifier: ISC
// The console's service worker: it keeps the app shell (the page, its styles, scripts and
// icons), so that a reload while the box cannot be reached shows the console and its
// "cannot reach the box" banner, not the browser's error page. The shell is fetched from
// the network first, each time, as the page would (files are revalidated by their ETag
// anyway), and the copy kept here answers only when the network does not. The API is
// never touched: its answers are live, and a session's are nobody else's.

const CACHE = 'spindle-shell-1';
// What the first page needs before any route's module: more is kept as it is used.
const SHELL = [
  '/',
  '/css/app.css',
  '/js/app.js',
  '/js/api.js',
  '/js/dom.js',
  '/js/device.js',
  '/js/problems.js',
  '/js/pages/login.js',
  '/js/pages/dashboard.js',
  '/manifest.webmanifest',
  '/icons/spindle.svg',
  '/icons/spindle-192.png',
];

self.addEventListener('install', (e) => {
  e.waitUntil(
    caches
      .open(CACHE)
      .then((c) => c.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (e) => {
  e.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

function shell(url) {
  return url.origin === self.location.origin && !url.pathname.startsWith('/api/') && url.pathname !== '/metrics';
}

// The page tells what it loaded before this worker controlled it (its styles, the route's
// module): kept too, so that the first reload offline has all of it.
self.addEventListener('message', (e) => {
  const m = e.data || {};
  if (m.type !== 'keep' || !Array.isArray(m.urls)) return;
  const urls = m.urls.filter((u) => typeof u === 'string' && shell(new URL(u, self.location.origin)));
  e.waitUntil(caches.open(CACHE).then((c) => Promise.all(urls.map((u) => c.add(u).catch(() => {})))));
});

self.addEventListener('fetch', (e) => {
  const req = e.request;
  const url = new URL(req.url);
  if (req.method !== 'GET' || !shell(url)) return; // the browser's own way
  // the page itself is kept under '/', whatever its address said after the path
  const key = req.mode === 'navigate' ? '/' : req;
  e.respondWith(
    fetch(req)
      .then((res) => {
        if (res.ok && res.type === 'basic') {
          const copy = res.clone();
          caches.open(CACHE).then((c) => c.put(key, copy));
        }
        return res;
      })
      .catch(async () => (await caches.match(key)) || Response.error()),
  );
});
