// SPDX-License-Identifier: ISC
// Analytics worksheets in the browser: build one of two charts, save it, reload and see it
// again, rename, clone, delete, export CSV, the legend's figures and focus, a legend key
// drilled down as the appliance does (a disk by type of operation), a worksheet
// opened from a dashboard tile's link, the read-only view of a monitor user on a phone,
// and the time to draw a 64-series hour.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { adminClient, axe, expectStatus, figure, login, shots, start, until, watcher } from './harness.mjs';
import { assertReadOnly, createMonitor, createWorksheet } from './worksheets.mjs';

const { box, newPage } = await start();

async function openAs(t, route, { user = 'admin', password = box.admin_password, phone = false, tz } = {}) {
  const page = await newPage(t, { phone, tz });
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(route)}`);
  await login(page, null, user, password);
  return page;
}

// Adds a chart through the form; waits until its legend has rows.
async function addChart(page, statistic, drilldown = '') {
  if (await page.locator('#ws-add').isHidden()) await page.getByRole('button', { name: 'Add chart' }).click();
  await page.selectOption('#ws-add-stat', statistic);
  await page.selectOption('#ws-add-drill', drilldown ? { value: drilldown } : { index: 0 });
  await page.locator('#ws-add').getByRole('button', { name: 'Add', exact: true }).click();
  const name = drilldown ? `${statistic}[${drilldown}]` : statistic;
  await page.waitForSelector(`section.ws-chart[data-dataset="${name}"] .ws-legend tbody tr[data-key]`);
  return page.locator(`section.ws-chart[data-dataset="${name}"]`);
}

// The charts by their datasets' names (each headed by its readable title, the name beside).
const chartNames = (page) => page.locator('section.ws-chart').evaluateAll((els) => els.map((e) => e.dataset.dataset));

async function dialog(page, fill) {
  const dlg = page.locator('dialog.ws-dialog[open]');
  await dlg.waitFor();
  if (fill !== undefined) await dlg.locator('input').fill(fill);
  return dlg;
}

test('build, save, reload, rename, clone, delete a worksheet; CSV and legend', async (t) => {
  const page = await openAs(t, 'worksheets/new');
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.equal(await page.locator('h1').textContent(), 'New worksheet');

  await axe(page); // with the form to add a chart open
  const cpu = await addChart(page, 'cpu.utilization');
  const io = await addChart(page, 'io.ops', 'disk');
  assert.deepEqual(await chartNames(page), ['cpu.utilization', 'io.ops[disk]']);
  // readable titles, as the appliance writes them, with the dataset's name beside each
  assert.deepEqual(await page.locator('section.ws-chart h2').allTextContents(),
    ['CPU: percent utilization', 'Disk: I/O operations per second broken down by disk']);
  assert.equal(await page.locator('section.ws-chart[data-dataset="io.ops[disk]"] .ws-raw').textContent(), 'io.ops[disk]');

  // The legend: one row per disk (the box has eight), each with current, min, max, mean.
  assert.deepEqual(await io.locator('.ws-legend thead th').allTextContents(),
    ['Series', 'Current', 'Min', 'Max', 'Average']);
  await page.waitForFunction(() => document.querySelectorAll(
    'section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key]').length >= 8);
  const keys = await io.locator('.ws-legend tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
  for (const d of ['sda', 'sdb', 'sdh']) assert.ok(keys.includes(d), `${d} in the legend: ${keys}`);
  const cells = await io.locator('.ws-legend tbody tr').first().locator('td').allTextContents();
  assert.equal(cells.length, 4);
  for (const c of cells) assert.match(c, /^[0-9.]+[kMG]?$/, `a figure in each column: ${cells}`);
  const cpuRow = await cpu.locator('.ws-legend tbody tr').first().locator('td').allTextContents();
  for (const c of cpuRow) assert.match(c, /^[0-9.]+\u00a0%$/, `percent: ${cpuRow}`);

  // Focus a series from its legend row, by mouse and by keyboard.
  const first = io.locator('.ws-legend tbody tr').first().getByRole('button');
  await first.click();
  assert.equal(await first.getAttribute('aria-pressed'), 'true');
  await first.focus();
  await page.keyboard.press('Enter');
  assert.equal(await first.getAttribute('aria-pressed'), 'false');
  await page.keyboard.press('Space');
  assert.equal(await first.getAttribute('aria-pressed'), 'true');

  // Top N: four disks and "other" (the sum of the other four), as the box ranks them.
  await io.locator('select.ws-top').selectOption('4');
  await page.waitForFunction(() => document.querySelectorAll(
    'section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key]').length === 5);
  const top4 = await io.locator('.ws-legend tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
  assert.equal(top4.length, 5);
  assert.equal(top4[4], 'other');
  // "other" sums four disks: not drawn until asked (its scale would flatten the four)
  const other = io.locator('.ws-legend tbody tr[data-key="other"] button');
  assert.equal(await other.getAttribute('aria-pressed'), 'false');
  assert.match(await other.textContent(), /other \(4\) · not drawn/);
  await other.click();
  assert.equal(await other.getAttribute('aria-pressed'), 'true');
  assert.match(await other.textContent(), /· drawn$/);
  await other.click();
  assert.equal(await other.getAttribute('aria-pressed'), 'false');

  // CSV: time and one column per series shown, "other" last.
  const [dl] = await Promise.all([page.waitForEvent('download'), io.getByRole('button', { name: /CSV/ }).click()]);
  const text = readFileSync(await dl.path(), 'utf8');
  const [header, row] = text.split('\r\n');
  assert.deepEqual(header.split(','), ['time', ...top4]);
  assert.match(row, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,/);
  assert.match(dl.suggestedFilename(), /io\.ops_disk.*\.csv$/);

  // Keys: show two disks apart instead of the top N; kept when saved.
  await io.getByRole('button', { name: 'Choose the keys of io.ops[disk]' }).click();
  const keysDlg = await dialog(page);
  await keysDlg.getByLabel('sdb', { exact: true }).check();
  await keysDlg.getByLabel('sdc', { exact: true }).check();
  await keysDlg.getByRole('button', { name: 'Show' }).click();
  const legendKeys = () => io.locator('.ws-legend tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
  await page.waitForFunction(() => document.querySelectorAll(
    'section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key]').length === 2);
  assert.deepEqual(await legendKeys(), ['sdb', 'sdc']);
  assert.equal(await io.locator('select.ws-top').isHidden(), true);

  // Save: a name asked for, then the URL is the worksheet's.
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  const dlg = await dialog(page, 'e2e disks');
  await axe(page);
  await dlg.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => /^#\/worksheets\/[0-9a-f-]{36}$/.test(location.hash));
  assert.equal(await page.locator('h1').textContent(), 'e2e disks');

  // Reload: the same worksheet and its two charts, with data.
  await page.reload();
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.equal(await page.locator('h1').textContent(), 'e2e disks');
  assert.deepEqual(await chartNames(page), ['cpu.utilization', 'io.ops[disk]']);
  await page.waitForSelector('section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key="sdb"]');
  assert.deepEqual(await legendKeys(), ['sdb', 'sdc']);
  await shots(page, 'worksheet');

  // Time controls. Live, the window's end moves on by itself.
  const range = () => page.locator('.ws-range').textContent();
  const ends = async () => (await range()).split(' · ')[0];
  const before = await ends();
  await page.waitForFunction((b) => document.querySelector('.ws-range').textContent.split(' · ')[0] !== b, before);
  // A preset; zoom buttons halve and double the window.
  await page.getByRole('button', { name: '1 min', exact: true }).click();
  await page.waitForFunction(() => / · 1 min · /.test(document.querySelector('.ws-range').textContent));
  await page.getByRole('button', { name: 'Zoom in', exact: true }).click();
  await page.waitForFunction(() => / · 30 s · /.test(document.querySelector('.ws-range').textContent));
  await page.getByRole('button', { name: 'Zoom out', exact: true }).click();
  await page.waitForFunction(() => / · 1 min · /.test(document.querySelector('.ws-range').textContent));
  // Back pauses; paused, the window stays put.
  await page.getByRole('button', { name: 'Back', exact: true }).click();
  assert.equal(await page.locator('.ws-live').getAttribute('aria-pressed'), 'false');
  await page.waitForFunction(() => !/ live$/.test(document.querySelector('.ws-range').textContent));
  const held = await range();
  await page.waitForTimeout(2200);
  assert.equal(await range(), held);
  // Dragging across a chart zooms into that stretch.
  await page.getByRole('button', { name: 'Now (go live)' }).click();
  assert.equal(await page.locator('.ws-live').getAttribute('aria-pressed'), 'true');
  const over = page.locator('section[data-dataset="cpu.utilization"] .u-over');
  const box1 = await over.boundingBox();
  await page.mouse.move(box1.x + box1.width * 0.4, box1.y + 20);
  await page.mouse.down();
  await page.mouse.move(box1.x + box1.width * 0.6, box1.y + 20, { steps: 5 });
  await page.mouse.up();
  assert.equal(await page.locator('.ws-live').getAttribute('aria-pressed'), 'false');
  await page.waitForFunction(() => / · 1[0-3] s · /.test(document.querySelector('.ws-range').textContent));
  await page.getByRole('button', { name: 'Now (go live)' }).click();
  // Times in UTC when asked.
  await page.locator('#utc-toggle').click();
  await page.waitForSelector('body[data-ready="worksheet"]');
  await page.waitForFunction(() => / UTC – /.test(document.querySelector('.ws-range').textContent));
  await page.locator('#utc-toggle').click();
  await page.waitForSelector('body[data-ready="worksheet"]');

  // Rename here.
  await page.getByRole('button', { name: 'Rename', exact: true }).click();
  await (await dialog(page, 'e2e disks 2')).getByRole('button', { name: 'Rename' }).click();
  await page.waitForFunction(() => document.querySelector('h1').textContent === 'e2e disks 2');

  // The list: clone it, then delete the copy.
  await page.goto(`${box.https}/#/worksheets`);
  await page.waitForSelector('body[data-ready="worksheets"]');
  const listRow = page.locator('tr', { has: page.getByRole('link', { name: 'e2e disks 2', exact: true }) });
  assert.equal(await listRow.locator('td[data-label="Charts"]').textContent(), '2');
  await page.getByRole('button', { name: 'Clone e2e disks 2' }).click();
  const clone = await dialog(page);
  assert.equal(await clone.locator('input').inputValue(), 'e2e disks 2 (copy)');
  await clone.getByRole('button', { name: 'Clone' }).click();
  await page.getByRole('link', { name: 'e2e disks 2 (copy)', exact: true }).waitFor();
  await shots(page, 'worksheets');

  // A name already taken: the server's refusal shows in the dialog.
  await page.getByRole('button', { name: 'Rename e2e disks 2 (copy)' }).click();
  const taken = await dialog(page, 'e2e disks 2');
  watcher(page).expect('/api/analytics/v1/worksheets/', 409);
  await taken.getByRole('button', { name: 'Rename' }).click();
  await taken.locator('.field-error', { hasText: /already has a worksheet/ }).waitFor();
  await taken.getByRole('button', { name: 'Cancel' }).click();

  await page.getByRole('button', { name: 'Delete e2e disks 2 (copy)' }).click();
  await (await dialog(page)).getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('link', { name: 'e2e disks 2 (copy)', exact: true }).waitFor({ state: 'detached' });
  assert.equal(await page.getByRole('link', { name: 'e2e disks 2', exact: true }).count(), 1);
});

