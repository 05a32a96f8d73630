// SPDX-License-Identifier: ISC
// Heat maps in worksheets: io.ops[latency] (from the fake box's scripted eBPF helper) and
// io.disks[utilization] added through the console's form, drawn as coloured cells in the
// rows of the buckets the box sends, read under the cursor (range, time, value), saved
// and seen again after a reload, zoomed by a drag; a tap pins the readout on a phone; the
// time to paint 10 minutes of every latency bucket; and the buckets' pure functions in
// node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { figure, login, shots, start } from './harness.mjs';

const { box, newPage } = await start();

const LATENCY = 'io.ops[latency]';
const DISKS = 'io.disks[utilization]';
// The latency buckets box.py's helper sends every second, as the readout names them: sdd's
// steady 10 reads a second, and sda's reads spread over four buckets.
const STEADY = ['32768-40960', '32.8\u00a0µs – 41\u00a0µs'];
const FAST = [
  ['131072-163840', '131\u00a0µs – 164\u00a0µs'],
  ['163840-196608', '164\u00a0µs – 197\u00a0µs'],
  ['196608-229376', '197\u00a0µs – 229\u00a0µs'],
  ['229376-262144', '229\u00a0µs – 262\u00a0µs'],
];

const section = (name) => `section.ws-chart[data-dataset="${name}"]`;
// sdd's 10 reads a second, as a second's cell reads them: the box's helper sends each
// second at its half, and on a busy machine one comes late, so a second may hold two
// (20) and the next none; the test box's rates are otherwise exact.
const STEADY_VALUE = /^[1-9]0\u00a0ops\/s$/;

// Collects a dataset (as the form does when it is not yet), over the box's plain-HTTP
// listener, so a test needs no other to have added it.
async function collect(statistic, drilldown) {
  const res = await fetch(`${box.http}/api/analytics/v1/datasets`, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from(`admin:${box.admin_password}`).toString('base64')}`,
      'Content-Type': 'application/json',
    },
    body: JSON.stringify({ statistic, drilldown }),
  });
  // 409: collected already
  assert.ok(res.ok || res.status === 409, `collect ${statistic}[${drilldown}]: ${res.status} ${await res.text()}`);
}

async function openAs(t, route, variant = {}) {
  const page = await newPage(t, variant);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(route)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  return page;
}

// Adds a chart through the form, as a user does.
async function addChart(page, statistic, drilldown) {
  if (await page.locator('#ws-add').isHidden()) await page.getByRole('button', { name: 'Add chart' }).click();
  await page.selectOption('#ws-add-stat', statistic);
  await page.selectOption('#ws-add-drill', { value: drilldown });
  await page.locator('#ws-add').getByRole('button', { name: 'Add', exact: true }).click();
  const chart = page.locator(section(`${statistic}[${drilldown}]`));
  await chart.waitFor();
  return chart;
}

// Waits until the heat map of `name` has drawn at least `cells` cells; returns how many.
async function cellsDrawn(page, name, cells) {
  const sel = `${section(name)} .ws-plot`;
  await page.waitForFunction(([s, n]) => Number(document.querySelector(s)?.dataset.cells) >= n,
    [sel, cells], { timeout: 30000 });
  return Number(await page.locator(sel).getAttribute('data-cells'));
}

// The alpha of each pixel (top to bottom, in CSS px of the plot area) of the heat map's
// canvas in the column at fraction fx of the plot's width: 255 where a cell is painted,
// the grid's faint lines or 0 elsewhere.
async function alphaColumn(page, name, fx) {
  return page.evaluate(([sel, f]) => {
    const s = document.querySelector(sel);
    const canvas = s.querySelector('.ws-plot canvas');
    const over = s.querySelector('.u-over');
    const cb = canvas.getBoundingClientRect();
    const ob = over.getBoundingClientRect();
    const k = canvas.width / cb.width;
    const x = Math.round((ob.left - cb.left + ob.width * f) * k);
    const y0 = Math.round((ob.top - cb.top) * k);
    const px = canvas.getContext('2d').getImageData(x, y0, 1, Math.round(ob.height * k)).data;
    const out = [];
    for (let y = 0; y < ob.height; y++) out.push(px[Math.round(y * k) * 4 + 3]);
    return out;
  }, [section(name), fx]);
}

const readout = async (page, name) => {
  const r = page.locator(`${section(name)} .ws-heat-readout`);
  return {
    range: await r.locator('.ws-heat-range').textContent(),
    value: await r.locator('.ws-heat-value').textContent(),
    time: await r.locator('time').first().getAttribute('datetime').catch(() => null),
    hint: await r.locator('.ws-heat-hint').isVisible(),
  };
};

// The readout shows a cell (the cursor's move is drawn in the next frame).
const hintGone = (page, name) =>
  page.waitForFunction((s) => document.querySelector(s).hidden, `${section(name)} .ws-heat-hint`);

// Moves the mouse down the heat map at fraction fx of its width; returns, for each range
// the readout named, the first y (CSS px in the plot area) and the readout there.
async function scan(page, name, fx) {
  const overEl = page.locator(`${section(name)} .u-over`);
  await overEl.scrollIntoViewIfNeeded();
  const over = await overEl.boundingBox();
  const seen = new Map();
  for (let y = 1; y < over.height; y += 2) {
    await page.mouse.move(over.x + over.width * fx, over.y + y);
    const r = await readout(page, name);
    if (!r.hint && !seen.has(r.range)) seen.set(r.range, { y, ...r });
  }
  return seen;
}

// The first of the columns `backs` (seconds back from the paused window's end) where sdd's
// steady bucket has its reads (see STEADY_VALUE: a second whose lines came late has none),
// with what the readout named down that column ({range: {y, value, ...}}).
async function steadyColumn(page, name, backs) {
  let seen = new Map();
  for (const back of backs) {
    seen = await scan(page, name, 1 - back / 60);
    const at = seen.get(STEADY[1]);
    if (at && STEADY_VALUE.test(at.value)) return { back, fx: 1 - back / 60, seen };
  }
  assert.fail(`no column ${backs.join(', ')} s back has sdd's reads: ${[...seen].map(([r, v]) => `${r}: ${v.value}`).join('; ')}`);
}

