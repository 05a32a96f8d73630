// SPDX-License-Identifier: ISC
// The hardware page (chassis, disks by slot, locator LEDs against the fake sysfs) and the
// dashboard's links and lists, as the administrator sees them.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { adminClient, axe, login, shots, start, startBox, watcher } from './harness.mjs';

const { box, newPage } = await start();
const HW = '/api/hardware/v1/chassis';

// The administrator's own API client, apart from any page.
const admin = await adminClient(box);

const idOf = (device) => Object.keys(box.disks).find((id) => box.disks[id] === device);
const readLed = (path) => readFileSync(path, 'utf8').trim();

async function until(what, fn, timeout = 5000) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function hardwarePage(t) {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.goto(`${box.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  return page;
}

const bay = (page, device) => page.locator(`.bay[data-disk="${idOf(device)}"]`);

test('the chassis and the enclosure, disks laid out by slot', async (t) => {
  const page = await hardwarePage(t);
  // the system chassis first, with its own locator and backend
  const system = page.locator('section.chassis[data-chassis="system"]');
  await system.getByRole('switch', { name: /^Locate / }).first().waitFor();
  assert.match(await system.locator('.chassis-locator').textContent(), /LED: leds/);
  // its disks are all in the enclosure: not "0 disks"
  assert.match(await system.textContent(), /no disks of its own; 8 in the enclosure below/);

  const enc = page.locator(`section.chassis[data-chassis="${box.enclosure}"]`);
  assert.match(await enc.locator('h2').textContent(), /Enclosure/);
  const slots = await enc.locator('.bay').evaluateAll((els) => els.map((e) => e.dataset.slot));
  assert.deepEqual(slots, Array.from({ length: 12 }, (_, i) => `Slot ${String(i).padStart(2, '0')}`));
  // shaped like the enclosure: 12 bays as 3 rows of 4
  const cols = await enc.locator('.bays').evaluate((g) => getComputedStyle(g).gridTemplateColumns.split(' ').length);
  assert.equal(cols, 4);
  // each present disk has its switch named after it, served by the slot's locate file
  for (const device of Object.values(box.disks)) {
    const b = bay(page, device);
    assert.equal(await b.getByRole('switch', { name: `Locate ${device}` }).count(), 1, device);
    assert.match(await b.textContent(), /LED: ses/);
  }
  // the faulted disk is marked, the others are not
  assert.equal(await bay(page, 'sdh').getAttribute('class').then((c) => c.includes('faulted')), true);
  assert.match(await bay(page, 'sdh').textContent(), /Faulted/);
  assert.equal(await bay(page, 'sda').locator('.bay-fault').isVisible(), false);
  assert.match(await enc.locator('h2').textContent(), /Faulted disk/);
  // four empty slots, each with a locator too
  assert.equal(await enc.locator('.bay.empty').count(), 4);
  assert.equal(await enc.locator('.bay.empty').getByRole('switch').count(), 4);
});

test('a disk\'s details open from its bay', async (t) => {
  const page = await hardwarePage(t);
  const open = bay(page, 'sdc').locator('.bay-name');
  await open.click();
  assert.equal(await open.getAttribute('aria-expanded'), 'true');
  const panel = page.locator(`#${await open.getAttribute('aria-controls')}`);
  await panel.waitFor();
  const text = await panel.textContent();
  for (const want of ['ST4000NM0023', 'Z1Z0A102', '4.0\u00a0TB', 'Slot 02', 'sdc', 'ses'])
    assert.ok(text.includes(want), `details lack ${want}: ${text}`);
  await open.press('Enter'); // and close again from the keyboard
  assert.equal(await panel.isVisible(), false);
});

