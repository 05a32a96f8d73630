// SPDX-License-Identifier: ISC
// The monitor user on a phone: the dashboard without sideways scrolling, a worksheet the
// administrator saved, read-only, and the one change a monitor may make: a locator LED.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'playwright-core';
import { adminClient, expectStatus, login, start, until } from './harness.mjs';

const { box, newPage } = await start();
const HW = '/api/hardware/v1/chassis';
const MONITOR = { name: 'wallphone', password: 'Monitor-e2e-password-1' };
const PHONE_WIDTH = 390;

const admin = await adminClient(box);

// The monitor user and a worksheet of the administrator's, made through the API.
await expectStatus(await admin.post('/api/user/v1/users', { data: { ...MONITOR, roles: ['monitor'] } }), 201);
const { worksheet } = await expectStatus(
  await admin.post('/api/analytics/v1/worksheets', {
    data: { name: 'Disks at a glance', datasets: [{ name: 'io.ops[op]', seconds: 600 }, { name: 'cpu.utilization[mode]' }] },
  }),
  201,
);

const idOf = (device) => Object.keys(box.disks).find((id) => box.disks[id] === device);
const readLed = (path) => readFileSync(path, 'utf8').trim();

const sideScroll = (page) => page.evaluate(() => document.documentElement.scrollWidth);


test('a monitor user on a phone: dashboard, a saved worksheet read-only, a locator LED', async (t) => {
  const page = await newPage(t, { phone: true });
  await login(page, box.https, MONITOR.name, MONITOR.password);
  await page.waitForSelector('body[data-ready="dashboard"]');

  // the dashboard: two tiles a row, live figures, nothing wider than the phone
  await page.waitForFunction(() => /\d/.test(document.querySelector('[data-tile="iops"] .tile-value').textContent));
  assert.ok((await sideScroll(page)) <= PHONE_WIDTH, `dashboard ${await sideScroll(page)} px wide`);
  const [a, b, c] = await page.locator('.tile').evaluateAll((els) => els.slice(0, 3).map((e) => e.getBoundingClientRect().top));
  assert.ok(a === b && c > a, 'two tiles a row');
  // the administrator's pages are not offered
  assert.equal(await page.locator('[data-nav="admin"]').isVisible(), false);

  await t.test('the administrator\'s worksheet, read-only', async () => {
    await page.goto(`${box.https}/#/worksheets/${worksheet.uuid}`);
    await page.waitForSelector('body[data-ready="worksheet"]');
    assert.ok((await page.locator('main').textContent()).includes(worksheet.name));
    assert.equal(await page.getByRole('button', { name: /^(Save|Delete|Add)\b/ }).count(), 0, 'no Save, Add or Delete for a monitor');
    assert.ok((await sideScroll(page)) <= PHONE_WIDTH, `worksheet ${await sideScroll(page)} px wide`);
  });

  // Hardware, from the menu, with a thumb
  await page.getByRole('button', { name: 'Menu' }).tap();
  await page.getByRole('link', { name: 'Hardware' }).tap();
  await page.waitForSelector('body[data-ready="hardware"]');
  assert.ok((await sideScroll(page)) <= PHONE_WIDTH, `hardware ${await sideScroll(page)} px wide`);
  const file = box.locate_files[idOf('sdb')];
  assert.equal(readLed(file), '0');
  const sw = page.getByRole('switch', { name: 'Locate sdb' });
  // the switch's row is its label: a target a thumb can hit
  const row = sw.locator('xpath=ancestor::label[1]');
  const target = await row.boundingBox();
  assert.ok(target.width >= 44 && target.height >= 44, `the switch's target is ${target.width}x${target.height} px`);
  await sw.tap();
  await until('the locate file to read 1', () => readLed(file) === '1');
  await page.waitForSelector(`.bay[data-disk="${idOf('sdb')}"].led-lit`);
  assert.match(await page.locator(`.bay[data-disk="${idOf('sdb')}"]`).textContent(), /Locating/);
  await row.locator('.led-word').tap(); // the word beside the switch works too
  await until('the locate file to read 0', () => readLed(file) === '0');
  await page.waitForSelector(`.bay[data-disk="${idOf('sdb')}"][data-locate="off"]`);

  // and the audit log says who did it
  const { logs } = await expectStatus(await admin.get('/api/log/v1/logs/audit?limit=1000'), 200);
  const mine = logs.filter((e) => e.action === 'hardware.locate' && e.user === MONITOR.name);
  assert.equal(mine.length, 2, JSON.stringify(mine));
});

test('a monitor user cannot change anything else from the hardware page', async (t) => {
  const page = await newPage(t, { phone: true });
  await login(page, box.https, MONITOR.name, MONITOR.password);
  await page.goto(`${box.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  // the only controls that change something are the locator switches (the filters change
  // only what the page shows)
  const changing = await page.locator('main button, main input, main select').evaluateAll((els) =>
    els.filter((e) => !(e.getAttribute('role') === 'switch') && !e.classList.contains('bay-name') && !e.closest('.hw-filters')
      && e.textContent.trim() !== 'Refresh' && e.textContent.trim() !== 'Close').map((e) => e.outerHTML));
  assert.deepEqual(changing, []);
  // every switch is usable: the monitor role holds hardware:locate
  assert.equal(await page.locator('main [role="switch"]:disabled').count(), 0);
  // a PUT of anything but the locator is refused by the server (and the page sends none)
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem('spindle.session')).token);
  const own = await request.newContext({ baseURL: box.https, ignoreHTTPSErrors: true, extraHTTPHeaders: { 'X-Auth-Session': token } });
  t.after(() => own.dispose());
  await expectStatus(await own.put(`${HW}/${box.enclosure}/disk/${idOf('sda')}`, { data: { locate: true, fault: true } }), 400);
  await expectStatus(await own.post('/api/analytics/v1/worksheets', { data: { name: 'mine' } }), 403);
});