test('a heat map of one disk and one direction, chosen in the form', async (t) => {
  const page = await openAs(t, 'worksheets/new');
  if (await page.locator('#ws-add').isHidden()) await page.getByRole('button', { name: 'Add chart' }).click();
  await page.selectOption('#ws-add-stat', 'io.ops');
  await page.selectOption('#ws-add-drill', { value: 'disk' });
  assert.equal(await page.locator('#ws-add-disk').isHidden(), true, 'by disk: no disk to keep to');
  assert.equal(await page.locator('#ws-add-op').isHidden(), true, 'by disk: no direction');
  await page.selectOption('#ws-add-drill', { value: 'latency' });
  // the disks the collector counts, as io.ops[disk] names them
  await page.waitForFunction(() => document.querySelectorAll('#ws-add-disk option').length > 1);
  const disks = await page.locator('#ws-add-disk option').evaluateAll((os) => os.map((o) => o.value));
  assert.ok(disks[0] === '' && disks.includes('sdd') && disks.includes('sda'), disks.join(','));
  await page.selectOption('#ws-add-disk', 'sdd');
  await page.selectOption('#ws-add-op', 'read');
  const name = 'io.ops[disk=sdd][op=read][latency]';
  assert.match(await page.locator('#ws-add-drill-hint').textContent(), /io\.ops\[disk=sdd\]\[op=read\]\[latency\] is not collected yet/);
  await page.locator('#ws-add').getByRole('button', { name: 'Add', exact: true }).click();
  const chart = page.locator(section(name));
  await chart.waitFor();
  assert.match(await chart.getAttribute('class'), /\bws-heat\b/);
  await page.getByRole('button', { name: '1 min', exact: true }).click();
  await cellsDrawn(page, name, 6); // seconds of sdd's one bucket
  assert.equal(await chart.locator('p.error').textContent(), '');
  // sdd's reads alone: its steady bucket, none of sda's (paused, a recent column)
  await page.locator('.ws-live').click();
  const { seen } = await steadyColumn(page, name, [2.5, 3.5, 4.5, 5.5]);
  assert.deepEqual([...seen.keys()].filter((r) => !r.startsWith('≈')), [STEADY[1]],
    `only sdd's bucket: ${[...seen.keys()].join(', ')}`);
});

