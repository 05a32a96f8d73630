// SPDX-License-Identifier: ISC
// The dashboard: every tile shows a figure, the figures move with the fake box's counters
// (box.py swings its rates +-50% over 20 s), and what a cold load costs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copySession, figure, login, newContext, shots, start, watch } from './harness.mjs';

const { box, browser, newPage } = await start();
const TILES = ['iops', 'throughput', 'latency', 'cpu', 'memory', 'capacity', 'arc', 'nic',
  'jobs', 'leds', 'problems'];

const tileValue = (page, tile) => page.locator(`[data-tile="${tile}"] .tile-value`).first();

test('every tile shows a figure, and the figures move', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  const missing = () => page.evaluate((tiles) => tiles.filter((tile) => !/\d/.test(
    document.querySelector(`[data-tile="${tile}"] .tile-value`)?.textContent || '')), TILES);
  await page.waitForFunction(
    (tiles) => tiles.every((tile) => /\d/.test(
      document.querySelector(`[data-tile="${tile}"] .tile-value`)?.textContent || '')),
    TILES, { timeout: 5000 }).catch(() => {});
  assert.deepEqual(await missing(), [], 'tiles without a figure');
  for (const tile of ['iops', 'throughput']) {
    const first = (await tileValue(page, tile).textContent()).trim();
    let now = first;
    for (let i = 0; i < 20 && now === first; i++) {
      await page.waitForTimeout(500);
      now = (await tileValue(page, tile).textContent()).trim();
    }
    assert.notEqual(now, first, `the ${tile} tile stayed at "${first}" for 10 s`);
  }
});

test('a cold load of the dashboard: bytes and time to the first live number', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');

  // A fresh context: empty cache, the session copied from the first tab.
  const context = await newContext(browser);
  t.after(() => context.close());
  const cold = await context.newPage();
  const w = await watch(cold);
  await copySession(page, cold);
  // The moment (ms since navigation start) the IOPS tile first holds a number.
  await cold.addInitScript(() => {
    const check = () => {
      const v = document.querySelector('[data-tile="iops"] .tile-value');
      if (v && /\d/.test(v.textContent) && window.__e2eFirstLive === undefined) {
        window.__e2eFirstLive = performance.now();
        observer.disconnect();
      }
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { subtree: true, childList: true, characterData: true });
  });
  const cdp = await context.newCDPSession(cold);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false });
  const finished = new Map(); // requestId -> bytes on the wire, headers included
  const partial = new Map(); // requestId -> bytes so far of what has not finished (streams)
  cdp.on('Network.dataReceived', (e) =>
    partial.set(e.requestId, (partial.get(e.requestId) || 0) + e.encodedDataLength));
  cdp.on('Network.loadingFinished', (e) => finished.set(e.requestId, e.encodedDataLength));

  await cold.goto(`${box.https}/#/dashboard`);
  await cold.waitForSelector('body[data-ready="dashboard"]');
  await cold.waitForFunction(() => window.__e2eFirstLive !== undefined, null, { timeout: 10000 });
  const firstLive = await cold.evaluate(() => window.__e2eFirstLive);
  let bytes = 0;
  for (const [id, n] of partial) if (!finished.has(id)) bytes += n;
  for (const n of finished.values()) bytes += n;
  const requests = new Set([...finished.keys(), ...partial.keys()]).size;
  await cdp.detach();
  w.assertClean();

  figure('dashboard cold load, bytes transferred', `${(bytes / 1024).toFixed(1)} KiB in ${requests} requests`, '');
  figure('dashboard cold load, navigation to the first live number', Math.round(firstLive), 'ms');
  assert.ok(bytes > 0 && firstLive > 0);
});

test('the dashboard: accessible, and its screenshots', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  await shots(page, 'dashboard');
});
