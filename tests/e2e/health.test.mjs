// SPDX-License-Identifier: ISC
// The box's health at a glance: on a phone the first screen names the faulted disk (sdh in
// the fake enclosure) whole, with a Locate button that lights its slot; the Problems page
// says what it means and what to do, and its component link opens the disk's details in
// view; who is signed in, and with which role, shows on every size; a lit faulted bay keeps
// its frame in both schemes; the hardware filters (search, faulted only, locating only) and
// the LED backends in words; and, once the fault is mended, "All good" with its time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { adminClient, checkNoStrayText, login, shots, start, until } from './harness.mjs';

// the hardware watch each second: a fault mended behind spindled's back clears at once;
// the system's locator kept virtual, whose words the hardware page must say
const { box, newPage } = await start({ args: ['--hardware-watch', '1', '--system-led-backend', 'virtual'] });
const MONITOR = { name: 'pocket', password: 'Monitor-e2e-password-2' };
const PHONE = { width: 390, height: 844 };

const admin = await adminClient(box);
const made = await admin.post('/api/user/v1/users', { data: { ...MONITOR, roles: ['monitor'] } });
assert.equal(made.status(), 201, await made.text());

const idOf = (device) => Object.keys(box.disks).find((id) => box.disks[id] === device);
const readLed = (path) => readFileSync(path, 'utf8').trim();

// The faulted disk's problem as the API has it.
async function sdhProblem() {
  const resp = await admin.get('/api/problem/v1/problems');
  assert.equal(resp.status(), 200);
  const { problems } = await resp.json();
  const p = problems.find((x) => x.code === 'SP-DISK-FAULT');
  assert.ok(p, JSON.stringify(problems));
  return p;
}

const inViewport = (box_, vp) => box_ && box_.y >= 0 && box_.y + box_.height <= vp.height;