test('io.ops[latency] and io.disks[utilization] as heat maps: add, read, save, reload', async (t) => {
  assert.deepEqual(box.iolat.latency_keys, [STEADY[0], ...FAST.map(([k]) => k)],
    'the buckets box.py sends are the ones this test reads');
  const page = await openAs(t, 'worksheets/new');

  // io.ops offers latency only because the helper answers; adding it starts collecting it.
  const lat = await addChart(page, 'io.ops', 'latency');
  assert.match(await lat.getAttribute('class'), /\bws-heat\b/);
  assert.equal(await lat.locator('.ws-plot').getAttribute('aria-label'), `Heat map of ${LATENCY}`);
  // the top N and the keys chooser are for lines
  assert.equal(await lat.locator('select.ws-top').isHidden(), true);
  assert.equal(await lat.getByRole('button', { name: `Choose the keys of ${LATENCY}` }).isHidden(), true);
  assert.match(await lat.locator('.ws-heat-scale').textContent(), /^ops\/s per range:0/);

  // One minute: columns of a second some 19 px wide. Wait for seconds of data.
  await page.getByRole('button', { name: '1 min', exact: true }).click();
  await page.waitForFunction(() => / · 1 min · /.test(document.querySelector('.ws-range').textContent));
  // Nine seconds of the helper's eight rows at least: every seventh second adds sdc's slow
  // outlier, the highest row, so from then on (for the window's minute) the heat map's
  // range of latencies, and so every row's place, holds still.
  const cells = await cellsDrawn(page, LATENCY, 8 * 9);
  assert.ok(cells <= 60 * 20, `no more cells than seconds x buckets: ${cells}`);
  assert.equal(await lat.locator('p.error').textContent(), '');

  // Paused, so the window holds still while the mouse goes down a column some seconds
  // back: every bucket the helper sends is a row of the readout, with a value, and its
  // pixels are painted; between them, nothing is.
  await page.locator('.ws-live').click();
  await page.waitForFunction(() => !/ live$/.test(document.querySelector('.ws-range').textContent));
  const { back, fx, seen } = await steadyColumn(page, LATENCY, [4.5, 6.5, 8.5, 10.5]);
  const alpha = await alphaColumn(page, LATENCY, fx);
  for (const [key, text] of [STEADY, ...FAST]) {
    const at = seen.get(text);
    assert.ok(at, `a row for ${key} ("${text}"); the readout named ${[...seen.keys()].join(', ')}`);
    assert.match(at.value, /^[1-9]\d*\u00a0ops\/s$/, `${text}: ${at.value}`);
    assert.equal(alpha[at.y + 1], 255, `${text}: painted at y ${at.y + 1}: ${alpha.slice(at.y - 2, at.y + 5)}`);
  }
  const steady = seen.get(STEADY[1]);
  const fast = seen.get(FAST[0][1]);
  const gap = Math.round((steady.y + fast.y) / 2); // 41-131 us: no bucket there
  assert.ok(alpha[gap] < 128, `nothing painted between the rows: alpha ${alpha[gap]} at y ${gap}`);
  // lower latencies lower down
  assert.ok(steady.y > fast.y, `32.8 us (y ${steady.y}) below 131 us (y ${fast.y})`);

  // The readout's time is the column's: `back` seconds before the window's end.
  const [, end] = await page.locator('.ws-range time').evaluateAll((ts) => ts.map((e) => Date.parse(e.getAttribute('datetime')) / 1000));
  const at = Date.parse(steady.time) / 1000;
  assert.ok(Math.abs(end - back - at) <= 1, `the cell's second ${at}, the window's end ${end}`);
  await page.locator('.ws-live').click();
  await page.waitForFunction(() => / live$/.test(document.querySelector('.ws-range').textContent));
  // It stays when the cursor leaves (a tap pins it so on a phone), through refreshes.
  const over = await lat.locator('.u-over').boundingBox();
  await page.mouse.move(over.x + over.width * fx, over.y + steady.y + 1);
  await page.mouse.move(1, 1);
  await page.waitForTimeout(1200); // a refresh goes by
  const kept = await readout(page, LATENCY);
  assert.deepEqual([kept.hint, kept.range], [false, STEADY[1]]);
  // (live, the mouse fell on whichever second was there then: one of late lines has none,
  // and on a busy machine one whose line came after its tick holds no sample at all)
  assert.match(kept.value, /^((0|[1-9]0)\u00a0ops\/s|no sample)$/);
  // Between the rows, no bucket had any: the readout says where and that it was none.
  await page.mouse.move(over.x + over.width * fx, over.y + gap);
  await page.waitForFunction((s) => /^≈/.test(document.querySelector(s).textContent), `${section(LATENCY)} .ws-heat-range`);
  assert.equal((await readout(page, LATENCY)).value, '0\u00a0ops/s');

  // The legend's figures by range, folded away; a range selected outlines its row.
  const values = lat.locator('details.ws-heat-values');
  assert.equal(await values.getAttribute('open'), null);
  await values.locator('summary').click();
  const rows = await lat.locator('.ws-legend tbody tr').evaluateAll((trs) => trs.map((r) => r.dataset.key));
  for (const [key] of [STEADY, ...FAST]) assert.ok(rows.includes(key), `${key} in the legend: ${rows}`);
  assert.ok(rows.indexOf(STEADY[0]) < rows.indexOf(FAST[0][0]), 'lowest range first');
  // CSV: a column per range, in the same order.
  const [dl] = await Promise.all([page.waitForEvent('download'), lat.getByRole('button', { name: /CSV/ }).click()]);
  const header = readFileSync(await dl.path(), 'utf8').split('\r\n')[0].split(',');
  assert.deepEqual(header, ['time', ...rows]);

  // io.disks[utilization], collected by default: a heat map of percent busy, the value
  // the number of disks (the box's eight are alike, so all in one range).
  const disks = await addChart(page, 'io.disks', 'utilization');
  assert.match(await disks.getAttribute('class'), /\bws-heat\b/);
  await cellsDrawn(page, DISKS, 5);
  assert.equal(await disks.locator('p.error').textContent(), '');
  // paused, so the column under the mouse is still the one whose pixels were read (the
  // disks' busy share swings with the box's rates: a second later it may be another range)
  await page.locator('.ws-live').click();
  await page.waitForFunction(() => !/ live$/.test(document.querySelector('.ws-range').textContent));
  // down the same column: a range of percent busy, holding the box's eight disks (alike,
  // so all in one range); the latency map above holds its pixels to its readout
  const dSeen = await scan(page, DISKS, fx);
  const busy = [...dSeen].filter(([r]) => /^\d+\u00a0% – \d+\u00a0% busy$/.test(r));
  assert.ok(busy.length >= 1, `a range of the disks: ${[...dSeen.keys()].join(', ')}`);
  // (the window's other ranges are rows too, with none of this second's disks)
  const dValues = busy.map(([, d]) => d.value);
  assert.ok(dValues.filter((v) => v === '8\u00a0disks').length === 1 && dValues.every((v) => /^[08]\u00a0disks$/.test(v)),
    busy.map(([r, d]) => `${r}: ${d.value}`).join('; '));
  assert.match(await disks.locator('.ws-heat-scale').textContent(), /^disks per range:0/);
  await page.locator('.ws-live').click();
  await page.waitForFunction(() => / live$/.test(document.querySelector('.ws-range').textContent));

  // Saved and reloaded: the same heat maps, drawn again.
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  const dlg = page.locator('dialog.ws-dialog[open]');
  await dlg.locator('input').fill('e2e heat maps');
  await dlg.getByRole('button', { name: 'Save' }).click();
  await page.waitForFunction(() => /^#\/worksheets\/[0-9a-f-]{36}$/.test(location.hash));
  await page.reload();
  await page.waitForSelector('body[data-ready="worksheet"]');
  assert.deepEqual(await page.locator('section.ws-chart').evaluateAll((els) => els.map((e) => e.dataset.dataset)), [LATENCY, DISKS]);
  assert.match(await page.locator(section(LATENCY)).getAttribute('class'), /\bws-heat\b/);
  await cellsDrawn(page, LATENCY, 8 * 5);
  await cellsDrawn(page, DISKS, 5);
  await shots(page, 'worksheet-heatmap');

  // Dragging across a heat map zooms into that stretch, as across the other charts.
  const box1 = await page.locator(`${section(LATENCY)} .u-over`).boundingBox();
  await page.mouse.move(box1.x + box1.width * 0.5, box1.y + 20);
  await page.mouse.down();
  await page.mouse.move(box1.x + box1.width * 0.8, box1.y + 20, { steps: 5 });
  await page.mouse.up();
  assert.equal(await page.locator('.ws-live').getAttribute('aria-pressed'), 'false');
  await page.waitForFunction(() => / · 1[6-9] s · /.test(document.querySelector('.ws-range').textContent));
  await cellsDrawn(page, LATENCY, 5);
});

test('a tap on a heat map pins its readout on a phone', async (t) => {
  await collect('io.ops', 'latency');
  const page = await openAs(t, `worksheets/new?dataset=${encodeURIComponent(LATENCY)}`, { phone: true });
  await cellsDrawn(page, LATENCY, 5);
  const r0 = await readout(page, LATENCY);
  assert.equal(r0.hint, true, 'a hint until a cell is read');
  const fx = 0.97;
  const alpha = await alphaColumn(page, LATENCY, fx);
  const y = alpha.findIndex((a) => a === 255);
  assert.ok(y >= 0, 'a painted cell near the newest second');
  const overEl = page.locator(`${section(LATENCY)} .u-over`);
  await overEl.scrollIntoViewIfNeeded();
  const over = await overEl.boundingBox();
  await page.touchscreen.tap(over.x + over.width * fx, over.y + y + 1);
  await hintGone(page, LATENCY);
  const r = await readout(page, LATENCY);
  assert.match(r.range, /^[\d.]+\u00a0[µm]s – [\d.]+\u00a0[µm]s$/);
  assert.match(r.value, /ops\/s$/);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scrolling: ${width} px`);
});

test('figure: painting 10 minutes of every latency bucket', async (t) => {
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login?next=worksheets`);
  await login(page, null, 'admin', box.admin_password);
  const { ms, cells, redraw } = await page.evaluate(async () => {
    const { heatmap } = await import('/js/heatmap.js');
    const el = document.createElement('div');
    el.className = 'ws-plot';
    document.getElementById('main').append(el);
    const n = 600;
    const t0 = Math.floor(Date.now() / 1000) - n;
    const xs = Array.from({ length: n }, (_, i) => t0 + i);
    // 106 buckets a quarter of a power of two each, every cell with a value
    const rows = Array.from({ length: 106 }, (_, r) => ({
      key: String(r), y0: 10 + r / 4, y1: 10.25 + r / 4,
      values: xs.map((_, i) => 1 + ((i * 7 + r * 13) % 50)),
    }));
    const began = performance.now();
    const m = heatmap(el, { yRange: () => [10, 37], yTicks: (a, b) => [a, b], yText: String });
    m.setWindow(xs[0], xs[n - 1] + 1);
    m.setData({ xs, step: 1, rows });
    await new Promise((r) => setTimeout(r, 0)); // uPlot draws in a microtask after setData
    const took = performance.now() - began;
    const b2 = performance.now();
    for (let k = 0; k < 5; k++) {
      m.setData({ xs, step: 1, rows });
      await new Promise((r) => setTimeout(r, 0));
    }
    const redraw = (performance.now() - b2) / 5;
    const drawn = Number(el.dataset.cells);
    m.destroy();
    el.remove();
    return { ms: took, cells: drawn, redraw };
  });

  assert.equal(cells, 600 * 106);
  figure('draw_heatmap_600x106_ms', Math.round(ms), 'ms');
  figure('redraw_heatmap_600x106_ms', Math.round(redraw), 'ms');
});

