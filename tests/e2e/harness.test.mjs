// SPDX-License-Identifier: ISC
// The harness's own tests: each catcher fires on a page made to trip it (served by a real
// spindled from a temp webroot, under its real CSP), stays quiet on a clean page, and the
// fake box is what the page tests expect of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { OUT, axe, newContext, shots, start, watch } from './harness.mjs';

const root = mkdtempSync(join(tmpdir(), 'spindle-e2e-webroot-'));
after(() => rmSync(root, { recursive: true, force: true }));
const page = (body, head = '') => `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>harness self-test</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ok.css">${head}</head>
<body><main id="main"><h1>Self-test</h1>${body}</main></body></html>
`;
const files = {
  'ok.css': 'body { font: 16px sans-serif; color: #111; background: #fff; }\n' +
    '.wide { width: 1000px; }\n',
  'ready.js': "document.body.dataset.ready = 'selftest';\n",
  'clean.html': page('<p>Nothing wrong here.</p>', '<script type="module" src="/ready.js"></script>'),
  'inline-script.html': page('<script>document.title = "ran";</script>'),
  'inline-style.html': page('<p style="color: red">styled in markup</p>'),
  'console.html': page('', '<script src="/console.js"></script>'),
  'console.js': "console.error('something broke');\n",
  'throws.html': page('', '<script src="/throws.js"></script>'),
  'throws.js': "throw new Error('uncaught in the page');\n",
  'fetch404.html': page('', '<script src="/fetch404.js"></script>'),
  'fetch404.js': "fetch('/nosuch.json').then(() => { document.body.dataset.ready = 'done'; });\n",
  'broken.html': page('', '<script src="/broken.js"></script>'),
  'broken.js': '// never arrives: the test aborts it\n',
  'inaccessible.html': page('<img src="/nosuch.png"><input type="text">'
    .replace('/nosuch.png', 'data:image/gif;base64,R0lGODlhAQABAAAAACw=')),
  'stray.html': page('<p>Total: null</p>'),
  'stray-late.html': page('<p id="late">Loading…</p>', '<script type="module" src="/stray-late.js"></script>'),
  'stray-late.js': "setTimeout(() => { document.getElementById('late').textContent = `${{}}`; }, 300);\n",
  'wide.html': page('<div class="wide">too wide for a phone</div>',
    '<script type="module" src="/ready.js"></script>'),
};
for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);

const { box, browser } = await start({ webroot: root });

// A watched page of its own, left open (the test inspects the watcher itself).
async function open(t, path, variant) {
  const context = await newContext(browser, variant);
  t.after(() => context.close());
  const p = await context.newPage();
  const w = await watch(p);
  await p.goto(box.https + path);
  await p.waitForLoadState('load');
  await p.waitForTimeout(150); // console and CSP reports arrive just after load
  return { p, w };
}