test('a legend key drills down: a disk of io.ops[disk] by type of operation, as the appliance does', async (t) => {
  const page = await openAs(t, 'worksheets/new');
  await page.waitForSelector('body[data-ready="worksheet"]');
  const io = await addChart(page, 'io.ops', 'disk');
  await page.waitForFunction(() => document.querySelectorAll(
    'section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key="sdc"]').length === 1);
  const drill = io.locator('.ws-legend tr[data-key="sdc"] select.ws-drill');
  assert.deepEqual(await drill.locator('option').allTextContents(),
    ['Drill down…', 'sdc by type of operation', 'sdc by latency', 'sdc by size', 'sdc by offset']);
  // choosing it leaves the row's focus alone, and adds the chart (its dataset made now)
  await drill.selectOption({ label: 'sdc by type of operation' });
  const name = 'io.ops[disk=sdc][op]';
  await page.waitForSelector(`section.ws-chart[data-dataset="${name}"] .ws-legend tbody tr[data-key="read"]`);
  assert.deepEqual(await chartNames(page), ['io.ops[disk]', name]);
  assert.equal(await page.locator(`section.ws-chart[data-dataset="${name}"] h2`).textContent(),
    'Disk: I/O operations per second broken down by type of operation, of disk sdc');
  assert.equal(await io.locator('.ws-legend tr[data-key="sdc"] button').getAttribute('aria-pressed'), 'false');
  // the new chart's keys drill no further (it is kept to one disk already)
  assert.equal(await page.locator(`section.ws-chart[data-dataset="${name}"] select.ws-drill`).count(), 0);
  // the server collects it, as a script would see it
  const d = await page.evaluate(async (n) => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    const r = await fetch(`/api/analytics/v1/datasets/${encodeURIComponent(n)}`, { headers: { 'X-Auth-Session': token } });
    return r.ok ? (await r.json()).dataset : r.status;
  }, name);
  assert.equal(d.title, 'Disk: I/O operations per second broken down by type of operation, of disk sdc');
  await shots(page, 'worksheet-drilldown', { inPlace: true });
});