test('a disk\'s own health: a failing one stands out on its bay and on the dashboard\'s status line', async (t) => {
  // a box of its own whose fake smartctl answers sdb as a failing drive, sdc as one with
  // pending sectors and sdd as a healthy one
  const sick = await startBox({ smart: 'sdb=nvme_critical_warning,sdc=hdd_pending,sdd=sata_ssd_ok' });
  t.after(() => sick.stop());
  const id = (device) => Object.keys(sick.disks).find((k) => sick.disks[k] === device);
  const api = await adminClient(sick);
  await until('the disks\' first readings', async () => {
    const d = await (await api.get(`${HW}/${sick.enclosure}/disk/${id('sdd')}`)).json();
    return d.disk.health === 'ok';
  }, 15000);
  const page = await newPage(t);
  await login(page, sick.https, 'admin', sick.admin_password);
  await page.goto(`${sick.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  const at = (device) => page.locator(`.bay[data-disk="${id(device)}"]`);
  assert.match(await at('sdb').getAttribute('class'), /\bfailing\b/);
  assert.equal(await at('sdb').locator('.bay-health').textContent(), 'Failing');
  assert.match(await at('sdb').locator('.bay-health').getAttribute('title'), /reliability degraded/);
  assert.equal(await at('sdb').locator('.bay-temp').textContent(), '41 °C');
  assert.match(await at('sdc').getAttribute('class'), /\bhealth-warning\b/);
  assert.equal(await at('sdc').locator('.bay-health').textContent(), 'Warning');
  assert.equal(await at('sdd').locator('.bay-health').isVisible(), false);
  assert.equal(await at('sdd').locator('.bay-temp').textContent(), '31 °C');
  // the details say why, and the counts of its kind
  const open = at('sdc').locator('.bay-name');
  await open.click();
  const panel = page.locator(`#${await open.getAttribute('aria-controls')}`);
  await panel.waitFor();
  const text = await panel.textContent();
  for (const want of ['warning: 8 sectors pending reallocation; 2 sectors uncorrectable offline',
    '38 °C (its limit 60 °C)', 'Pending sectors', 'Power-on hours'])
    assert.ok(text.includes(want), `details lack ${want}: ${text}`);
  // the dashboard's status line: the failing disk first (Critical, above sdh's fault)
  await page.goto(`${sick.https}/#/`);
  await page.waitForSelector('#dash-status[data-state="problem"] #dash-status-text');
  assert.match(await page.locator('#dash-status-text').textContent(), /\(sdb, serial Z1Z0A\w+\) is failing: the drive's own health check failed/);
  assert.match(await page.locator('#dash-status .badge').first().textContent(), /Critical/);
  await page.locator('#dash-status').getByRole('button', { name: 'Locate' }).waitFor();
});

test('toggling a disk locator lights the slot\'s LED, and the page shows it lit', async (t) => {
  const page = await hardwarePage(t);
  const file = box.locate_files[idOf('sdb')];
  assert.equal(readLed(file), '0');
  const sw = page.getByRole('switch', { name: 'Locate sdb' });
  await sw.click();
  await until('the locate file to read 1', () => readLed(file) === '1');
  await page.waitForSelector(`.bay[data-disk="${idOf('sdb')}"][data-locate="on"].led-lit`);
  assert.equal(await sw.isChecked(), true);
  assert.match(await bay(page, 'sdb').textContent(), /Locating/);
  assert.match(await page.locator('.hw-lit').textContent(), /1 locator LED lit/);
  // the lit bay stands out: its glow is drawn
  const shadow = await bay(page, 'sdb').evaluate((e) => getComputedStyle(e).boxShadow);
  assert.notEqual(shadow, 'none');

  // the state survives a reload (read back from the hardware)
  await page.reload();
  await page.waitForSelector('body[data-ready="hardware"]');
  assert.equal(await page.getByRole('switch', { name: 'Locate sdb' }).isChecked(), true);

  // and off again from the keyboard, which keeps its place
  await page.getByRole('switch', { name: 'Locate sdb' }).focus();
  await page.keyboard.press('Space');
  await until('the locate file to read 0', () => readLed(file) === '0');
  await page.waitForSelector(`.bay[data-disk="${idOf('sdb')}"][data-locate="off"]:not(.led-lit)`);
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Locate sdb');

  // the system locator: its leds backend writes the brightness file
  const sys = page.locator('section.chassis[data-chassis="system"] .chassis-locator').getByRole('switch');
  await sys.click();
  await until('the system LED to be lit', () => readLed(box.system_led) !== '0');
  await page.waitForSelector('section.chassis[data-chassis="system"].led-lit');
  await sys.click();
  await until('the system LED to be off', () => readLed(box.system_led) === '0');
});

test('while a toggle is in flight its switch takes no other', async (t) => {
  const page = await hardwarePage(t);
  const puts = [];
  let release;
  const held = new Promise((r) => (release = r));
  await page.route(`**${HW}/**`, async (route) => {
    if (route.request().method() === 'PUT') {
      puts.push(route.request().postDataJSON());
      await held;
    }
    await route.continue();
  });
  const sw = page.getByRole('switch', { name: 'Locate sde' });
  await sw.click();
  await until('the PUT', () => puts.length === 1);
  assert.equal(await sw.getAttribute('aria-disabled'), 'true');
  await sw.click({ force: true });
  await page.keyboard.press('Space');
  assert.equal(await sw.isChecked(), true, 'a click in flight changes nothing');
  release();
  await page.waitForSelector(`.bay[data-disk="${idOf('sde')}"][data-locate="on"]`);
  assert.deepEqual(puts, [{ locate: true }]);
  assert.equal(await sw.getAttribute('aria-disabled'), null);
  await page.unrouteAll();
  await sw.click();
  await until('the locate file to read 0', () => readLed(box.locate_files[idOf('sde')]) === '0');
});

test('a toggle the backend refuses is put back, with the server\'s message', async (t) => {
  const page = await hardwarePage(t);
  watcher(page).expect(`${HW}/`, 502);
  const file = box.locate_files[idOf('sdc')];
  // even root cannot write a directory: the ses backend fails
  unlinkSync(file);
  mkdirSync(file);
  t.after(() => {
    rmdirSync(file);
    writeFileSync(file, '0\n');
  });
  const sw = page.getByRole('switch', { name: 'Locate sdc' });
  const answer = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().includes(idOf('sdc')));
  await sw.click();
  const res = await answer;
  assert.equal(res.status(), 502);
  const { fault } = await res.json();
  const msg = bay(page, 'sdc').locator('.locate-error');
  await msg.waitFor();
  assert.equal((await msg.textContent()).trim(), fault.details);
  assert.match(fault.details, /cannot write/);
  assert.match(await page.locator('#toast').textContent(), /cannot write/);
  assert.equal(await sw.isChecked(), false, 'the switch is put back');
  assert.equal(await sw.isEnabled(), true);
  assert.equal(await bay(page, 'sdc').getAttribute('data-locate'), 'off');
});

test('the dashboard\'s tiles lead to their datasets, pages and lists', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  const href = (tile) => page.locator(`[data-tile="${tile}"]`).getAttribute('href');
  // each opens a worksheet of a dataset the server has (the catalogue decides the name)
  await page.waitForFunction(() => /io\.ops/.test(document.querySelector('[data-tile="iops"]').getAttribute('href')));
  const datasets = (await (await admin.get('/api/analytics/v1/datasets')).json()).datasets.map((d) => d.name);
  for (const [tile, stat] of [['iops', 'io.ops'], ['throughput', 'io.bytes'], ['latency', 'io.latency'],
    ['cpu', 'cpu.utilization'], ['nic', 'nic.kilobytes'], ['arc', 'arc.']]) {
    const h = await href(tile);
    const m = /^#\/worksheets\/new\?dataset=(.+)$/.exec(h);
    assert.ok(m, `${tile}: ${h}`);
    const name = decodeURIComponent(m[1]);
    assert.ok(name.startsWith(stat) && datasets.includes(name), `${tile} opens ${name}`);
  }
  assert.equal(await href('jobs'), '#/bench');
  assert.equal(await href('leds'), '#/hardware');
  // each tile: label, value, sub-line and sparkline
  for (const tile of ['iops', 'throughput', 'latency', 'cpu', 'memory', 'capacity', 'arc', 'nic', 'jobs', 'leds', 'problems']) {
    const el = page.locator(`[data-tile="${tile}"]`);
    for (const part of ['.tile-label', '.tile-value', '.tile-sub', 'svg.spark'])
      assert.equal(await el.locator(part).count(), 1, `${tile} ${part}`);
  }
  // the identity line: version, uptime and the sample's time
  await page.waitForFunction(() => /Spindle \S+ · up .+ · sample \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(
    document.querySelector('.ident').textContent));
  // the dashboard lists the newest problems: sdh's enclosure fault
  const problems = page.locator('#dash-problems');
  await problems.locator('.problem').first().waitFor();
  assert.match(await problems.locator('.problem').first().textContent(), /sdh/);
  assert.match(await problems.locator('.problem .badge').first().getAttribute('class'), /sev-/);
  // and the problems tile opens the Problems page, where it is whole
  await page.locator('[data-tile="problems"]').click();
  await page.waitForSelector('body[data-ready="problems"]');
  assert.match(await page.locator('.problem-card').first().textContent(), /sdh/);
  await page.goBack();
  await page.waitForSelector('body[data-ready="dashboard"]');
  // the LEDs tile follows the LEDs lit (from the live document)
  const file = box.locate_files[idOf('sda')];
  const path = `${HW}/${box.enclosure}/disk/${idOf('sda')}`;
  assert.equal((await admin.put(path, { data: { locate: true } })).status(), 202);
  t.after(async () => assert.equal((await admin.put(path, { data: { locate: false } })).status(), 202));
  assert.equal(readLed(file), '1');
  await page.waitForSelector('[data-tile="leds"].led-lit');
  assert.match(await page.locator('[data-tile="leds"] .tile-value').textContent(), /^1$/);
});

test('the dashboard and hardware pages: accessible, and their screenshots', async (t) => {
  const page = await hardwarePage(t);
  // a disk's and the system's LEDs lit, so the screenshots (and axe) see what lit looks like
  await page.getByRole('switch', { name: 'Locate sdd' }).click();
  await page.waitForSelector(`.bay[data-disk="${idOf('sdd')}"].led-lit`);
  await page.locator('section.chassis[data-chassis="system"] .chassis-locator').getByRole('switch').click();
  await page.waitForSelector('section.chassis[data-chassis="system"].led-lit');
  t.after(async () => {
    for (const path of [`${HW}/${box.enclosure}/disk/${idOf('sdd')}`, `${HW}/system`])
      assert.equal((await admin.put(path, { data: { locate: false } })).status(), 202);
  });
  await axe(page);
  await shots(page, 'hardware');
  await page.goto(`${box.https}/#/dashboard`);
  await page.waitForSelector('body[data-ready="dashboard"]');
  await axe(page);
  await shots(page, 'dashboard-locating'); // 'dashboard' is dashboard.test.mjs's
});
