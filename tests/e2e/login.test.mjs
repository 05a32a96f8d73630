// SPDX-License-Identifier: ISC
// Login, logout, a wrong password, the throttle, and a session revoked by the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { login, shots, start, watcher } from './harness.mjs';

const { box, newPage } = await start();
const ACCESS = '/api/access/v1';

// The token the page holds (sessionStorage "spindle.session": {"token": ..., ...}).
async function tokenOf(page) {
  return page.evaluate(() => {
    const saved = sessionStorage.getItem('spindle.session');
    return saved === null ? null : JSON.parse(saved).token;
  });
}

// A request from outside the browser, on the plain HTTP listener (same loopback address).
function access(method, { token, body } = {}) {
  const headers = {};
  if (token) headers['X-Auth-Session'] = token;
  if (body) headers['Content-Type'] = 'application/json';
  return fetch(box.http + ACCESS, { method, headers, body: body && JSON.stringify(body) });
}

async function loginError(page) {
  const error = page.locator('#login-error');
  await assert.doesNotReject(error.filter({ hasText: /\S/ }).waitFor());
  assert.equal(await error.getAttribute('role'), 'alert');
  return (await error.textContent()).trim();
}

test('a wrong password says so, and stays on the login page', async (t) => {
  const page = await newPage(t);
  watcher(page).expect(ACCESS, 401);
  await page.goto(`${box.https}/`);
  await page.waitForSelector('body[data-ready="login"]');
  await page.getByLabel('User name').fill('admin');
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Log in' }).click();
  assert.match(await loginError(page), /wrong .*password/i);
  assert.equal(await page.locator('main#main').getAttribute('data-page'), 'login');
  assert.equal(await tokenOf(page), null);
});

test('admin logs in to the dashboard and logs out to the login page', async (t) => {
  const page = await newPage(t);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  assert.match(page.url(), /#\/dashboard$/);
  assert.equal(await page.locator('main#main').getAttribute('data-page'), 'dashboard');
  const token = await tokenOf(page);
  assert.ok(token, 'a session token in sessionStorage');
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
  assert.equal((await page.context().cookies()).length, 0, 'no cookies');
  assert.ok(!page.url().includes(token), 'the token is not in the URL');

  await page.locator('#logout').click();
  await page.waitForSelector('body[data-ready="login"]');
  assert.equal(await tokenOf(page), null);
  assert.equal((await access('GET', { token })).status, 401, 'the server ended the session');
  await page.goto(`${box.https}/#/dashboard`);
  await page.waitForSelector('body[data-ready="login"]');
  assert.match(page.url(), /#\/login\?next=dashboard$/);
});

test('a session revoked by the server lands on login, and login returns to the page', async (t) => {
  const page = await newPage(t);
  // The feed's next request after the revocation is refused: that is the point.
  watcher(page).expect('/api/', 401);
  await login(page, box.https, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  const token = await tokenOf(page);
  const r = await access('DELETE', { token });
  assert.equal(r.status, 204);
  // The events stream ends at its next tick and its reconnection is refused (~3 s).
  await page.waitForSelector('body[data-ready="login"]', { timeout: 15000 });
  assert.match(page.url(), /#\/login\?next=dashboard&expired=1$/);
  assert.match(await page.locator('#login-expired').textContent(), /session expired/);
  assert.equal(await tokenOf(page), null);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="dashboard"]');
  assert.match(page.url(), /#\/dashboard$/);

  // Any page's own request refused: a reload of the hardware page after the revocation.
  await page.goto(`${box.https}/#/hardware`);
  await page.waitForSelector('body[data-ready="hardware"]');
  assert.equal((await access('DELETE', { token: await tokenOf(page) })).status, 204);
  await page.reload();
  await page.waitForSelector('body[data-ready="login"]');
  assert.match(page.url(), /#\/login\?next=hardware&expired=1$/);
  await login(page, null, 'admin', box.admin_password);
  await page.waitForSelector('body[data-ready="hardware"]');
});

test('the throttled login says when to try again', async (t) => {
  // Five failures for one name from one address lock that pair for 30 s (server/access/auth.c);
  // they come from here, and the browser's attempt is the sixth.
  const user = `guesser-${process.pid}`;
  for (let i = 0; i < 5; i++) {
    const r = await access('POST', { body: { user, password: 'wrong' } });
    assert.equal(r.status, 401);
  }
  const page = await newPage(t);
  watcher(page).expect(ACCESS, 429);
  await page.goto(`${box.https}/#/login`);
  await page.waitForSelector('body[data-ready="login"]');
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password').fill('wrong again');
  await page.getByRole('button', { name: 'Log in' }).click();
  const text = await loginError(page);
  assert.match(text, /too many/i);
  const m = /(\d+) seconds?/.exec(text);
  assert.ok(m && Number(m[1]) > 0 && Number(m[1]) <= 30, `says when to retry: "${text}"`);
});

test('the login page: accessible, and its screenshots', async (t) => {
  const page = await newPage(t);
  await page.goto(`${box.https}/#/login`);
  await page.waitForSelector('body[data-ready="login"]');
  await shots(page, 'login');
});
