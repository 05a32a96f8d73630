// SPDX-License-Identifier: ISC
// One session for the tabs of a browser, and a phone kept signed in: a new tab opens where
// it is sent without a password, a logout in one tab is one in all; "Keep me signed in on
// this device" makes a key this browser cannot export, with which a new window, a session
// that ended under a page, and a home-screen launch log in by themselves; the device's own
// logout, or the administrator stopping it, ends that.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, expectStatus, login, shots, start, until, watch, watcher } from './harness.mjs';

const { box, newPage } = await start();
const USERS = '/api/user/v1/users';
const PHONE = { name: 'kiosk', password: 'Kiosk-e2e-password-1' };
const WALL = { name: 'wallscreen', password: 'Wall-e2e-password-1' };

const admin = await adminClient(box);

for (const u of [PHONE, WALL]) await expectStatus(await admin.post(USERS, { data: { ...u, roles: ['monitor'] } }), 201);
const devicesOf = async (user) => (await expectStatus(await admin.get(`${USERS}/${user}/devices`), 200)).devices;

const tokenOf = (page) =>
  page.evaluate(() => {
    const saved = sessionStorage.getItem('spindle.session');
    return saved === null ? null : JSON.parse(saved).token;
  });

// What the browser keeps of its device: the record, and whether its private key could be
// read out of it.
const keptDevice = (page) =>
  page.evaluate(
    () =>
      new Promise((resolve) => {
        const open = indexedDB.open('spindle', 1);
        open.onupgradeneeded = () => open.result.createObjectStore('device');
        open.onsuccess = () => {
          const req = open.result.transaction('device').objectStore('device').get('this');
          req.onsuccess = async () => {
            const d = req.result;
            open.result.close();
            if (!d) return resolve(null);
            let exported = true;
            try {
              await crypto.subtle.exportKey('pkcs8', d.privateKey);
            } catch {
              exported = false;
            }
            resolve({ id: d.id, user: d.user, type: d.privateKey.type, extractable: d.privateKey.extractable, exported, stored: Object.keys(d).sort() });
          };
        };
      }),
  );

test('the tabs of one browser share a session, and a logout in one is one in all', async (t) => {
  const first = await newPage(t);
  await login(first, box.https, 'admin', box.admin_password);
  await first.waitForSelector('body[data-ready="dashboard"]');
  // a second tab, opened on a bookmark: no password asked
  const second = await first.context().newPage();
  await watch(second);
  await second.goto(`${box.https}/#/hardware`);
  await second.waitForSelector('body[data-ready="hardware"]');
  assert.equal(await second.locator('#who-name').textContent(), 'admin');
  assert.equal(await tokenOf(second), await tokenOf(first), 'the one session');
  assert.equal(await second.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
  // a logout in the second ends the first too
  await second.locator('#logout').click();
  await second.waitForSelector('body[data-ready="login"]');
  await first.waitForSelector('body[data-ready="login"]');
  assert.equal(await tokenOf(first), null);
  // and a login in one takes the other, waiting on its login page, along
  await login(second, null, 'admin', box.admin_password);
  await first.waitForSelector('body[data-ready="dashboard"]');
  watcher(second).assertClean();
  await second.close();
});

test('a phone kept signed in: no password stored, back by itself, until its logout', async (t) => {
  const page = await newPage(t, { phone: true });
  await page.goto(`${box.https}/#/dashboard`);
  await page.waitForSelector('body[data-ready="login"]');
  await page.getByLabel('Keep me signed in on this device').check();
  await shots(page, 'login-keep', { inPlace: true });
  await login(page, null, PHONE.name, PHONE.password);
  await page.waitForSelector('body[data-ready="dashboard"]');

  // what the browser keeps: a key it cannot give away, no password, no token
  const kept = await keptDevice(page);
  assert.deepEqual(
    { type: kept.type, extractable: kept.extractable, exported: kept.exported, user: kept.user, stored: kept.stored },
    { type: 'private', extractable: false, exported: false, user: PHONE.name, stored: ['id', 'name', 'privateKey', 'user'] },
  );
  const [dev] = await devicesOf(PHONE.name);
  assert.equal(dev.id, kept.id);
  assert.match(dev.name, /^Chrom(e|ium) on Linux$/);
  assert.equal(await page.evaluate(() => localStorage.length), 0);

  // every window closed, then the home-screen icon: in without a password
  const context = page.context();
  await page.close();
  const again = await context.newPage();
  (await watch(again)).expect('/api/', 401); // the session made to end below
  await again.goto(`${box.https}/`);
  await again.waitForSelector('body[data-ready="dashboard"]');
  assert.equal(await again.locator('#who-name').textContent(), PHONE.name);
  const token = await tokenOf(again);
  assert.ok(token);

  // the session ends under the page (here: a token the server no longer takes): the device
  // logs in again and the page goes on, with no login page in between
  await again.evaluate(() => {
    const s = JSON.parse(sessionStorage.getItem('spindle.session'));
    sessionStorage.setItem('spindle.session', JSON.stringify({ ...s, token: `${s.token}x` }));
  });
  await again.reload();
  await again.waitForSelector('body[data-ready="dashboard"]');
  await until('a new session', async () => (await tokenOf(again)) !== `${token}x` && (await tokenOf(again)) !== null);
  assert.equal(await again.locator('main#main').getAttribute('data-page'), 'dashboard');

  // its own logout: the device goes, on the server and here
  await again.locator('#nav-toggle').click();
  await again.locator('#logout').click();
  await again.waitForSelector('body[data-ready="login"]');
  assert.deepEqual(await devicesOf(PHONE.name), []);
  assert.equal(await keptDevice(again), null);
  await again.reload();
  await again.waitForSelector('body[data-ready="login"]');
  watcher(again).assertClean();
});

test('the administrator stops a device: it is back at the login page, and says why', async (t) => {
  const page = await newPage(t);
  watcher(page).expect('/api/', 401);
  await page.goto(`${box.https}/#/login`);
  await page.getByLabel('Keep me signed in on this device').check();
  await login(page, null, WALL.name, WALL.password);
  await page.waitForSelector('body[data-ready="dashboard"]');

  // the administrator, in a browser of their own, sees it and stops it
  const desk = await newPage(t);
  await login(desk, box.https, 'admin', box.admin_password);
  await desk.evaluate((u) => { location.hash = `#/admin/tokens?user=${u}`; }, WALL.name);
  await desk.waitForSelector('#devices table');
  const row = desk.locator('#devices tbody tr');
  assert.equal(await row.count(), 1);
  assert.match(await row.textContent(), /Chrom(e|ium) on Linux/);
  await shots(desk, 'admin-devices', { inPlace: true });
  await row.getByRole('button', { name: /Stop keeping/ }).click();
  await desk.getByRole('button', { name: 'Stop', exact: true }).click();
  await desk.waitForSelector('#devices p.empty');

  // the phone's next request finds its session gone and its device refused
  await page.evaluate(() => { location.hash = '#/hardware'; });
  await page.waitForSelector('body[data-ready="login"]');
  await page.waitForSelector('#login-device-refused');
  assert.equal(await keptDevice(page), null, 'the key is forgotten');
});
