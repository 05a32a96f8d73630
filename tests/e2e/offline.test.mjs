// SPDX-License-Identifier: ISC
// The box stops answering (the network made to refuse every API request): the console says
// so once, in a banner, not "Failed to fetch" in every corner; a worksheet tries again less
// and less often; and when the box answers again the banner goes and the charts go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, shots, start, watcher } from './harness.mjs';
import { createWorksheet } from './worksheets.mjs';

// (The harness's browser trusts the box's certificate: a service worker registers only then.)
const { box, newPage } = await start();
const uuid = await createWorksheet(box, 'offline', ['io.ops'], 600);

test('the box unreachable: a banner, retries that back off, and back when it answers', async (t) => {
  const page = await newPage(t);
  watcher(page).expect('/api/', 'failed'); // the refused requests are the point
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  assert.ok(await page.locator('#offline').isHidden());

  const tries = [];
  page.on('request', (r) => {
    if (r.url().includes('/api/analytics/')) tries.push(Date.now());
  });
  await page.route('**/api/**', (route) => route.abort('connectionrefused'));
  await page.waitForSelector('#offline:not([hidden])');
  assert.match(await page.locator('#offline').textContent(), /^Cannot reach the box since \d\d:\d\d:\d\d: .*Trying again/);
  await page.waitForFunction(() => /does not answer: trying again in \d+ s/.test(document.querySelector('.ws-range').textContent));
  assert.doesNotMatch(await page.locator('main').textContent(), /Failed to fetch/);
  await page.waitForTimeout(7500);
  // once a second before; now 1, 2, 4 s apart: four tries in 7.5 s at most
  const during = tries.slice();
  assert.ok(during.length >= 2 && during.length <= 5, `${during.length} tries in 7.5 s`);
  const gaps = during.slice(1).map((x, i) => x - during[i]);
  assert.ok(gaps[gaps.length - 1] >= 1800, `the gaps grow: ${gaps}`);

  await page.unroute('**/api/**');
  await page.waitForSelector('#offline', { state: 'hidden', timeout: 20000 });
  await page.waitForFunction(() => / live$/.test(document.querySelector('.ws-range').textContent), null, { timeout: 5000 });
});

test('a reload while the box cannot be reached shows the console and its banner', async (t) => {
  const page = await newPage(t);
  watcher(page).expect('/api/', 'failed');
  await page.goto(`${box.https}/#/login?next=dashboard`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  // the service worker runs this page, and has kept the shell
  await page.waitForFunction(() => navigator.serviceWorker && navigator.serviceWorker.controller !== null, null, { timeout: 10000 });
  await page.waitForFunction(async () => (await caches.keys()).length > 0 && (await (await caches.open((await caches.keys())[0])).keys()).length >= 10);

  await page.context().setOffline(true);
  await page.reload();
  // not the browser's error page: the console, saying what is wrong
  await page.waitForSelector('#offline:not([hidden])');
  assert.match(await page.locator('#offline').textContent(), /^Cannot reach the box since/);
  assert.equal(await page.locator('main#main').getAttribute('data-page'), 'dashboard');
  assert.equal(await page.locator('#who-name').textContent(), 'admin', 'the session of the tab, still');
  await shots(page, 'offline-reload', { inPlace: true });

  // the network back: the banner goes, and the page fills
  await page.context().setOffline(false);
  await page.waitForSelector('#offline[hidden]', { state: 'attached', timeout: 30000 });
  await page.waitForSelector('body[data-ready="dashboard"]');
});
