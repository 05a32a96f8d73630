// SPDX-License-Identifier: ISC
// Values under the cursor: a worksheet chart shows, where the pointer is, the time and the
// value the box stored for that second (the fake counters' own, read back from the API),
// and the legend's first column shows that second's values; on a phone a tap shows it and
// leaves it there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, login, shots, start } from './harness.mjs';
import { createWorksheet } from './worksheets.mjs';

const { box, newPage } = await start();
const admin = await adminClient(box);
const uuid = await createWorksheet(box, 'readout', ['io.ops'], 120);

async function openSheet(t, phone) {
  const page = await newPage(t, { phone });
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="worksheet"]');
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .ws-legend tbody tr[data-key]');
  return page;
}

// The readout's time (as epoch seconds, read in the page's own zone) and value text, at once.
const readTip = (page) =>
  page.evaluate(() => {
    const tip = document.querySelector('section.ws-chart[data-dataset="io.ops"] .chart-tip');
    if (!tip || tip.hidden) return null;
    const x = tip.querySelector('.chart-tip-x').textContent;
    const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)( UTC)?$/.exec(x);
    const parts = m.slice(1, 7).map(Number);
    const t = m[7] ? Date.UTC(parts[0], parts[1] - 1, ...parts.slice(2)) : new Date(parts[0], parts[1] - 1, ...parts.slice(2)).getTime();
    const legend = document.querySelector('section.ws-chart[data-dataset="io.ops"] .ws-legend');
    return {
      x, t: t / 1000, value: tip.querySelector('.chart-tip-value').textContent, rows: tip.querySelectorAll('.chart-tip-row').length,
      // the legend's first column follows the cursor
      legendHead: legend.querySelector('thead th:nth-child(2)').textContent,
      legendValue: legend.querySelector('tbody tr[data-key] td').textContent,
    };
  });

async function storedValue(page, t) {
  const resp = await admin.get(`/api/analytics/v1/datasets/io.ops/data?start=${t}&seconds=1`);
  assert.equal(resp.status(), 200);
  const doc = await resp.json();
  const s = Array.isArray(doc.data) ? doc.data[0] : doc.data;
  assert.equal(s.sample, t, JSON.stringify(doc));
  return page.evaluate(async (v) => (await import('/js/dom.js')).num(v), s.data.value);
}

test('the pointer over a chart reads the time and the stored value there', async (t) => {
  const page = await openSheet(t, false);
  const over = page.locator('section.ws-chart[data-dataset="io.ops"] .u-over');
  const r = await over.boundingBox();
  // a spot near the window's end (the box is seconds old: the rest of the window has no
  // samples yet), where the live window slides a kept second under the still pointer
  await page.mouse.move(r.x + r.width * 0.9, r.y + r.height / 2);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .chart-tip:not([hidden]) .chart-tip-value', { timeout: 30000 });
  const tip = await readTip(page);
  assert.ok(tip, 'a readout');
  assert.equal(tip.rows, 1, 'one series, one row');
  assert.equal(tip.value, await storedValue(page, tip.t), `the readout at ${tip.x}`);
  assert.equal(tip.legendHead, `At ${tip.x.slice(11)}`, 'the legend says which second (the date is the readout\'s)');
  assert.equal(tip.legendValue, tip.value, 'and shows its value');
  await shots(page, 'worksheet-readout', { inPlace: true });
  // leaving the chart hides it, and the legend shows the newest values again
  await page.mouse.move(r.x + r.width / 2, r.y - 60);
  await page.locator('section.ws-chart[data-dataset="io.ops"] .chart-tip').waitFor({ state: 'hidden' });
  assert.equal(await page.locator('section.ws-chart[data-dataset="io.ops"] .ws-legend thead th').nth(1).textContent(), 'Current');
});

test('a tap on a phone shows the readout and leaves it there', async (t) => {
  const page = await openSheet(t, true);
  const over = page.locator('section.ws-chart[data-dataset="io.ops"] .u-over');
  await over.scrollIntoViewIfNeeded();
  const r = await over.boundingBox();
  await page.touchscreen.tap(r.x + r.width * 0.9, r.y + r.height / 2);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops"] .chart-tip:not([hidden]) .chart-tip-value', { timeout: 30000 });
  await page.waitForTimeout(1500); // a refresh or two of the live window later
  const tip = await readTip(page);
  assert.ok(tip, 'the readout stays after the tap');
  assert.equal(tip.value, await storedValue(page, tip.t), `the readout at ${tip.x}`);
  assert.equal(tip.legendValue, tip.value, 'the legend shows the tapped second too');
  const box_ = await page.locator('section.ws-chart[data-dataset="io.ops"] .chart-tip').boundingBox();
  assert.ok(box_.x >= 0 && box_.x + box_.width <= 390, `the readout fits the phone: ${JSON.stringify(box_)}`);
});
