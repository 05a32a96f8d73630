// SPDX-License-Identifier: ISC
// Administration in the browser: an administrator creates a monitor user and an API token
// for it (the secret shows once, Copy puts it on the clipboard, and it works against the
// API), the audit log shows both, a role is made and deleted, a bad retention value is
// refused next to its field and a good one saved; a monitor who types the address is told
// what is missing; the manifest and icons are served and parse; axe and screenshots of
// every tab.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, shots, start, until, watcher } from './harness.mjs';

const { box, newPage } = await start();
const TABS = ['users', 'roles', 'tokens', 'audit', 'settings'];

// The API as a script would call it: over the plain HTTP listener, the password on the
// request (X-Auth-User/X-Auth-Key) or a token.
async function api(method, path, { auth = ['admin', box.admin_password], token, body } = {}) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (auth) [headers['X-Auth-User'], headers['X-Auth-Key']] = auth;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(box.http + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, doc: text ? JSON.parse(text) : null };
}

// Logs in through the form and lands on an Administration tab.
async function adminPage(t, tab = 'users', variant) {
  const page = await newPage(t, variant);
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(`admin/${tab}`)}`);
  await login(page, null, 'admin', box.admin_password);
  await tabReady(page, tab);
  return page;
}

async function tabReady(page, tab) {
  await page.waitForSelector(`section.admin-tab[data-tab="${tab}"]`);
  await page.waitForSelector('body[data-ready="admin"]');
}

async function openTab(page, tab) {
  await page.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: { users: 'Users', roles: 'Roles', tokens: 'API tokens', audit: 'Audit log', settings: 'Settings' }[tab], exact: true }).click();
  await tabReady(page, tab);
}

test('an administrator creates a monitor user and an API token that works', async (t) => {
  const page = await adminPage(t);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: box.https });
  watcher(page).expect('/api/user/v1/users', 400);

  // A new user: a short password is refused next to the password field.
  await page.getByRole('button', { name: 'New user' }).click();
  await page.getByLabel('User name').fill('carol');
  await page.getByLabel('Full name').fill('Carol Watch');
  await page.getByLabel('Password', { exact: true }).fill('short');
  await page.getByRole('checkbox', { name: /^monitor/ }).check();
  await page.getByRole('button', { name: 'Create user' }).click();
  await page.waitForSelector('#user-password-error:not(:empty)');
  assert.match(await page.textContent('#user-password-error'), /password/);
  assert.equal(await page.getAttribute('#user-password', 'aria-invalid'), 'true');
  assert.equal(await page.locator('tr[data-user="carol"]').count(), 0);

  await page.getByLabel('Password', { exact: true }).fill('carol-watches-disks');
  await page.getByRole('button', { name: 'Create user' }).click();
  const row = page.locator('tr[data-user="carol"]');
  await row.waitFor();
  assert.match(await row.locator('td.col-roles').textContent(), /monitor/);
  assert.match(await row.locator('td.col-fullname').textContent(), /Carol Watch/);
  const carol = await api('GET', '/api/user/v1/users/carol');
  assert.equal(carol.status, 200);
  assert.deepEqual(carol.doc.user.roles, ['monitor']);

  // Her API tokens: none yet; a new one shows its secret once.
  await row.getByRole('link', { name: 'API tokens of carol' }).click();
  await tabReady(page, 'tokens');
  assert.equal(await page.inputValue('#token-user'), 'carol');
  await page.getByText('carol has no API tokens.').waitFor();
  await page.getByRole('button', { name: 'New token' }).click();
  await page.getByLabel('Token name').fill('prometheus');
  await page.getByLabel('Valid for').fill('30');
  await page.getByRole('button', { name: 'Create token' }).click();
  const secretBox = page.locator('#token-secret');
  await secretBox.waitFor();
  const secret = await secretBox.inputValue();
  assert.ok(secret.length > 20, secret);
  assert.match(await page.locator('.secret-panel').textContent(), /will not be shown again/);
  await page.locator('tr[data-token]').filter({ hasText: 'prometheus' }).waitFor();
  await shots(page, 'admin-token-secret', { inPlace: true });

  await page.getByRole('button', { name: 'Copy', exact: true }).click();
  await page.waitForSelector('#token-copied:has-text("Copied")');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);

  // The secret is carol's, with the monitor's authorizations.
  const self = await api('GET', '/api/user/v1/users/carol', { token: secret });
  assert.equal(self.status, 200);
  assert.equal(self.doc.user.name, 'carol');
  assert.equal((await api('GET', '/api/system/v1/version', { token: secret })).status, 200);
  assert.equal((await api('GET', '/api/user/v1/users', { token: secret })).status, 403);

  // Shown once: after a reload only the name is left.
  await page.reload();
  await tabReady(page, 'tokens');
  await page.locator('tr[data-token]').filter({ hasText: 'prometheus' }).waitFor();
  assert.equal(await page.locator('#token-secret').count(), 0);
  assert.equal((await page.content()).includes(secret), false);

  // The audit log, newest first, has both; the action filter narrows it.
  await openTab(page, 'audit');
  const actions = await page.locator('td.col-action').allTextContents();
  const created = actions.indexOf('user.create');
  const token = actions.indexOf('token.create');
  assert.ok(token >= 0 && created > token, `token.create above user.create: ${actions.join(', ')}`);
  await page.getByLabel('Action').selectOption('token.create');
  const rows = page.locator('tbody tr');
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().locator('td.col-target').textContent(), /carol/);
  assert.match(await rows.first().locator('td.col-details').textContent(), /prometheus/);
  await page.getByLabel('Action').selectOption('');
  await page.getByLabel('Search').fill('roles: monitor');
  await page.locator('tbody tr td.col-action', { hasText: 'user.create' }).waitFor();
  assert.equal(await rows.count(), 1);

  // Revoked from the tokens tab, after a confirmation: the secret stops working.
  await openTab(page, 'tokens');
  await page.getByLabel('User', { exact: true }).selectOption('carol');
  await page.locator('tr[data-token]').filter({ hasText: 'prometheus' }).waitFor();
  assert.match(page.url(), /#\/admin\/tokens\?user=carol$/);
  await page.getByRole('button', { name: 'Revoke token prometheus' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
  await page.getByText('carol has no API tokens.').waitFor();
  assert.equal((await api('GET', '/api/user/v1/users/carol', { token: secret, auth: null })).status, 401);
});

test('roles: one is made with two authorizations, changed, and deleted after a confirmation', async (t) => {
  const page = await adminPage(t, 'roles');
  await page.getByRole('button', { name: 'New role' }).click();
  await page.getByLabel('Role name').fill('auditor');
  await page.getByLabel('Description').fill('Reads the audit log');
  await page.getByRole('checkbox', { name: /^user:read/ }).check();
  await page.getByRole('checkbox', { name: /^stat:read/ }).check();
  await page.getByRole('button', { name: 'Create role' }).click();
  const row = page.locator('tr[data-role="auditor"]');
  await row.waitFor();
  assert.match(await row.locator('td.col-authorizations').textContent(), /user:read/);
  assert.deepEqual((await api('GET', '/api/role/v1/roles/auditor')).doc.role.authorizations.sort(), ['stat:read', 'user:read']);

  await row.getByRole('button', { name: 'Edit role auditor' }).click();
  await page.getByRole('checkbox', { name: /^stat:read/ }).uncheck();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('#role-edit', { state: 'detached' });
  assert.deepEqual((await api('GET', '/api/role/v1/roles/auditor')).doc.role.authorizations, ['user:read']);
  // Built-in roles cannot change: no buttons on their rows.
  assert.equal(await page.locator('tr[data-role="admin"] button').count(), 0);

  // Escape keeps it (the dialog opens on Cancel); confirming deletes it.
  await row.getByRole('button', { name: 'Delete role auditor' }).click();
  await page.getByRole('dialog').waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Cancel');
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  assert.equal((await api('GET', '/api/role/v1/roles/auditor')).status, 200);
  await row.getByRole('button', { name: 'Delete role auditor' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete role' }).click();
  await row.waitFor({ state: 'detached' });
  assert.equal((await api('GET', '/api/role/v1/roles/auditor')).status, 404);
});

test('users: roles changed, a password reset, and a delete after a confirmation', async (t) => {
  assert.equal((await api('POST', '/api/user/v1/users', { body: { name: 'dave', password: 'dave-first-pass', roles: ['monitor'] } })).status, 201);
  const page = await adminPage(t, 'users');
  const row = page.locator('tr[data-user="dave"]');
  await row.getByRole('button', { name: 'Edit dave' }).click();
  await page.getByRole('checkbox', { name: /^operator/ }).check();
  await page.getByLabel('Full name').fill('Dave Bench');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('#user-edit', { state: 'detached' });
  // the list is drawn again after the save: wait for the new roles, then read them
  await row.locator('td.col-roles').filter({ hasText: /operator/ }).waitFor();
  assert.match(await row.locator('td.col-roles').textContent(), /monitor.*operator|operator.*monitor/);
  assert.deepEqual((await api('GET', '/api/user/v1/users/dave')).doc.user.roles.sort(), ['monitor', 'operator']);

  // Two different passwords are caught here; the same one twice is set.
  await row.getByRole('button', { name: 'Reset the password of dave' }).click();
  await page.getByLabel('New password', { exact: true }).fill('dave-second-pass');
  await page.getByLabel('New password again').fill('dave-second-typo');
  await page.getByRole('button', { name: 'Set password' }).click();
  assert.match(await page.textContent('#user-password-again-error'), /differ/);
  await page.getByLabel('New password again').fill('dave-second-pass');
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.waitForSelector('#user-password-form', { state: 'detached' });
  assert.equal((await api('GET', '/api/system/v1/version', { auth: ['dave', 'dave-second-pass'] })).status, 200);

  // The signed-in administrator cannot delete themself from here.
  assert.equal(await page.locator('tr[data-user="admin"]').getByRole('button', { name: 'Delete admin' }).isDisabled(), true);
  await row.getByRole('button', { name: 'Delete dave' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete user' }).click();
  await row.waitFor({ state: 'detached' });
  assert.equal((await api('GET', '/api/user/v1/users/dave')).status, 404);
});

test('audit log: newest first, fifty to a page', async (t) => {
  for (let i = 0; i < 60; i++)
    assert.equal((await api('POST', '/api/user/v1/users/admin/tokens', { body: { name: `batch-${i}` } })).status, 201);
  const page = await adminPage(t, 'audit');
  await page.getByLabel('Action').selectOption('token.create');
  await page.getByLabel('Search').fill('batch-');
  const details = () => page.locator('tbody td.col-details').allTextContents();
  const first = await details();
  assert.equal(first.length, 50);
  assert.match(first[0], /'batch-59'/);
  assert.match(first[49], /'batch-10'/);
  assert.equal(await page.textContent('#audit-page'), 'Page 1 of 2');
  assert.equal(await page.getByRole('button', { name: 'Newer' }).isDisabled(), true);
  await page.getByRole('button', { name: 'Older' }).click();
  const second = await details();
  assert.equal(second.length, 10);
  assert.match(second[0], /'batch-9'/);
  assert.match(second[9], /'batch-0'/);
  assert.equal(await page.getByRole('button', { name: 'Older' }).isDisabled(), true);
  const times = await page.locator('tbody td.col-time time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime')));
  assert.deepEqual(times, times.slice().sort().reverse());
  // The start is the API's: an hour back still holds them, and the summary counts them.
  await page.getByLabel('Since').selectOption({ label: 'Last hour' });
  await page.waitForFunction(() => /^60 of \d+ entries match/.test(document.querySelector('#audit-summary').textContent));
  // the filters are in the address: a reload shows the same entries
  assert.match(page.url(), /#\/admin\/audit\?since=3600&action=token.create&q=batch-$/);
  await page.reload();
  await page.waitForSelector('body[data-ready="admin"]');
  await page.waitForFunction(() => /^60 of \d+ entries match/.test(document.querySelector('#audit-summary').textContent));
  assert.equal(await page.getByLabel('Action').inputValue(), 'token.create');
  assert.equal(await page.getByLabel('Search').inputValue(), 'batch-');
  assert.equal(await page.getByLabel('Since').inputValue(), '3600');
});

test('audit log: a disk’s locator named as a person finds it, and found by its serial', async (t) => {
  const sdc = Object.keys(box.disks).find((id) => box.disks[id] === 'sdc');
  const path = `/api/hardware/v1/chassis/${box.enclosure}/disk/${sdc}`;
  for (const on of [true, false]) assert.equal((await api('PUT', path, { body: { locate: on } })).status, 202);
  const page = await adminPage(t, 'audit');
  await page.getByLabel('Search').fill('Z1Z0A102'); // sdc's serial, as on its label
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
  const targets = await page.locator('tbody td.col-target').allTextContents();
  for (const text of targets) assert.equal(text, `sdc · Slot 02 · serial Z1Z0A102chassis/${box.enclosure}/disk/${sdc}`);
  assert.equal(await page.locator('tbody td.col-target .audit-disk').first().textContent(), 'sdc · Slot 02 · serial Z1Z0A102');
  await page.getByLabel('Search').fill('Slot 02');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
});

test('retention: a bad value is refused next to its field, a good one is saved', async (t) => {
  const page = await adminPage(t, 'settings');
  watcher(page).expect('/api/analytics/v1/settings', 400);
  const second = page.getByLabel('Second data');
  assert.equal(await second.inputValue(), '24');
  assert.match(await page.textContent('#set-retain_second_data-span'), /1 day/);

  await second.fill('0');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('#set-retain_second_data-error:not(:empty)');
  assert.match(await page.textContent('#set-retain_second_data-error'), /^retain_second_data: /);
  assert.equal(await second.getAttribute('aria-invalid'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'set-retain_second_data');
  assert.equal((await api('GET', '/api/analytics/v1/settings')).doc.settings.retain_second_data, 24);

  await second.fill('48');
  assert.match(await page.textContent('#set-retain_second_data-span'), /2 days/);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Retention saved').waitFor();
  assert.equal(await page.textContent('#set-retain_second_data-error'), '');
  assert.equal(await second.getAttribute('aria-invalid'), null);
  assert.equal((await api('GET', '/api/analytics/v1/settings')).doc.settings.retain_second_data, 48);
  assert.equal((await api('PUT', '/api/analytics/v1/settings', { body: { retain_second_data: 24 } })).status, 200);
});

test('a monitor who types the address is told it needs user:modify', async (t) => {
  const made = await api('POST', '/api/user/v1/users', { body: { name: 'mona', password: 'mona-only-watches', roles: ['monitor'] } });
  assert.equal(made.status, 201);
  const page = await newPage(t, { phone: true });
  await page.goto(`${box.https}/#/login?next=admin%2Fusers`);
  await login(page, null, 'mona', 'mona-only-watches');
  await page.waitForSelector('main[data-page="admin"] .denied');
  assert.match(await page.textContent('.denied'), /needs the user:modify authorization/);
  assert.equal(await page.locator('nav#nav a[data-nav="admin"]').isHidden(), true);
  assert.equal(await page.locator('section.admin-tab').count(), 0);
  await shots(page, 'admin-denied');
});

