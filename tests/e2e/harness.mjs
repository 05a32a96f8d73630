// SPDX-License-Identifier: ISC
// Helpers of the browser tests (node --test, playwright-core driving Debian's chromium).
//
// A test file:
//
//   import { test } from 'node:test';
//   import assert from 'node:assert/strict';
//   import { start, login, axe, shots, figure, watcher } from './harness.mjs';
//
//   const { box, newPage } = await start();   // one fake box and one browser per file
//
//   test('the hardware page', async (t) => {
//     const page = await newPage(t);              // or newPage(t, { phone: true, dark: true })
//     await login(page, box.https, 'admin', box.admin_password);
//     await page.goto(`${box.https}/#/hardware`);
//     await page.waitForSelector('body[data-ready="hardware"]');
//     ...
//     await shots(page, 'hardware');              // 4 screenshots, each checked by axe
//   });
//
// The API (everything else in this file is private):
//
//   start(opts)        startBox(opts) + launch(opts.browserArgs); registers after() hooks
//                      that close both. Returns { box, browser, newPage(t, variant) }.
//   startBox(opts)     box.py: a real spindled over HTTPS and HTTP on fake /proc and /sys.
//                      opts: { webroot (default E2E_WEBROOT, else the repository's
//                      webroot/), args: [more spindled flags], shelves: N more SES
//                      shelves of 24 disks (box.py --shelves) }. Resolves to box.py's
//                      JSON ({ https, http, admin_password, sys_root, state_dir, bench_dir,
//                      log, disks, locate_files, system_led, ... }) plus stop(), which
//                      rejects if spindled did not exit cleanly.
//   launch(args)       chromium (CHROMIUM, default /usr/bin/chromium), headless, trusting
//                      the box's certificate, with more command-line flags args.
//   adminClient(box)   An API client of the administrator's (disposed after the file).
//   expectStatus(resp, status)  Asserts an API answer's status; resolves to its JSON.
//   newContext(browser, { phone, dark, scale, tz })
//                      A context: 1280x800, or 390x844 with touch for phone (pixel ratio
//                      scale, 1 by default); light or
//                      dark colour scheme; self-signed certificates accepted; the browser's
//                      time zone tz (an IANA name), else the machine's.
//   newPage(t, browser, variant)
//                      A page in its own new context, watched: when test t ends, the
//                      watcher's assertClean() runs (failing t) and the context closes.
//   watch(page)        Starts collecting console errors, page errors, failed requests,
//                      answers >= 400, CSP violations, and stray text (null, undefined,
//                      NaN or [object Object] in a page's text after any change of its
//                      DOM). Returns a watcher:
//                        .expect(urlPart, status)  answers of that status to URLs holding
//                                                  urlPart are expected, not errors (and
//                                                  so is the browser's console line on them);
//                                                  status 'failed': requests that never got
//                                                  an answer (a network made to fail)
//                        .problems()               what was collected so far
//                        .assertClean()            throws listing every problem
//   watcher(page)      The watcher of a page made by newPage().
//   axe(page, opts)    Runs axe-core on the page; throws on violations of impact serious
//                      or critical (id, impact, help, targets). opts: { disable: [rule ids] }.
//   shots(page, name, opts)
//                      Screenshots out/NAME-{desktop,phone}-{light,dark}.png (NAME
//                      unique across files: they run at once). Each variant
//                      is the page's URL reopened in a fresh context of that size and
//                      scheme (the session copied from sessionStorage, waiting for the
//                      same body[data-ready]; the four at once), checked by the watcher,
//                      by axe (but phone-dark, whose DOM, layout and colours the others
//                      have), and at 390x844 for horizontal scrolling. opts: { axe: false, inPlace: true
//                      (resize this page instead: keeps transient state, no touch),
//                      expect: [[urlPart, status], ...] }.
//   checkNoStrayText(page)
//                      Throws if the page's text says null, undefined, NaN or [object
//                      Object] (shots() runs it on every picture).
//   login(page, base, user, password)
//                      Logs in through the login form (base: open base/#/login first;
//                      null: the form already shown) and waits for the next page's
//                      body[data-ready]; throws what #login-error says if it says anything.
//   copySession(fromPage, toPage)
//                      Copies fromPage's sessionStorage into toPage (an init script, so
//                      before toPage's next navigation): toPage is logged in too, with no
//                      login of its own (e.g. a cold load in a fresh context).
//   until(what, fn, timeout)
//                      Resolves once fn() (may be async) is truthy, polling every 50 ms;
//                      throws "timed out waiting for WHAT" after timeout ms (5000).
//   figure(name, value, unit)
//                      Prints "FIGURE name: value unit" and appends it to out/figures.txt.
//
// The shell's contract the helpers rely on: <main id="main" data-page=NAME>,
// body[data-ready=NAME] once a page shows its first data, the login form's #login-user,
// #login-password and "Log in" button, errors in #login-error, the session token in
// sessionStorage "spindle.session".
//
// Environment: SPINDLED (the daemon, as in the API suite), E2E_WEBROOT (the tree served
// instead of webroot/), CHROMIUM (the browser binary),
// E2E_HEADED=1 (show the browser), SPINDLE_E2E_KEEP=1 (box.py keeps its temp dir).

import { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, request } from 'playwright-core';

const HERE = dirname(fileURLToPath(import.meta.url));
export const OUT = join(HERE, 'out');
const require = createRequire(import.meta.url);

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };
const BOX_START_MS = 30000;

// ---- the box ----------------------------------------------------------------------

export function startBox({ webroot = process.env.E2E_WEBROOT, args = [], shelves = 0, smart = '' } = {}) {
  const argv = [join(HERE, 'box.py')];
  if (webroot) argv.push('--webroot', webroot);
  if (shelves) argv.push('--shelves', String(shelves));
  if (smart) argv.push('--smart', smart); // disk health on: DEV=FIXTURE,... (box.py)
  if (args.length) argv.push('--', ...args);
  const child = spawn('/usr/bin/python3', argv, { stdio: ['pipe', 'pipe', 'inherit'] });
  // If this process dies, the pipe closes and box.py stops spindled by itself.
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`box.py: no answer in ${BOX_START_MS} ms`));
    }, BOX_START_MS);
    const exited = new Promise((res) => child.once('exit', (code, signal) => res(code ?? signal)));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`box.py exited with ${code} before it was ready`));
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      const box = JSON.parse(out.slice(0, nl));
      box.stop = async () => {
        child.stdin.end();
        const code = await exited;
        if (code !== 0) {
          let tail = '';
          try {
            tail = readFileSync(box.log, 'utf8').split('\n').slice(-30).join('\n');
          } catch { /* removed with the temp dir */ }
          throw new Error(`box.py (spindled) exited with ${code}\n${tail}`);
        }
      };
      resolve(box);
    });
  });
}

// ---- the browser -------------------------------------------------------------------

// The browser trusts the box's certificate, as an administrator's does once it is imported
// or the box has one from the site's CA: ignoreHTTPSErrors alone lets pages load but not
// the console's service worker register (and says so as a console error on every page).
export function launch(extra = []) {
  const args = ['--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--ignore-certificate-errors', ...extra];
  if (process.getuid && process.getuid() === 0) args.unshift('--no-sandbox');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: !process.env.E2E_HEADED,
    args,
  });
}

// Long enough for a loaded 2-core machine, short enough that a page that never becomes
// ready fails its test soon.
const WAIT_MS = 15000;

// scale: the device pixel ratio; 1 for the tests (the layout is the same at any ratio, and
// the pictures cost a quarter of the pixels), 2 for the README's phone picture.
export async function newContext(browser, { phone = false, dark = false, scale = 1, tz } = {}) {
  const context = await browser.newContext({
    ...(tz ? { timezoneId: tz } : {}),
    ignoreHTTPSErrors: true,
    viewport: phone ? PHONE : DESKTOP,
    isMobile: phone,
    hasTouch: phone,
    deviceScaleFactor: scale,
    colorScheme: dark ? 'dark' : 'light',
    serviceWorkers: 'allow',
  });
  context.setDefaultTimeout(WAIT_MS);
  return context;
}

const watchers = new WeakMap();