test('a phone: the first screen names the faulted disk whole, Locate lights it', async (t) => {
  const page = await newPage(t, { phone: true });
  await login(page, box.https, MONITOR.name, MONITOR.password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  await page.waitForSelector('#dash-status[data-state="problem"] #dash-status-text');
  const p = await sdhProblem();

  // the whole description, not a summary cut to fit, above the fold
  const text = (await page.locator('#dash-status-text').textContent()).trim();
  assert.equal(text, p.description);
  assert.match(text, /sdh/);
  const line = await page.locator('#dash-status').boundingBox();
  assert.ok(inViewport(line, PHONE), `the status line is at y=${line.y}..${line.y + line.height} of ${PHONE.height}`);
  assert.match(await page.locator('#dash-status .badge').first().textContent(), /Major/);

  // who is signed in, and as what, in the one header row
  assert.ok(await page.locator('#who-name').isVisible(), 'the name is shown on a phone');
  assert.equal((await page.locator('#who-name').textContent()).trim(), MONITOR.name);
  assert.equal((await page.locator('#who-role').textContent()).trim(), 'read-only');
  const header = await page.locator('#top').boundingBox();
  assert.ok(header.height < 70, `the header is ${header.height} px tall (one row)`);

  // Locate lights the slot's LED, and a second tap puts it out
  const file = box.locate_files[idOf('sdh')];
  assert.equal(readLed(file), '0');
  const locate = page.locator('#dash-status').getByRole('button', { name: 'Locate' });
  await locate.tap();
  await until('the locate file to read 1', () => readLed(file) === '1');
  await page.locator('#dash-status').getByRole('button', { name: 'Stop locating' }).waitFor();
  await shots(page, 'health-status-locating', { inPlace: true });
  await page.locator('#dash-status').getByRole('button', { name: 'Stop locating' }).tap();
  await until('the locate file to read 0', () => readLed(file) === '0');
});

test('the Problems page: impact, action, since when, and the disk a tap away', async (t) => {
  const page = await newPage(t, { phone: true });
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('#dash-status[data-state="problem"] #dash-status-more');
  assert.equal((await page.locator('#who-role').textContent()).trim(), 'admin');
  await page.locator('#dash-status-more').tap();
  await page.waitForSelector('body[data-ready="problems"]');
  const p = await sdhProblem();
  const card = page.locator(`[data-problem="${p.uuid}"]`);
  const body = await card.textContent();
  for (const part of [p.description, p.impact, p.action]) assert.ok(body.includes(part), `the card says "${part}": ${body}`);
  assert.match(body, /Since/);
  await checkNoStrayText(page);
  await shots(page, 'problems');

  // the component opens that disk's details on the Hardware page, in view
  await card.getByRole('link', { name: p.components[0].label }).tap();
  await page.waitForSelector('body[data-ready="hardware"]');
  const panel = page.locator('.disk-panel:not([hidden])');
  await panel.waitFor();
  assert.match(await panel.textContent(), /sdh/);
  const r = await panel.boundingBox();
  const top = await page.locator('#top').boundingBox();
  assert.ok(r.y >= top.height - 1 && r.y < PHONE.height, `the details start at y=${r.y} (header ${top.height} px, screen ${PHONE.height})`);
});

test('a tapped disk\'s details come into view, below the sticky header', async (t) => {
  for (const phone of [true, false]) {
    const page = await newPage(t, { phone });
    await login(page, box.https, 'admin', box.admin_password);
    await page.goto(`${box.https}/#/hardware`);
    await page.waitForSelector('body[data-ready="hardware"]');
    const bay = page.locator(`.bay[data-disk="${idOf('sdg')}"] .bay-name`);
    if (phone) await bay.tap();
    else await bay.click();
    const panel = page.locator('.disk-panel:not([hidden])');
    await panel.waitFor();
    const vp = page.viewportSize();
    const r = await panel.boundingBox();
    const top = await page.locator('#top').boundingBox();
    assert.ok(r.y >= top.y + top.height - 1 && r.y < vp.height - 40, `${phone ? 'phone' : 'desktop'}: the details at y=${r.y}, header to ${top.y + top.height}, screen ${vp.height}`);
  }
});

test('a lit, faulted bay keeps its fault frame and a legible badge, light and dark', async (t) => {
  for (const dark of [true, false]) await litFaultedBay(t, dark);
});

async function litFaultedBay(t, dark) {
  const page = await newPage(t, { dark });
  await login(page, box.https, 'admin', box.admin_password);
  await page.goto(`${box.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  const id = idOf('sdh');
  await page.getByRole('switch', { name: 'Locate sdh' }).click();
  await page.waitForSelector(`.bay[data-disk="${id}"].led-lit.faulted`);
  const look = await page.locator(`.bay[data-disk="${id}"]`).evaluate((el) => {
    const b = el.querySelector('.bay-fault');
    const cs = getComputedStyle(el);
    const bs = getComputedStyle(b);
    return { border: cs.borderTopColor, width: cs.borderTopWidth, badgeBg: bs.backgroundColor, badgeFg: bs.color, led: getComputedStyle(document.documentElement).getPropertyValue('--led').trim() };
  });
  // the frame is the fault's dark red, not the LED's orange
  assert.equal(look.border, 'rgb(142, 27, 20)', JSON.stringify(look));
  assert.equal(look.width, '3px');
  // white on dark red: contrast well above 4.5:1
  assert.equal(look.badgeBg, 'rgb(142, 27, 20)');
  assert.equal(look.badgeFg, 'rgb(255, 255, 255)');
  await page.getByRole('switch', { name: 'Locate sdh' }).click();
  await page.waitForSelector(`.bay[data-disk="${id}"][data-locate="off"]`);
}

test('finding a disk: by name or serial, faulted only, kept in the address', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.goto(`${box.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  const visible = () => page.locator('.bay:not([hidden])').evaluateAll((els) => els.map((e) => e.querySelector('.bay-dev').textContent));
  await page.fill('#hw-search', 'sdc');
  assert.deepEqual(await visible(), ['sdc']);
  assert.match(page.url(), /#\/hardware\?q=sdc$/);
  await page.fill('#hw-search', 'Z1Z0A104'); // a serial
  assert.deepEqual(await visible(), ['sde']);
  await page.fill('#hw-search', '');
  await page.check('#hw-faulted');
  assert.deepEqual(await visible(), ['sdh']);
  assert.match(await page.locator('#hw-shown').textContent(), /^1 of \d+ bays shown$/);
  await page.reload();
  await page.waitForSelector('body[data-ready="hardware"]');
  assert.ok(await page.isChecked('#hw-faulted'), 'the filter comes back with the address');
  assert.deepEqual(await visible(), ['sdh']);
  // the LED backends in words: the slot's, and the system's that lights nothing
  assert.match(await page.locator(`.bay[data-disk="${idOf('sdh')}"] .led-backend`).textContent(), /^LED: ses \(the enclosure’s slot LED\)$/);
  assert.ok((await page.locator('.led-backend').allTextContents()).includes('LED: virtual (lights nothing physical: the state is only kept)'));
  // locating only: the bays whose locator is lit, here sdc's
  await page.uncheck('#hw-faulted');
  await page.getByRole('switch', { name: 'Locate sdc' }).click();
  await page.waitForSelector(`.bay[data-disk="${idOf('sdc')}"][data-locate="on"]`);
  await page.check('#hw-lit');
  assert.deepEqual(await visible(), ['sdc']);
  assert.match(page.url(), /[?&]lit=/);
  await shots(page, 'hardware-locating-only', { inPlace: true });
  await page.uncheck('#hw-lit');
  await page.getByRole('switch', { name: 'Locate sdc' }).click();
  await page.waitForSelector(`.bay[data-disk="${idOf('sdc')}"][data-locate="off"]`);
  // disk names in the order a person counts them
  const order = await page.evaluate(async () => ['sdab', 'sda', 'sdz', 'sdaa', 'sdb', 'nvme10n1', 'nvme2n1'].sort((await import('/js/dom.js')).naturalCompare));
  assert.deepEqual(order, ['nvme2n1', 'nvme10n1', 'sda', 'sdb', 'sdz', 'sdaa', 'sdab']);
  // and figures in one form down a column: 7.8k beside 35.3k, not 7808
  const figures = await page.evaluate(async () => { const { num } = await import('/js/dom.js'); return [7808, 35300, 999].map((v) => num(v)); });
  assert.deepEqual(figures, ['7.8k', '35.3k', '999']);
});

// Last: it mends the fault every other test looks at.
test('with nothing wrong the status line says All good, and when the box was last looked at', async (t) => {
  const slot = dirname(box.locate_files[idOf('sdh')]);
  writeFileSync(join(slot, 'fault'), '0\n');
  writeFileSync(join(slot, 'status'), 'OK\n');
  const page = await newPage(t, { phone: true });
  await login(page, box.https, MONITOR.name, MONITOR.password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  await page.waitForSelector('#dash-status[data-state="ok"]', { timeout: 15000 });
  assert.match(await page.locator('#dash-status').textContent(), /All good · no open problems/);
  await page.waitForFunction(() => /checked \d\d:\d\d:\d\d/.test(document.querySelector('#dash-status').textContent));
  const line = await page.locator('#dash-status').boundingBox();
  assert.ok(inViewport(line, PHONE), `the status line is at y=${line.y}`);
  await shots(page, 'health-all-good', { inPlace: true });
});
