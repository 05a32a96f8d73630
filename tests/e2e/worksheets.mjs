// SPDX-License-Identifier: ISC
// Worksheet helpers the browser tests share (the monitor flow uses them too):
//
//   const uuid = await createWorksheet(box, 'disks', ['cpu.utilization', 'io.ops[disk]']);
//   await page.goto(`${box.https}/#/worksheets/${uuid}`);
//   await assertReadOnly(page, ['cpu.utilization', 'io.ops[disk]']);
//
// The API calls go to the box's plain-HTTP listener (node's fetch would refuse the
// self-signed certificate of the HTTPS one) with the admin's password.

import assert from 'node:assert/strict';

async function call(box, method, path, body, user = 'admin', password = box.admin_password) {
  const headers = {
    Accept: 'application/json',
    Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${box.http}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

// Saves a worksheet as admin; resolves to its uuid. datasets: names, or
// {name, drilldowns, seconds} objects.
export async function createWorksheet(box, name, datasets, seconds = 600) {
  const ds = datasets.map((d) => (typeof d === 'string' ? { name: d, seconds } : d));
  const doc = await call(box, 'POST', '/api/analytics/v1/worksheets', { name, datasets: ds });
  return doc.worksheet.uuid;
}

// Makes a user with the built-in monitor role (idempotent per name).
export async function createMonitor(box, name = 'watcher', password = 'watch-it-2026') {
  try {
    await call(box, 'POST', '/api/user/v1/users', { name, password, roles: ['monitor'] });
  } catch (e) {
    if (!/ 409 /.test(e.message)) throw e;
  }
  return { name, password };
}

// The worksheet page is shown read-only: its charts (headings as given), data in their
// legends, and no control that would change it.
export async function assertReadOnly(page, names) {
  await page.waitForSelector('body[data-ready="worksheet"]');
  const headings = await page.locator('section.ws-chart').evaluateAll((els) => els.map((e) => e.dataset.dataset));
  assert.deepEqual(headings, names);
  for (const label of ['Save', 'Add chart', 'Add', 'Delete', 'Rename', 'Remove']) {
    assert.equal(await page.getByRole('button', { name: label, exact: true }).count(), 0,
      `a read-only worksheet shows no "${label}" button`);
  }
  assert.equal(await page.locator('button[aria-label^="Remove the chart"]').count(), 0);
  assert.equal(await page.locator('#ws-add').count(), 0, 'no form to add a chart');
  assert.match(await page.locator('.ws-meta').textContent(), /read-only/);
}