export function watcher(page) {
  const w = watchers.get(page);
  if (!w) throw new Error('this page is not watched: make it with newPage() or watch()');
  return w;
}

export async function newPage(t, browser, variant = {}) {
  const context = await newContext(browser, variant);
  const page = await context.newPage();
  const w = await watch(page);
  t.after(async () => {
    try {
      w.assertClean();
    } finally {
      await context.close();
    }
  });
  return page;
}

export async function start(opts = {}) {
  const box = await startBox(opts);
  let browser;
  try {
    browser = await launch(opts.browserArgs);
  } catch (e) {
    await box.stop().catch(() => {});
    throw e;
  }
  after(async () => {
    await browser.close();
    await box.stop();
  });
  return { box, browser, newPage: (t, variant) => newPage(t, browser, variant) };
}

// The administrator's own API client, apart from any page (the password with every
// request, as appliance clients send it), disposed after the file.
export async function adminClient(box) {
  const admin = await request.newContext({
    baseURL: box.https,
    ignoreHTTPSErrors: true,
    extraHTTPHeaders: { 'X-Auth-User': 'admin', 'X-Auth-Key': box.admin_password },
  });
  after(() => admin.dispose());
  return admin;
}

// Asserts an API answer's status; resolves to its JSON (null for 204).
export async function expectStatus(resp, status) {
  assert.equal(resp.status(), status, `${resp.url()}: ${await resp.text()}`);
  return resp.status() === 204 ? null : resp.json();
}

// ---- the watcher -------------------------------------------------------------------

