// SPDX-License-Identifier: ISC
// The hardware page of a box with a rack of shelves (the test box's enclosure and 10 more
// SES shelves of 24 disks: 12 chassis, 252 disks): the shelves open folded, one line each
// from the chassis list, and their bays are read only when unfolded, searched for, or
// named by a link; the refresh reads only what is unfolded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, login, start } from './harness.mjs';

const SHELVES = 10;
const { box, newPage } = await start({ shelves: SHELVES });
const HW = '/api/hardware/v1/chassis';
const shelfIds = Object.keys(box.shelf_disks);
const shelfOf = (serial) => Number(/^SH(\d+)S/.exec(serial)[1]); // 1-based
const shelfId = (k) => `0x5003048${k.toString(16).padStart(9, '0')}`; // box.py's

// The page, with every disk list it asks for counted (chassis ids, in order).
async function hardwarePage(t, hash = '#/hardware') {
  const page = await newPage(t);
  const lists = [];
  page.on('request', (req) => {
    const m = new RegExp(`${HW}/([^/?]+)/disk$`).exec(new URL(req.url()).pathname);
    if (m && req.method() === 'GET') lists.push(decodeURIComponent(m[1]));
  });
  await login(page, box.https, 'admin', box.admin_password);
  await page.goto(`${box.https}/${hash}`);
  await page.waitForSelector('body[data-ready="hardware"]');
  return { page, lists };
}

const shelves = (page) => page.locator(`section.chassis:not([data-chassis="system"]):not([data-chassis="${box.enclosure}"])`);

test('a rack of shelves opens folded: a line each, no bay read', async (t) => {
  const { page, lists } = await hardwarePage(t);
  assert.equal(await page.locator('section.chassis').count(), SHELVES + 2);
  // the system and the enclosure with the faulted disk open; the shelves folded, unread
  assert.deepEqual(lists.sort(), [box.enclosure, 'system'].sort());
  assert.equal(await shelves(page).count(), SHELVES);
  assert.equal(await shelves(page).locator('.bay').count(), 0);
  for (const s of await shelves(page).all()) {
    assert.match(await s.getAttribute('class'), /\bfolded\b/);
    const fold = s.locator('.chassis-fold');
    assert.equal(await fold.getAttribute('aria-expanded'), 'false');
    assert.equal(await fold.textContent(), 'Show its 24 bays');
    assert.match(await s.locator('.chassis-meta').textContent(), /24 of 24 slots used/);
  }
  assert.equal(await page.locator(`section.chassis[data-chassis="${box.enclosure}"] .bay`).count(), 12);
  // the whole page stays small: a few hundred elements, not a few thousand per shelf
  const nodes = await page.locator('.chassis-list').evaluate((e) => e.getElementsByTagName('*').length);
  assert.ok(nodes < 2000, `${nodes} elements`);
  await axe(page);

  // unfolding one reads its disks, once; folding keeps them
  const third = shelves(page).nth(2);
  await third.locator('.chassis-fold').click();
  await third.locator('.bay').first().waitFor();
  assert.equal(await third.locator('.bay').count(), 24);
  assert.equal(await third.locator('.chassis-fold').getAttribute('aria-expanded'), 'true');
  assert.equal(lists.length, 3);
  await third.locator('.chassis-fold').click();
  assert.equal(await third.locator('.bays').isVisible(), false);
  await third.locator('.chassis-fold').click();
  assert.equal(await third.locator('.bays').isVisible(), true);
  assert.equal(lists.length, 3, 'unfolded again from what was read');
  await axe(page);
});

test('a search reads the shelves and shows where the disk sits', async (t) => {
  const { page, lists } = await hardwarePage(t);
  const id = shelfIds[24 * 6 + 5]; // shelf 7, slot 05
  const serial = 'SH07S05';
  await page.fill('#hw-search', serial);
  await page.waitForFunction(() => /^1 of \d+ bays shown$/.test(document.querySelector('#hw-shown').textContent));
  assert.equal(lists.length, SHELVES + 2, 'every disk list read once');
  const shown = page.locator('section.chassis:visible');
  assert.equal(await shown.count(), 1);
  assert.equal(await shown.getAttribute('data-chassis'), shelfId(shelfOf(serial)));
  assert.equal(await shown.locator('.bay:visible').count(), 1);
  assert.equal(await shown.locator('.bay:visible').getAttribute('data-disk'), id);
  assert.match(page.url(), /q=SH07S05/);
  // cleared: the shelves fold back; nothing is read again
  await page.fill('#hw-search', '');
  await page.waitForFunction(() => document.querySelector('#hw-shown').textContent === '');
  assert.equal(await shelves(page).locator('.bays:visible').count(), 0);
  assert.equal(lists.length, SHELVES + 2);
});

test('a link to a disk on a folded shelf opens its details', async (t) => {
  const id = shelfIds[24 * 8 + 11]; // shelf 9, slot 11
  const { page } = await hardwarePage(t, `#/hardware?disk=${encodeURIComponent(id)}`);
  const card = page.locator('section.chassis', { has: page.locator(`.bay[data-disk="${id}"]`) });
  assert.equal(await card.locator('.chassis-fold').getAttribute('aria-expanded'), 'true');
  const panel = card.locator('.disk-panel');
  await panel.waitFor();
  assert.match(await panel.textContent(), /SH09S11/);
  assert.equal(await card.locator(`.bay[data-disk="${id}"] .bay-name`).getAttribute('aria-expanded'), 'true');
});

test('the refresh reads the disks of what is unfolded only', async (t) => {
  const { page, lists } = await hardwarePage(t);
  await shelves(page).nth(0).locator('.chassis-fold').click();
  await shelves(page).nth(0).locator('.bay').first().waitFor();
  lists.length = 0;
  await page.getByRole('button', { name: 'Refresh' }).click();
  // the list says it is being read again until every answer is in
  await page.waitForSelector('.chassis-list:not([aria-busy])');
  const first = await shelves(page).nth(0).getAttribute('data-chassis');
  assert.deepEqual(lists.sort(), [box.enclosure, 'system', first].sort());
});