test('a window from a time to a time, in the browser’s zone, the box’s beside it', async (t) => {
  // a browser five and a half hours east of UTC: what it types is its own local time
  const uuid = await createWorksheet(box, 'e2e from-to', ['io.ops'], 600);
  const page = await openAs(t, `worksheets/${uuid}`, { tz: 'Asia/Kolkata' });
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  await page.getByRole('button', { name: 'From–to…' }).click();
  const zone = await page.locator('#ws-pick-zone').textContent();
  await page.waitForFunction(() => !document.querySelector('#ws-pick-zone').textContent.includes('…'));
  assert.match(await page.locator('#ws-pick-zone').textContent(), /^Times in your local time \(UTC\+05:30\)\. The box's clock: \S+ \(UTC[+−]\d\d:\d\d\)\.$/, zone);
  // From is prefilled with the window shown; a refused window says why, and changes nothing
  // (a time on the minute reads back without its seconds: Chromium's shortest form)
  assert.match(await page.locator('#ws-from').inputValue(), /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/);
  const before = page.url();
  const now = Math.floor(Date.now() / 1000);
  const local = (t) => new Date((t + 5.5 * 3600) * 1000).toISOString().slice(0, 19); // Kolkata wall clock
  // typed as Chromium keeps it, which drops ":00" seconds (fill refuses a value that reads back otherwise)
  const type = (sel, t) => page.locator(sel).fill(local(t).replace(/:00$/, ''));
  await type('#ws-from', now - 200);
  await type('#ws-to', now - 195);
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  assert.match(await page.locator('#ws-pick-error').textContent(), /at least 10 seconds/);
  assert.equal(page.url(), before);
  await shots(page, 'worksheet-from-to-open', { inPlace: true }); // the picker, its fault shown
  // two minutes that ended three minutes ago: paused on exactly that window
  await type('#ws-to', now - 180);
  await type('#ws-from', now - 300);
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  await page.waitForFunction((end) => location.hash.includes(`seconds=120&end=${end}`), now - 180);
  assert.equal(await page.locator('#ws-pick').isHidden(), true);
  assert.equal(await page.locator('.ws-live').getAttribute('aria-pressed'), 'false');
  // the range said in the browser's zone: the same wall clock as typed
  const clock = (t) => local(t).slice(11, 19);
  await page.waitForFunction((want) => document.querySelector('.ws-range').textContent.includes(want), `${clock(now - 300)} – ${clock(now - 180)}`);
  await shots(page, 'worksheet-from-to', { inPlace: true });
});

test('a dashboard tile opens a new worksheet with its dataset', async (t) => {
  const page = await openAs(t, 'worksheets/new?dataset=io.ops');
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.deepEqual(await chartNames(page), ['io.ops']);
  const cells = await page.locator('section[data-dataset="io.ops"] .ws-legend tbody tr').first().locator('td').allTextContents();
  for (const c of cells) assert.match(c, /^[0-9.]+[kMG]?$/);
  assert.equal(await page.locator('.ws-dirty').isVisible(), true, 'unsaved until saved');

  // Live, it asks for data every second; not while the page is hidden.
  let asked = 0;
  page.on('request', (r) => { if (r.url().includes('/data?')) asked++; });
  await page.waitForTimeout(3000);
  assert.ok(asked >= 2, `live: ${asked} data requests in 3 s`); // a probe and the chart's, at least
  await page.evaluate(() => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await page.waitForTimeout(1200); // one already under way may finish
  asked = 0;
  await page.waitForTimeout(2500);
  assert.equal(asked, 0, 'no requests while hidden');
  await page.evaluate(() => {
    delete document.hidden;
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await page.waitForTimeout(1500);
  assert.ok(asked >= 1, 'asking again once shown');
});

test('live, a chart asks the box for its top N once, then only for the seconds it lacks', async (t) => {
  const uuid = await createWorksheet(box, 'e2e incremental', ['io.ops[disk]'], 600);
  const page = await openAs(t, `worksheets/${uuid}`);
  const io = page.locator('section.ws-chart[data-dataset="io.ops[disk]"]');
  await io.locator('.ws-legend tbody tr[data-key]').first().waitFor();
  const asked = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    // the chart's, not the probe for the newest second (start=-1)
    if (u.pathname.endsWith('/data') && u.pathname.includes('io.ops%5Bdisk%5D') && u.searchParams.get('start') !== '-1')
      asked.push(u.searchParams);
  });
  await io.locator('select.ws-top').selectOption('4');
  await page.waitForFunction(() => document.querySelectorAll(
    'section[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key]').length === 5);
  const legend = await io.locator('.ws-legend tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
  assert.equal(legend[4], 'other');
  assert.match(await io.locator('.ws-legend tbody tr[data-key="other"] button').textContent(), /^other \(4\)/);
  const shown = legend.slice(0, 4);
  // the whole window once, ranked by the box; then each second only what is new, for
  // the same four (the box sums the other four)
  await until('three refreshes after the ranking', async () => asked.length >= 4, 15000);
  const first = asked.findIndex((p) => p.get('top') === '4');
  assert.ok(first >= 0, asked.map(String).join('\n'));
  assert.equal(asked[first].get('seconds'), '600');
  const later = asked.slice(first + 1);
  assert.ok(later.length >= 2, asked.map(String).join('\n'));
  for (const p of later) {
    assert.equal(p.get('top'), null, String(p));
    assert.deepEqual(p.get('keys').split(','), shown, String(p));
    assert.ok(Number(p.get('seconds')) <= 5, `a refresh asks for what it lacks: ${p}`);
  }
  // what the chart holds, pieced together, is what the box stored: its CSV against the
  // same window asked whole
  const [dl] = await Promise.all([page.waitForEvent('download'), io.getByRole('button', { name: /CSV/ }).click()]);
  const lines = readFileSync(await dl.path(), 'utf8').trim().split('\r\n');
  assert.deepEqual(lines[0].split(','), ['time', ...shown, 'other']);
  const csvRows = lines.slice(1).map((l) => l.split(','));
  const t0 = Date.parse(csvRows[0][0]) / 1000;
  const admin = await adminClient(box);
  const doc = await expectStatus(await admin.get(`/api/analytics/v1/datasets/io.ops%5Bdisk%5D/data?start=${t0}&seconds=${csvRows.length}&granularity=second&keys=${shown.join(',')}`), 200);
  const stored = new Map(doc.data.map((s) => [s.sample, s.data]));
  let compared = 0;
  for (const row of csvRows) {
    const at = Date.parse(row[0]) / 1000;
    const want = stored.get(at);
    for (let i = 1; i < row.length; i++) {
      if (row[i] === '') continue;
      assert.ok(want, `the chart has ${row[0]}, the box not`);
      const v = i <= shown.length ? want.data.find((kv) => kv.key === shown[i - 1])?.value : want.other;
      assert.equal(Number(row[i]), v, `${lines[0].split(',')[i]} at ${row[0]}`);
      compared++;
    }
  }
  assert.ok(compared >= 20, `${compared} values compared`);
});

test('a monitor user sees a saved worksheet read-only on a phone', async (t) => {
  const uuid = await createWorksheet(box, 'e2e monitor view', ['cpu.utilization', 'io.ops[disk]']);
  const monitor = await createMonitor(box);
  const page = await openAs(t, `worksheets/${uuid}`, { ...monitor, user: monitor.name, phone: true });
  await assertReadOnly(page, ['cpu.utilization', 'io.ops[disk]']);
  // The list too: open only.
  await page.goto(`${box.https}/#/worksheets`);
  await page.waitForSelector('body[data-ready="worksheets"]');
  assert.equal(await page.getByRole('link', { name: 'New worksheet' }).count(), 0);
  for (const b of ['Rename', 'Clone', 'Delete'])
    assert.equal(await page.getByRole('button', { name: new RegExp(`^${b} `) }).count(), 0, b);
});

test('series: the time grid, top N and other, CSV (pure functions, in node)', async () => {
  const { collapse, csv, mergeSamples, shape, stats } = await import('../../webroot/js/ws/series.js');
  // Samples of 2 s from 100; the one at 104 is missing: a gap (null), not a join.
  const resp = {
    meta: { sample: 100, sample_seconds: 2 },
    data: [
      { sample: 100, data: { value: 6, data: [{ key: 'a', value: 4 }, { key: 'b', value: 2 }] } },
      { sample: 102, data: { value: 9, data: [{ key: 'a', value: 5 }, { key: 'c', value: 4 }] } },
      { sample: 106, data: { value: 3, data: [{ key: 'b', value: 3 }] } },
    ],
  };
  const drilled = shape(resp, 108, 'x[k]', true);
  assert.deepEqual(drilled.xs, [100, 102, 104, 106]);
  assert.deepEqual(drilled.keys.find((k) => k.key === 'a').values, [4, 5, null, null]);
  const total = shape(resp, 108, 'x', false);
  assert.deepEqual(total.keys, [{ key: 'x', values: [6, 9, null, 3] }]);
  assert.deepEqual(stats([null, 3, 1, null, 2]), { cur: 2, min: 1, max: 3, avg: 2 });
  // Top 1 of three keys: the largest mean, then "other" summing the two others.
  const top = collapse(drilled.keys, 1);
  assert.deepEqual(top.map((s) => s.key), ['a', 'other']);
  assert.deepEqual(top[1].values, [2, 4, null, 3]);
  assert.equal(top[1].count, 2);
  // Top 2 of three: never one key folded alone into "other".
  assert.deepEqual(collapse(drilled.keys, 2).map((s) => s.key), ['a', 'c', 'b']);
  // Chosen keys, in their order, even one never seen.
  assert.deepEqual(collapse(drilled.keys, 8, ['b', 'zz']).map((s) => [s.key, s.values.length]), [['b', 4], ['zz', 4]]);
  assert.equal(csv(drilled.xs.slice(0, 2), [{ key: 'a,1', values: [4, 5] }, { key: 'b', values: [null, 1.5] }]),
    'time,"a,1",b\r\n1970-01-01T00:01:40Z,4,\r\n1970-01-01T00:01:42Z,5,1.5\r\n');
  // The box's top N (meta.keys, each a series even unseen) and its "other" column.
  const ranked = shape({
    meta: { sample: 100, sample_seconds: 2, keys: ['a', 'z'], other_keys: 5 },
    data: [
      { sample: 100, data: { value: 6, other: 2, data: [{ key: 'a', value: 4 }] } },
      { sample: 102, data: { value: 9, other: 0, data: [{ key: 'a', value: 9 }] } },
    ],
  }, 106, 'x[k]', true);
  assert.deepEqual(ranked.keys.map((k) => [k.key, k.values]), [['a', [4, 9, null]], ['z', [null, null, null]]]);
  assert.deepEqual([ranked.other, ranked.others], [[2, 0, null], 5]);
  assert.equal(drilled.other, null);
  // A window moved on by what was asked since: the old samples from its start up to
  // where the new ones start (the newest old one, maybe incomplete then, replaced).
  const old = [{ sample: 10 }, { sample: 11 }, { sample: 12 }, { sample: 13 }];
  assert.deepEqual(mergeSamples(old, [{ sample: 13, n: 2 }, { sample: 14 }], 11, 13).map((x) => x.n ?? x.sample),
    [11, 12, 2, 14]);
  assert.deepEqual(mergeSamples(old, { sample: 14 }, 12, 14).map((x) => x.sample), [12, 13, 14]);
  assert.deepEqual(mergeSamples(old, null, 12, 14).map((x) => x.sample), [12, 13]);
});

test('figure: drawing a 64-series hour', async (t) => {
  const page = await openAs(t, 'worksheets');
  const ms = await page.evaluate(async () => {
    const { chart } = await import('/js/chart.js');
    const el = document.createElement('div');
    el.className = 'ws-plot';
    document.getElementById('main').append(el);
    const n = 3600;
    const t0 = Math.floor(Date.now() / 1000) - n;
    const xs = Array.from({ length: n }, (_, i) => t0 + i);
    const data = [xs];
    for (let s = 0; s < 64; s++) data.push(xs.map((_, i) => 100 + 50 * Math.sin((i + s * 37) / 60) + (i * s) % 17));
    const began = performance.now();
    const c = chart(el, { series: data.slice(1).map((_, i) => ({ label: `disk${i}` })), yZero: true });
    c.setWindow(xs[0], xs[n - 1] + 1);
    c.setData(data);
    await new Promise((r) => setTimeout(r, 0)); // uPlot draws in a microtask after setData
    const took = performance.now() - began;
    c.destroy();
    el.remove();
    return took;
  });
  figure('draw_64x3600_ms', Math.round(ms), 'ms');
});
