// SPDX-License-Identifier: ISC
// No lost work on a worksheet: leaving with unsaved changes asks first; the time window is
// in the address, so a reload (or a bookmark) opens the same minute; a session that expires
// under an unsaved worksheet sends to the login page, which says why, and the worksheet
// comes back after logging in with what had not been saved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, shots, start, until, watcher } from './harness.mjs';
import { createWorksheet } from './worksheets.mjs';

const { box, newPage } = await start();
const uuid = await createWorksheet(box, 'window', ['io.ops'], 600);

async function addChart(page, statistic) {
  if (await page.locator('#ws-add').isHidden()) await page.getByRole('button', { name: 'Add chart' }).click();
  await page.selectOption('#ws-add-stat', statistic);
  await page.selectOption('#ws-add-drill', { index: 0 });
  await page.locator('#ws-add').getByRole('button', { name: 'Add', exact: true }).click();
  await page.waitForSelector(`section.ws-chart[data-dataset="${statistic}"]`);
}

const charts = (page) => page.locator('section.ws-chart').evaluateAll((els) => els.map((e) => e.dataset.dataset));

test('leaving a worksheet with unsaved changes asks, and staying keeps them', async (t) => {
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent('worksheets/new')}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  await addChart(page, 'cpu.utilization');
  await page.waitForSelector('.ws-dirty:not([hidden])');
  let asked = null;

  // Back (to the login's address) asks, and staying keeps the page where it was.
  page.once('dialog', (d) => {
    asked = d.message();
    d.dismiss();
  });
  await page.evaluate(() => history.back());
  await until('the question on Back', () => asked !== null);
  assert.match(asked, /unsaved changes/);
  await page.waitForFunction(() => location.hash.startsWith('#/worksheets/new'));
  assert.deepEqual(await charts(page), ['cpu.utilization']);

  // Stay: the question is asked, the page and its chart are still there, the address too.
  asked = null;
  page.once('dialog', (d) => {
    asked = d.message();
    d.dismiss();
  });
  await page.getByRole('link', { name: 'Dashboard', exact: true }).click();
  await page.waitForFunction(() => location.hash.startsWith('#/worksheets/new'));
  assert.match(asked || '', /unsaved changes/);
  assert.deepEqual(await charts(page), ['cpu.utilization']);
  assert.equal(await page.locator('main').getAttribute('data-page'), 'worksheet');

  // A reload or closing the tab: the browser's own question (beforeunload); staying keeps it.
  let unload = null;
  page.once('dialog', (d) => {
    unload = d.type();
    d.dismiss();
  });
  await page.close({ runBeforeUnload: true });
  await until('the question on closing', () => unload !== null);
  assert.equal(unload, 'beforeunload');
  assert.deepEqual(await charts(page), ['cpu.utilization'], 'stayed, the chart with it');

  // Leave: the dashboard.
  page.once('dialog', (d) => d.accept());
  await page.getByRole('link', { name: 'Dashboard', exact: true }).click();
  await page.waitForSelector('body[data-ready="dashboard"]');

  // A saved worksheet with nothing changed leaves without a question.
  await page.goto(`${box.https}/#/worksheets/${uuid}`);
  await page.waitForSelector('body[data-ready="worksheet"]');
  page.once('dialog', (d) => {
    asked = `unexpected: ${d.message()}`;
    d.dismiss();
  });
  asked = null;
  await page.getByRole('link', { name: 'Hardware', exact: true }).click();
  await page.waitForSelector('body[data-ready="hardware"]');
  assert.equal(asked, null);
});

test('a paused window is in the address: a reload opens the same minutes', async (t) => {
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  await page.getByRole('button', { name: '1 min' }).click();
  await page.getByRole('button', { name: 'Back' }).click();
  await page.waitForFunction(() => /[?&]end=\d+/.test(location.hash));
  const url = page.url();
  const m = /[?&]seconds=(\d+)&end=(\d+)/.exec(url);
  assert.ok(m, url);
  assert.equal(m[1], '60');
  // the address changes at once, the range line once the paused window is drawn
  await page.waitForFunction(() => !/ · live$/.test(document.querySelector('.ws-range').textContent));
  const range = await page.locator('.ws-range').textContent();

  await page.reload();
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.equal(page.url(), url);
  assert.match(await page.getByRole('button', { name: /Paused/ }).textContent(), /Paused/);
  await page.waitForFunction((r) => document.querySelector('.ws-range')?.textContent === r, range, { timeout: 5000 }).catch(() => {});
  assert.equal(await page.locator('.ws-range').textContent(), range);

  // Now (live) drops the end from the address
  await page.getByRole('button', { name: 'Now (go live)' }).click();
  await page.waitForFunction(() => !/[?&]end=/.test(location.hash) && /[?&]seconds=60/.test(location.hash));
});

