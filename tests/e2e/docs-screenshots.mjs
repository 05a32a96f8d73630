// SPDX-License-Identifier: ISC
// Makes the README's pictures of the console on the fake box after a minute of figures (so
// the sparklines and charts have something to draw): the dashboard, docs/console-desktop.png
// (1280x800) and docs/console-phone.png (390x844), and a worksheet of the disks with the
// heat map of how busy they were and the readout under the pointer,
// docs/console-worksheet.png; the Problems page on a phone, docs/console-problems.png; a
// sweep of thread counts with its knee marked, docs/console-sweep.png; and the hardware page
// showing only the faulted disk, its details open, docs/console-hardware.png. Not a test:
// run it by hand after a change that shows on them: node tests/e2e/docs-screenshots.mjs
import { join } from 'node:path';
import { DESKTOP, PHONE, launch, login, newContext, startBox } from './harness.mjs';
import { createWorksheet } from './worksheets.mjs';

const DOCS = join(import.meta.dirname || new URL('.', import.meta.url).pathname, '..', '..', 'docs');
const box = await startBox();
const browser = await launch();
try {
  await new Promise((r) => setTimeout(r, 65000)); // a whole minute for the sparklines
  for (const [name, phone, size] of [['console-desktop', false, DESKTOP], ['console-phone', true, PHONE]]) {
    const context = await newContext(browser, { phone, scale: phone ? 2 : 1 });
    const page = await context.newPage();
    await login(page, box.https, 'admin', box.admin_password);
    await page.waitForSelector('body[data-ready="dashboard"]');
    await page.waitForTimeout(1500); // a second live document
    await page.screenshot({ path: join(DOCS, `${name}.png`), clip: { x: 0, y: 0, ...size } });
    await context.close();
  }
  const uuid = await createWorksheet(box, 'Disks', ['io.ops[disk]', 'io.disks[utilization]'], 60);
  const context = await newContext(browser, {});
  const page = await context.newPage();
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`worksheets/${uuid}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('section.ws-chart[data-dataset="io.ops[disk]"] .ws-legend tbody tr[data-key]');
  await page.waitForSelector('section.ws-chart[data-dataset="io.disks[utilization]"] .ws-legend tbody tr[data-key]', { state: 'attached' });
  await page.waitForTimeout(1500);
  const plot = await page.locator('section.ws-chart[data-dataset="io.ops[disk]"] .u-over').boundingBox();
  await page.mouse.move(plot.x + plot.width * 0.7, plot.y + plot.height * 0.4);
  await page.screenshot({ path: join(DOCS, 'console-worksheet.png'), clip: { x: 0, y: 0, ...DESKTOP } });

  // a sweep of thread counts through the page cache, made as a script would, and its page
  const made = await page.evaluate(async () => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    const body = { name: 'threads', spec: { pattern: 'randread', size: '64M', block_size: '8k', runtime_s: 2, direct: false }, axes: { threads: [1, 2, 4, 16, 64] } };
    const res = await fetch('/api/bench/v1/sweeps', { method: 'POST', headers: { 'X-Auth-Session': token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return (await res.json()).sweep.id;
  });
  await page.goto(`${box.https}/#/bench/sweeps/${made}`);
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#sweep-table tbody tr')];
    return rows.length === 5 && rows.every((r) => r.dataset.state === 'done');
  }, null, { timeout: 120000 });
  await page.waitForFunction(() => document.querySelector('figure:has(.sweep-iops)')?.dataset.points === '5');
  const knees = await page.locator('figure:has(.sweep-iops)').getAttribute('data-knees');
  if (knees === '[]') throw new Error('the sweep found no knee (a busy machine?): the picture would not show one; run it again on a quiet one');
  await page.screenshot({ path: join(DOCS, 'console-sweep.png'), clip: { x: 0, y: 0, ...DESKTOP } });

  // the hardware page: the faulted disk only, its details open
  await page.goto(`${box.https}/#/hardware?faulted=1`);
  await page.waitForSelector('body[data-ready="hardware"]');
  await page.locator('.bay.faulted:not([hidden]) .bay-name').first().click();
  await page.locator('.disk-panel:not([hidden])').waitFor();
  await page.evaluate(() => window.scrollTo(0, 0)); // the filters and the bay above its details
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(DOCS, 'console-hardware.png'), clip: { x: 0, y: 0, ...DESKTOP } });
  await context.close();

  // the Problems page on a phone
  const phone = await newContext(browser, { phone: true, scale: 2 });
  const pp = await phone.newPage();
  await login(pp, box.https, 'admin', box.admin_password);
  await pp.goto(`${box.https}/#/problems`);
  await pp.waitForSelector('body[data-ready="problems"]');
  await pp.screenshot({ path: join(DOCS, 'console-problems.png'), clip: { x: 0, y: 0, ...PHONE } });
  await phone.close();
} finally {
  await browser.close();
  await box.stop();
}