// Recorded by an init script in every document; reported through a binding, so that
// violations survive navigations and need no script the CSP could refuse.
const CSP_HOOK = () => {
  const report = (e) => {
    try {
      window.__e2eCsp(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ` +
        `${e.sourceFile || document.URL}:${e.lineNumber}`);
    } catch { /* the binding is not there yet: the console line still tells */ }
  };
  document.addEventListener('securitypolicyviolation', report, true);
};

// The words a page must never show (a null or an object rendered as text): looked for in
// every document after each burst of changes to its DOM, so that a state no screenshot
// catches (a running sweep's table, a read-only worksheet) is caught too.
const STRAY = /\b(null|undefined|NaN)\b|\[object Object\]/;
const STRAY_HOOK = (source) => {
  const pattern = new RegExp(source);
  let due = false;
  const look = () => {
    due = false;
    const text = document.body ? document.body.innerText : '';
    const m = pattern.exec(text);
    if (!m) return;
    const at = Math.max(0, m.index - 60);
    try {
      window.__e2eStray(`${location.href}: the page says "${m[0]}": ` +
        `…${text.slice(at, m.index + 60).replace(/\s+/g, ' ')}…`);
    } catch { /* the binding is not there yet */ }
  };
  new MutationObserver(() => {
    if (!due) { due = true; setTimeout(look, 100); }
  }).observe(document, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ['hidden', 'class', 'style', 'open'], // text shown
  });
};

export async function watch(page) {
  const problems = [];
  const allowed = [];
  let closed = false;
  const isAllowed = (url, status) =>
    allowed.some(([part, s]) => s === status && url.includes(part));
  const add = (text) => { if (!closed) problems.push(text); };

  await page.exposeBinding('__e2eCsp', (_source, text) => add(`CSP violation: ${text}`));
  await page.addInitScript(CSP_HOOK);
  const strays = new Set();
  await page.exposeBinding('__e2eStray', (_source, text) => {
    if (!strays.has(text)) { strays.add(text); add(`stray text: ${text}`); }
  });
  await page.addInitScript(STRAY_HOOK, STRAY.source);

  page.on('console', (msg) => {
    if (msg.type() !== 'error' && !/Content.Security.Policy/i.test(msg.text())) return;
    const url = msg.location()?.url || '';
    const m = /status of (\d{3})/.exec(msg.text());
    if (m && isAllowed(url, Number(m[1]))) return;
    if (/net::ERR_/.test(msg.text()) && isAllowed(url, 'failed')) return;
    add(`console ${msg.type()}: ${msg.text()}${url ? ` (${url})` : ''}`);
  });
  page.on('pageerror', (err) => add(`page error: ${err.stack || err.message || err}`));
  page.on('crash', () => add('the page crashed'));
  page.on('requestfailed', (req) => {
    const why = req.failure()?.errorText || 'failed';
    // The page's own AbortController (a stream closed on leaving a page) or a navigation
    // cancelling what the old page had in flight: not a failure of the server.
    if (why === 'net::ERR_ABORTED') return;
    if (isAllowed(req.url(), 'failed')) return;
    add(`request failed: ${req.method()} ${req.url()}: ${why}`);
  });
  page.on('response', (resp) => {
    const status = resp.status();
    if (status < 400 || isAllowed(resp.url(), status)) return;
    add(`answer ${status}: ${resp.request().method()} ${resp.url()}`);
  });

  const w = {
    expect(urlPart, status) { allowed.push([urlPart, status]); return w; },
    problems: () => problems.slice(),
    assertClean() {
      closed = true;
      if (problems.length)
        throw new Error(`${problems.length} browser problem(s):\n  ` + problems.join('\n  '));
    },
  };
  watchers.set(page, w);
  return w;
}

// ---- axe ---------------------------------------------------------------------------

let axeSource;

export async function axe(page, { disable = [] } = {}) {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    // DevTools' Runtime.evaluate is not subject to the page's CSP (a <script> tag
    // would be refused under script-src 'self', and should be).
    const cdp = await page.context().newCDPSession(page);
    try {
      const r = await cdp.send('Runtime.evaluate', { expression: axeSource });
      if (r.exceptionDetails) throw new Error(`axe-core: ${r.exceptionDetails.text}`);
    } finally {
      await cdp.detach();
    }
  }
  const violations = await page.evaluate(async (disabled) => {
    const rules = Object.fromEntries(disabled.map((id) => [id, { enabled: false }]));
    const r = await window.axe.run(document, { resultTypes: ['violations'], rules });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
      more: Math.max(0, v.nodes.length - 5),
    }));
  }, disable);
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) {
    throw new Error(`axe: ${bad.length} serious or critical violation(s) on ${page.url()}:\n` +
      bad.map((v) => `  ${v.id} (${v.impact}): ${v.help}\n    ` + v.targets.join('\n    ') +
        (v.more ? `\n    and ${v.more} more` : '')).join('\n'));
  }
  return violations;
}

// ---- sessions ----------------------------------------------------------------------

// The tab's sessionStorage (where the shell keeps its session), copied into another page
// before its documents' scripts run: that page is logged in as the same session.
export async function copySession(from, to) {
  const items = await from.evaluate(() => Object.fromEntries(
    Object.keys(sessionStorage).map((k) => [k, sessionStorage.getItem(k)])));
  await to.addInitScript((saved) => {
    for (const [k, v] of Object.entries(saved))
      if (sessionStorage.getItem(k) === null) sessionStorage.setItem(k, v);
  }, items);
}

// ---- screenshots -------------------------------------------------------------------

// [file suffix, context variant, run axe]: axe's rules read the DOM, the layout (target
// sizes) and the colours; phone-dark adds no DOM, layout or colours the others lack.
const VARIANTS = [
  ['desktop-light', { phone: false, dark: false }, true],
  ['desktop-dark', { phone: false, dark: true }, true],
  ['phone-light', { phone: true, dark: false }, true],
  ['phone-dark', { phone: true, dark: true }, false],
];

async function readyName(page) {
  return page.evaluate(() => document.body && document.body.dataset.ready);
}

async function settle(page, ready) {
  if (ready) await page.waitForSelector(`body[data-ready="${ready}"]`);
  else await page.waitForLoadState('load');
  await page.evaluate(() => document.fonts && document.fonts.ready);
}

async function checkNoSideScroll(page, file) {
  // clientWidth: the layout viewport (a phone zooms out to show wide content, which
  // widens innerWidth to match it). Right after a resize (shots in place) the charts, sized
  // to their boxes by ResizeObservers, still have the old width for a frame or more:
  // only content still too wide a second later is a fault.
  const measure = () => page.evaluate(() => ({
    sw: document.documentElement.scrollWidth, iw: document.documentElement.clientWidth }));
  let { sw, iw } = await measure();
  for (let i = 0; i < 20 && sw > iw; i++) {
    await page.waitForTimeout(50);
    ({ sw, iw } = await measure());
  }
  if (sw > iw)
    throw new Error(`${file}: horizontal scrolling at ${iw} px wide (content ${sw} px)`);
}

// No placeholder a bug leaves in the page's text: "null" or "undefined" (a null child given
// to the DOM's own append()), "NaN", "[object Object]".
export async function checkNoStrayText(page, where = page.url()) {
  const text = await page.evaluate(() => document.body.innerText);
  const m = STRAY.exec(text);
  if (m) {
    const at = Math.max(0, m.index - 60);
    throw new Error(`${where}: the page says "${m[0]}": …${text.slice(at, m.index + 60).replace(/\s+/g, ' ')}…`);
  }
}

export async function shots(page, name, { axe: runAxe = true, inPlace = false, expect = [] } = {}) {
  mkdirSync(OUT, { recursive: true });
  const url = page.url();
  const ready = await readyName(page);
  const failures = [];
  if (inPlace) {
    const size = page.viewportSize();
    for (const [variant, { phone, dark }, axeIt] of VARIANTS) {
      const file = join(OUT, `${name}-${variant}.png`);
      await page.setViewportSize(phone ? PHONE : DESKTOP);
      await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
      try {
        if (phone) await checkNoSideScroll(page, file);
        await checkNoStrayText(page, file);
        if (runAxe && axeIt) await axe(page);
      } catch (e) {
        failures.push(`${variant}: ${e.message}`);
      }
      await page.screenshot({ path: file, fullPage: true, animations: 'disabled' });
    }
    await page.setViewportSize(size);
    await page.emulateMedia({ colorScheme: null });
  } else {
    // The four at once: most of each is waiting (a renderer starting, the page loading).
    const browser = page.context().browser();
    await Promise.all(VARIANTS.map(async ([variant, opts, axeIt]) => {
      const file = join(OUT, `${name}-${variant}.png`);
      const context = await newContext(browser, opts);
      try {
        const p = await context.newPage();
        const w = await watch(p);
        for (const [part, status] of expect) w.expect(part, status);
        await copySession(page, p);
        await p.goto(url);
        await settle(p, ready);
        try {
          if (opts.phone) await checkNoSideScroll(p, file);
          await checkNoStrayText(p, file);
          if (runAxe && axeIt) await axe(p);
        } catch (e) {
          failures.push(`${variant}: ${e.message}`);
        }
        await p.screenshot({ path: file, fullPage: true, animations: 'disabled' });
        w.assertClean();
      } catch (e) {
        failures.push(`${variant}: ${e.message}`);
      } finally {
        await context.close();
      }
    }));
  }
  if (failures.length) throw new Error(`shots of ${name}:\n` + failures.join('\n'));
}

// ---- flows and figures -------------------------------------------------------------

export async function until(what, fn, timeout = 5000) {
  const end = Date.now() + timeout;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function login(page, base, user, password) {
  if (base) await page.goto(`${base}/#/login`);
  await page.waitForSelector('body[data-ready="login"]');
  await page.fill('#login-user', user);
  await page.fill('#login-password', password);
  await page.getByRole('button', { name: 'Log in' }).click();
  // The next page, or the login page's error (said at once, rather than a timeout)
  const handle = await page.waitForFunction(() => {
    const error = document.getElementById('login-error');
    if (error && error.textContent.trim()) return error.textContent.trim();
    const ready = document.body.dataset.ready;
    return ready && ready !== 'login' ? true : null;
  });
  const outcome = await handle.jsonValue();
  if (outcome !== true) throw new Error(`login as ${user}: "${outcome}"`);
}

export function figure(name, value, unit = '') {
  const line = `FIGURE ${name}: ${value}${unit ? ` ${unit}` : ''}`;
  console.log(line);
  mkdirSync(OUT, { recursive: true });
  appendFileSync(join(OUT, 'figures.txt'), line + '\n');
}