test('a worksheet saved paused opens on the same minutes, at its plain address', async (t) => {
  const own = await createWorksheet(box, 'saved window', ['io.ops'], 600);
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${own}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  await page.getByRole('button', { name: '1 min' }).click();
  await page.getByRole('button', { name: 'Back' }).click();
  await page.waitForFunction(() => /[?&]end=\d+/.test(location.hash));
  const end = Number(/end=(\d+)/.exec(page.url())[1]);
  await page.waitForFunction(() => !/ · live$/.test(document.querySelector('.ws-range').textContent));
  const range = await page.locator('.ws-range').textContent();
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  // saved: the window is the worksheet's own, so the address needs no words for it
  await page.waitForFunction((u) => location.hash === `#/worksheets/${u}`, own);
  const doc = await page.evaluate(async (u) => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    return (await (await fetch(`/api/analytics/v1/worksheets/${u}`, { headers: { 'X-Auth-Session': token } })).json()).worksheet;
  }, own);
  assert.deepEqual(doc.datasets.map((d) => [d.seconds, Date.parse(d.end) / 1000]), [[60, end]]);

  // another browser, the plain address (a bookmark of the worksheet): paused on that minute
  const other = await newPage(t);
  await other.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${own}`)}`);
  await login(other, null, 'admin', box.admin_password);
  await other.waitForSelector('body[data-ready="worksheet"]');
  assert.match(await other.getByRole('button', { name: /Paused/ }).textContent(), /Paused/);
  await other.waitForFunction((r) => document.querySelector('.ws-range')?.textContent === r, range);
  // Now goes live, and saving that makes it live again for everyone
  await other.getByRole('button', { name: 'Now (go live)' }).click();
  await other.getByRole('button', { name: 'Save', exact: true }).click();
  await other.waitForFunction((u) => location.hash === `#/worksheets/${u}`, own);
  const after = await other.evaluate(async (u) => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    return (await (await fetch(`/api/analytics/v1/worksheets/${u}`, { headers: { 'X-Auth-Session': token } })).json()).worksheet;
  }, own);
  assert.equal(after.datasets[0].end, undefined);
});

test('keys move the window: [ and ] back and forward, - and + zoom, l live, ? lists them', async (t) => {
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  await page.keyboard.press('[');
  await page.waitForFunction(() => /[?&]end=\d+/.test(location.hash));
  const end1 = Number(/end=(\d+)/.exec(page.url())[1]);
  await page.keyboard.press('[');
  await page.waitForFunction((e) => Number(/end=(\d+)/.exec(location.hash)?.[1]) === e - 300, end1);
  await page.keyboard.press(']');
  await page.waitForFunction((e) => Number(/end=(\d+)/.exec(location.hash)?.[1]) === e, end1);
  await page.keyboard.press('-');
  await page.waitForFunction(() => /seconds=1200/.test(location.hash));
  await page.keyboard.press('+');
  await page.waitForFunction(() => !/seconds=1200/.test(location.hash));
  await page.keyboard.press('l');
  await page.waitForFunction(() => !/end=/.test(location.hash));
  await page.keyboard.press('?');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await help.waitFor();
  assert.match(await help.textContent(), /back half a window/);
  await shots(page, 'worksheet-keys', { inPlace: true });
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });
  // typing in a field is typing, not a shortcut
  await page.getByRole('button', { name: 'Add chart' }).click();
  await page.locator('#ws-add-stat').focus();
  await page.keyboard.press('[');
  assert.doesNotMatch(page.url(), /end=/);
});

test('a session expiring under an unsaved worksheet: the login says why, and it comes back', async (t) => {
  const page = await newPage(t);
  watcher(page).expect('/api/', 401); // the refusal after the revocation is the point
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  await addChart(page, 'cpu.utilization');
  await page.waitForSelector('.ws-dirty:not([hidden])');
  assert.deepEqual(await charts(page), ['io.ops', 'cpu.utilization']);

  // the server ends the session (as an expiry would); the page's next refresh is refused
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('spindle.session')).token);
  const r = await fetch(`${box.http}/api/access/v1`, { method: 'DELETE', headers: { 'X-Auth-Session': token } });
  assert.equal(r.status, 204);
  await page.waitForSelector('body[data-ready="login"]', { timeout: 15000 });
  assert.match(await page.locator('#login-expired').textContent(), /session expired/);

  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.deepEqual(await charts(page), ['io.ops', 'cpu.utilization'], 'the unsaved chart is back');
  await page.waitForSelector('.ws-dirty:not([hidden])');
});