// The problem may be reported a moment after the page loaded (a CSP violation event comes
// after its console message on a busy machine): waited for, up to 10 s.
async function assertCaught(w, pattern) {
  const deadline = Date.now() + 10000;
  while (!w.problems().some((text) => pattern.test(text)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(w.problems().some((text) => pattern.test(text)),
    `expected a problem matching ${pattern}; got:\n${w.problems().join('\n') || '(none)'}`);
  assert.throws(() => w.assertClean(), pattern);
}

test('a clean page passes every check', async (t) => {
  const { p, w } = await open(t, '/clean.html');
  await p.waitForSelector('body[data-ready="selftest"]');
  await axe(p);
  w.assertClean();
});

test('an inline script is a CSP violation', async (t) => {
  const { p, w } = await open(t, '/inline-script.html');
  assert.notEqual(await p.title(), 'ran');
  await assertCaught(w, /CSP violation: script-src.* blocked inline/);
});

test('a style attribute is a CSP violation', async (t) => {
  const { w } = await open(t, '/inline-style.html');
  await assertCaught(w, /CSP violation: style-src.* blocked inline/);
});

test('console.error is caught', async (t) => {
  const { w } = await open(t, '/console.html');
  await assertCaught(w, /console error: something broke/);
});

test('an uncaught exception is caught', async (t) => {
  const { w } = await open(t, '/throws.html');
  await assertCaught(w, /page error: .*uncaught in the page/);
});

test('an answer >= 400 is caught, unless expected', async (t) => {
  const { w } = await open(t, '/fetch404.html');
  await assertCaught(w, /answer 404: GET .*\/nosuch\.json/);

  const context = await newContext(browser);
  t.after(() => context.close());
  const p = await context.newPage();
  const w2 = (await watch(p)).expect('/nosuch.json', 404);
  await p.goto(`${box.https}/fetch404.html`);
  await p.waitForSelector('body[data-ready="done"]');
  await p.waitForTimeout(150);
  w2.assertClean(); // neither the answer nor the browser's console line about it
});

test('a failed request is caught', async (t) => {
  const context = await newContext(browser);
  t.after(() => context.close());
  const p = await context.newPage();
  const w = await watch(p);
  await p.route('**/broken.js', (route) => route.abort('connectionrefused'));
  await p.goto(`${box.https}/broken.html`);
  await p.waitForTimeout(150);
  await assertCaught(w, /request failed: GET .*\/broken\.js: net::ERR_CONNECTION_REFUSED/);
});

test('a page saying null, or an object as text, is caught, also once it changes later', async (t) => {
  const { w } = await open(t, '/stray.html');
  await assertCaught(w, /stray text: .*stray\.html: the page says "null": .*Total: null/);
  const late = await open(t, '/stray-late.html');
  await assertCaught(late.w, /stray text: .*the page says "\[object Object\]"/);
});

test('axe finds serious violations, and loading it breaks no CSP', async (t) => {
  const { p, w } = await open(t, '/inaccessible.html');
  await assert.rejects(axe(p), (e) => /image-alt \(critical\)/.test(e.message) &&
    /label \(critical\)/.test(e.message));
  w.assertClean();
});

test('shots write four screenshots and catch sideways scrolling on a phone', async () => {
  const context = await newContext(browser);
  const p = await context.newPage();
  await p.goto(`${box.https}/clean.html`);
  await p.waitForSelector('body[data-ready="selftest"]');
  const before = Date.now();
  await shots(p, 'selftest');
  for (const v of ['desktop-light', 'desktop-dark', 'phone-light', 'phone-dark']) {
    const file = join(OUT, `selftest-${v}.png`);
    assert.ok(existsSync(file) && statSync(file).mtimeMs >= before - 1000, file);
  }
  const png = readFileSync(join(OUT, 'selftest-phone-light.png'));
  assert.equal(png.readUInt32BE(16), 390); // 390 CSS px at the tests' pixel ratio, 1
  await p.goto(`${box.https}/wide.html`);
  await p.waitForSelector('body[data-ready="selftest"]');
  await assert.rejects(shots(p, 'selftest-wide', { axe: false }), /phone-light: .*horizontal scrolling at 390 px/);
  await context.close();
});

// ---- the fake box ------------------------------------------------------------------

async function api(path, { token, method = 'GET', body } = {}) {
  const headers = token ? { 'X-Auth-Session': token } : {};
  if (body) headers['Content-Type'] = 'application/json';
  const r = await fetch(box.http + path, {
    method, headers, body: body && JSON.stringify(body) });
  return { status: r.status, headers: r.headers, body: await r.json().catch(() => null) };
}

async function adminToken() {
  const r = await api('/api/access/v1', {
    method: 'POST', body: { user: 'admin', password: box.admin_password } });
  assert.equal(r.status, 201);
  return r.headers.get('x-auth-session');
}

test('the box: disks in an SES enclosure whose locate files the API writes', async () => {
  const token = await adminToken();
  const enc = `/api/hardware/v1/chassis/${box.enclosure}`;
  const { body } = await api(`${enc}/disk`, { token });
  const present = body.disks.filter((d) => d.present);
  assert.deepEqual(present.map((d) => d.device).sort(), Object.values(box.disks).sort());
  assert.ok(present.every((d) => d.led_backend === 'ses'));
  assert.deepEqual(present.filter((d) => d.faulted).map((d) => d.device), ['sdh']);
  const [id] = Object.keys(box.locate_files);
  assert.equal(readFileSync(box.locate_files[id], 'utf8').trim(), '0');
  const r = await api(`${enc}/disk/${id}`, { token, method: 'PUT', body: { locate: true } });
  assert.equal(r.status, 202);
  assert.equal(readFileSync(box.locate_files[id], 'utf8').trim(), '1');
  await api(`${enc}/disk/${id}`, { token, method: 'PUT', body: { locate: false } });
  assert.equal(readFileSync(box.locate_files[id], 'utf8').trim(), '0');
});

test('the box: the dashboard figures move', async () => {
  const token = await adminToken();
  const iops = async () => {
    const { body } = await api('/api/status/v1/dashboard', { token });
    assert.equal(body.dashboard.disks.length, 8);
    return body.dashboard.disks[0].r_ops_s;
  };
  const seen = new Set();
  for (let i = 0; i < 8 && seen.size < 3; i++) {
    seen.add(await iops());
    await new Promise((r) => setTimeout(r, 1100));
  }
  assert.ok(seen.size >= 3, `read IOPS stayed at ${[...seen]}`);
});