test('the manifest and icons are served, parse, and the service worker keeps no API answer', async (t) => {
  const page = await adminPage(t);
  const res = await page.request.get(`${box.https}/manifest.webmanifest`);
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-type'], /^application\/manifest\+json/);
  const m = JSON.parse(await res.text());
  assert.equal(m.name, 'Spindle');
  assert.ok(m.short_name);
  assert.equal(m.start_url, '/#/dashboard');
  assert.equal(m.display, 'standalone');
  assert.match(m.theme_color, /^#[0-9a-f]{6}$/);
  assert.match(m.background_color, /^#[0-9a-f]{6}$/);
  // The page's theme colour and the manifest's agree.
  assert.equal(await page.getAttribute('meta[name="theme-color"]', 'content'), m.theme_color);
  // SVGs for the browsers that draw them, PNGs (192 and 512) for those that do not
  assert.deepEqual(m.icons.map((i) => `${i.type} ${i.purpose}`).sort(),
    ['image/png any', 'image/png any', 'image/png maskable', 'image/svg+xml any', 'image/svg+xml maskable']);
  for (const icon of m.icons) {
    const r = await page.request.get(new URL(icon.src, box.https).href);
    assert.equal(r.status(), 200, icon.src);
    assert.equal(r.headers()['content-type'].split(';')[0], icon.type, icon.src);
    // Drawn by the browser, under the page's CSP, at the size the manifest says.
    const size = await page.evaluate(
      (src) => new Promise((resolve, reject) => {
        const img = new Image();
        img.onload = () => resolve([img.naturalWidth, img.naturalHeight]);
        img.onerror = () => reject(new Error(`${src} does not load`));
        img.src = src;
      }),
      icon.src,
    );
    const want = icon.sizes === 'any' ? [512, 512] : icon.sizes.split('x').map(Number);
    assert.deepEqual(size, want, icon.src);
  }
  // iOS's home screen icon (no manifest icons there): 180 px, opaque
  const touch = await page.getAttribute('link[rel="apple-touch-icon"]', 'href');
  assert.equal(touch, '/icons/apple-touch-icon.png');
  const tr = await page.request.get(new URL(touch, box.https).href);
  assert.equal(tr.status(), 200);
  assert.equal(tr.headers()['content-type'].split(';')[0], 'image/png');
  // The page links the manifest and the icon; the console caches no API answer.
  assert.equal(await page.getAttribute('link[rel="manifest"]', 'href'), '/manifest.webmanifest');
  assert.equal(await page.getAttribute('link[rel="icon"][type="image/svg+xml"]', 'href'), '/icons/spindle.svg');
  // the one service worker is the console's, and what it keeps is the console's own files
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  const regs = await page.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).map((r) => r.active && r.active.scriptURL));
  assert.deepEqual(regs, [`${box.https}/sw.js`]);
  await page.evaluate(() => { location.hash = '#/hardware'; });
  await page.waitForSelector('body[data-ready="hardware"]');
  const keptNow = () =>
    page.evaluate(async () => {
      const urls = [];
      for (const name of await caches.keys()) for (const req of await (await caches.open(name)).keys()) urls.push(new URL(req.url).pathname);
      return urls;
    });
  await until('the hardware page kept', async () => (await keptNow()).includes('/js/pages/hardware.js'));
  const kept = await keptNow();
  assert.ok(kept.includes('/') && kept.includes('/js/app.js'), kept.join(' '));
  assert.deepEqual(kept.filter((u) => u.startsWith('/api/') || u === '/metrics'), [], 'no API answer kept');
});

test('every tab passes axe and is screenshot at 1280x800 and 390x844, light and dark', async (t) => {
  const page = await adminPage(t);
  // in place: the tabs are forms and tables, laid out by width alone (no touch-only rule),
  // and four fresh browsers a tab cost two minutes of the suite
  for (const tab of TABS) {
    await openTab(page, tab);
    await shots(page, `admin-${tab}`, { inPlace: true });
  }
  // The forms and the confirmation, in place.
  await openTab(page, 'users');
  await page.getByRole('button', { name: 'New user' }).click();
  await shots(page, 'admin-users-new', { inPlace: true });
  await page.getByRole('button', { name: 'Cancel' }).click();
  await page.locator('tr[data-user="admin"]').getByRole('button', { name: 'Edit admin' }).click();
  await shots(page, 'admin-users-edit', { inPlace: true });
});