test('buckets: which datasets are heat maps, rows, ranges, ticks (pure functions, in node)', async () => {
  const b = await import('../../webroot/js/ws/buckets.js');
  // the drilldown's name and the keys' shape decide, not a list of datasets
  assert.equal(b.heatKind('io.ops[latency]', ['0-1024', '28672-32768', '68719476736+']), 'latency');
  assert.equal(b.heatKind('io.ops[disk=sda][latency]', ['28672-32768']), 'latency');
  assert.equal(b.heatKind('io.ops[latency]', []), 'latency', 'before its first second');
  assert.equal(b.heatKind('io.ops[latency]', ['sda']), null, 'keys that are no ranges: lines');
  assert.equal(b.heatKind('io.ops[disk]', ['0-1']), null, 'ranges of another drilldown: lines');
  assert.equal(b.heatKind('cpu.utilization[utilization]', ['0-5', '95-100']), 'utilization');
  assert.equal(b.heatKind('io.ops', []), null);
  // zpool iostat's waits are latencies, its sizes sizes
  assert.equal(b.heatKind('zpool.vdev_ops[op=read][disk_wait]', ['32768-65536', '68719476736+']), 'latency');
  assert.equal(b.heatKind('zpool.vdev_ops[size]', ['8192-16384']), 'size');
  // rows lowest first, on a log2 axis for latency; the first and the open last get a height
  const rows = b.rows('latency', ['68719476736+', '32768-40960', '0-1024']);
  assert.deepEqual(rows.map((r) => r.key), ['0-1024', '32768-40960', '68719476736+']);
  assert.deepEqual(rows.map((r) => [r.y0, r.y1]), [[9.75, 10], [15, Math.log2(40960)], [36, 36.25]]);
  assert.deepEqual(rows.map((r) => b.rangeText('latency', r)),
    ['0\u00a0ns – 1.02\u00a0µs', '32.8\u00a0µs – 41\u00a0µs', '≥\u00a068.7\u00a0s']);
  assert.deepEqual(b.yRange('latency', rows), [9, 37]);
  assert.deepEqual(b.yRange('latency', rows.slice(1, 2)), [14, 18], 'at least four powers of two');
  assert.deepEqual(b.yRange('offset', []), [0, 64]);
  assert.equal(b.rangeText('size', b.rows('size', ['8192-16384'])[0]), '8\u00a0KiB – 16\u00a0KiB');
  assert.equal(b.rangeText('offset', b.rows('offset', ['16-17'])[0]), '25\u00a0% – 26.6\u00a0% of the device');
  assert.equal(b.rangeText('utilization', b.rows('utilization', ['95-100'])[0]), '95\u00a0% – 100\u00a0% busy');
  // ticks: round numbers of the unit, as many as there is room for
  assert.deepEqual(b.ticks('latency', 10, 20, 9).map((v) => b.axisText('latency', v)),
    ['2\u00a0µs', '5\u00a0µs', '10\u00a0µs', '20\u00a0µs', '50\u00a0µs', '100\u00a0µs', '200\u00a0µs', '500\u00a0µs', '1\u00a0ms']);
  assert.deepEqual(b.ticks('latency', 10, 20, 8).map((v) => b.axisText('latency', v)),
    ['3\u00a0µs', '10\u00a0µs', '30\u00a0µs', '100\u00a0µs', '300\u00a0µs', '1\u00a0ms'], 'fewer when there is less room');
  assert.deepEqual(b.ticks('latency', 10, 30, 4).map((v) => b.axisText('latency', v)),
    ['10\u00a0µs', '1\u00a0ms', '100\u00a0ms']);
  assert.deepEqual(b.ticks('offset', 0, 64, 8).map((v) => b.axisText('offset', v)),
    ['0\u00a0%', '25\u00a0%', '50\u00a0%', '75\u00a0%', '100\u00a0%']);
  assert.equal(b.valueNoun('cpu.utilization[utilization]', 'percent'), 'CPUs');
  assert.equal(b.valueNoun('io.disks[utilization]', 'disks'), 'disks');
  assert.equal(b.valueNoun(LATENCY, 'operations per second'), 'ops/s');
});
