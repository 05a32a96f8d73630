// SPDX-License-Identifier: ISC
// Benchmarks in the browser: the form shows the server's fault at the field it names, a
// short job is followed live (its charts get points) to its result (IOPS, percentiles,
// histogram, findings), a second one is compared with it (percent differences, what changed,
// the significance note, overlaid charts), a sweep's table and knee are read and its runs
// compared, a sweep made in the form runs and its chart marks the knee, a long one is
// cancelled and says so, and a
// monitor user reads runs but may not start or cancel one. Jobs run 2-3 s on an 8 MiB file in the box's bench dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { OUT, axe, login, shots, start, until, watcher } from './harness.mjs';

const { box, newPage } = await start();
const JOBS = '/api/bench/v1/jobs';
const RUN_MS = 30000; // a 2-3 s job, its layout and the end of its stream, with room

// Logs in through the form, straight to `route` (the login page's ?next=).
async function loginTo(page, route, user = 'admin', password = box.admin_password) {
  await page.goto(`${box.https}/#/login?next=${encodeURIComponent(route)}`);
  await login(page, null, user, password);
}

async function open(page, route, ready) {
  await page.evaluate((r) => { location.hash = r; }, route);
  await page.waitForSelector(`main[data-page="${ready}"]`);
  await page.waitForSelector(`body[data-ready="${ready}"]`);
}

// Fills the form for a small SLOB run and submits it; resolves to the job page's id.
async function submit(page, { label, sessions = '2', update = '0', size = '8M', runTime = '2' }) {
  await open(page, '#/bench/new', 'bench-new');
  await page.selectOption('#bench-pattern', 'slob');
  await page.getByLabel('Label').fill(label);
  await page.getByLabel('Sessions').fill(sessions);
  await page.getByLabel('Update percent').fill(update);
  await page.locator('#bench-size').fill(size);
  await page.locator('#bench-runtime_s').fill(runTime);
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForSelector('main[data-page="job"]');
  await page.waitForSelector('body[data-ready="job"]');
  return Number(/#\/bench\/jobs\/(\d+)/.exec(page.url())[1]);
}

async function points(page, sel) {
  return page.locator(sel).evaluate((el) => Number(el.dataset.points || 0));
}

let first = null;
let second = null;

test('the form shows the server’s fault next to the field it names', async (t) => {
  const page = await newPage(t);
  watcher(page).expect(JOBS, 400);
  await loginTo(page, 'bench/new');
  await page.waitForSelector('body[data-ready="bench-new"]');
  // every field has a label, and the limits show as hints
  await page.selectOption('#bench-pattern', 'slob');
  assert.match(await page.locator('#bench-sessions-hint').textContent(), /1 to 256/);
  assert.match(await page.locator('#bench-block_size-hint').textContent(), /512 B to 16 MiB/);
  await page.selectOption('#bench-pattern', 'iozone');
  assert.ok(await page.locator('#bench-passes').isVisible(), 'iozone has its passes');
  assert.ok(!(await page.locator('#bench-sessions').isVisible()), 'and no sessions');
  assert.match(await page.locator('label[for="bench-size"]').textContent(), /file_size/);
  await page.selectOption('#bench-pattern', 'slob');

  await page.getByLabel('Sessions').fill('0');
  await page.locator('#bench-size').fill('8M');
  await page.locator('#bench-runtime_s').fill('2');
  await page.getByRole('button', { name: 'Start run' }).click();
  const err = page.locator('#bench-sessions-error');
  await err.filter({ hasText: /\S/ }).waitFor();
  assert.match(await err.textContent(), /^sessions: .*1 to 256/);
  assert.equal(await page.locator('#bench-sessions').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.locator('main[data-page="bench-new"]').count(), 1, 'still on the form');

  // a size beyond any filesystem: the server's words, at the size field, the other cleared
  await page.getByLabel('Sessions').fill('2');
  await page.locator('#bench-size').fill('2P');
  await page.getByRole('button', { name: 'Start run' }).click();
  const sizeErr = page.locator('#bench-size-error');
  await sizeErr.filter({ hasText: /\S/ }).waitFor();
  assert.match(await sizeErr.textContent(), /^size: /);
  assert.equal(await err.textContent(), '');

  // a fault on a field folded under "More settings" unfolds it
  await page.locator('#bench-size').fill('8M');
  await page.locator('#bench-more > summary').click();
  await page.getByLabel('I/O depth').fill('4');
  await page.locator('#bench-more > summary').click();
  assert.ok(!(await page.locator('#bench-iodepth').isVisible()));
  await page.getByRole('button', { name: 'Start run' }).click();
  const depthErr = page.locator('#bench-iodepth-error');
  await depthErr.filter({ hasText: /\S/ }).waitFor();
  assert.match(await depthErr.textContent(), /^iodepth: .*io_uring/);
  assert.ok(await page.locator('#bench-iodepth').isVisible(), 'shown with its fault');
  assert.equal(await sizeErr.textContent(), '');

  await page.getByLabel('I/O depth').fill('');
  await shots(page, 'bench-new');
});

test('on a phone the refused field is brought into view below the sticky header', async (t) => {
  const page = await newPage(t, { phone: true });
  watcher(page).expect(JOBS, 400);
  await loginTo(page, 'bench/new');
  await page.waitForSelector('body[data-ready="bench-new"]');
  await page.selectOption('#bench-pattern', 'slob');
  await page.getByLabel('Sessions').fill('0');
  await page.locator('#bench-size').fill('8M');
  await page.locator('#bench-runtime_s').fill('2');
  const start = page.getByRole('button', { name: 'Start run' });
  await start.scrollIntoViewIfNeeded(); // the button at the form's foot: the field is far above
  await start.tap();
  await page.locator('#bench-sessions-error').filter({ hasText: /\S/ }).waitFor();
  await page.waitForFunction(() => document.activeElement?.id === 'bench-sessions');
  // focus scrolls at once; read the place once it holds still
  let r = null;
  await until('the field to hold still', async () => {
    const now = await page.locator('#bench-sessions').boundingBox();
    const still = r && now.y === r.y;
    r = now;
    return still;
  });
  const top = await page.locator('#top').boundingBox();
  assert.ok(r.y >= top.y + top.height && r.y + r.height <= 844, `the field at y=${r.y}, the header to ${top.y + top.height}`);
});

test('a short job: live progress, then its result', async (t) => {
  const page = await newPage(t);
  await loginTo(page, 'bench');
  first = await submit(page, { label: 'e2e-a', runTime: '3' });
  // every word the badge shows, from the page's first draw on
  await page.evaluate(() => {
    const el = document.querySelector('#bench-state');
    window.__states = [el.textContent.trim()];
    new MutationObserver(() => {
      const s = el.textContent.trim();
      if (s !== window.__states.at(-1)) window.__states.push(s);
    }).observe(el, { subtree: true, childList: true, characterData: true });
  });

  // live: the progress card with its clock and Cancel, and the charts get points
  await page.waitForSelector('#bench-progress', { timeout: RUN_MS });
  assert.ok(await page.getByRole('button', { name: 'Cancel run' }).isVisible());
  await page.waitForFunction(() => Number(document.querySelector('.bench-charts').dataset.points) >= 1, null, { timeout: RUN_MS });
  assert.match(await page.locator('#bench-elapsed').textContent(), /\d+s|queue/);
  // its seconds come in: the badge says running (it said queued for the whole run once,
  // then done)
  await page.waitForFunction(() => window.__states.includes('running'), null, { timeout: 3000 });
  // one picture while it runs (the four of shots() take longer than the run), and axe
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: join(OUT, 'bench-job-live-desktop-light.png'), fullPage: true });
  await axe(page);

  // done: the result
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });
  assert.equal((await page.locator('#bench-state').textContent()).trim(), 'done');
  const states = await page.evaluate(() => window.__states);
  assert.ok(states.indexOf('running') < states.indexOf('done'), `badge: ${states.join(' → ')}`);
  assert.ok((await points(page, '.bench-charts')) >= 2, 'a point a second');
  assert.match(await page.locator('#bench-iops-tile .tile-value').textContent(), /^\d[\d.]*[kMG]?$/);
  assert.match(await page.locator('#bench-thru-tile .tile-value').textContent(), /iB\/s$|B\/s$/);
  for (const p of ['p50', 'p99', 'p99.9']) {
    const cell = page.locator(`#bench-percentiles tr[data-pct="${p}"] td`).first();
    assert.match(await cell.textContent(), /^\d[\d.]*\s(µs|ms)$/, `${p} shown`);
  }
  const hist = page.locator('figure[data-dir="read"]');
  assert.ok(Number(await hist.getAttribute('data-bars')) > 0, 'the histogram has bars');
  assert.equal(await hist.locator('canvas').count(), 1, 'drawn');
  assert.match(await page.locator('#bench-disk-tile .tile-label').textContent(), /Disk IOPS/);
  assert.match(await page.locator('#bench-boxcpu-tile .tile-value').textContent(), /%|–/);
  // what it found: the tail at least (its latencies were measured), with a sentence
  const tail = page.locator('#bench-findings li[data-finding="tail"]');
  assert.match(await tail.locator('.bench-finding-value').textContent(), /^\d[\d.]*[kMG]?x$/);
  assert.match(await tail.locator('.bench-finding-text').textContent(), /p99\.9 .* p50 /);
  // and what its target sat on, under the spec
  await page.locator('#bench-env > summary').click();
  assert.match(await page.locator('#bench-env .bench-env-facts').textContent(), /Filesystem/);
  await shots(page, 'bench-job');
});

test('a run opened before its environment is resolved shows it once it has started', async (t) => {
  const page = await newPage(t);
  await loginTo(page, 'bench');
  // the first load of the job page answers as the server does while the job waits for
  // its environment (on a busy box, the page can be quicker than the resolution)
  let held = true;
  await page.route(/\/api\/bench\/v1\/jobs\/\d+$/, async (route) => {
    if (!held || route.request().method() !== 'GET') return route.continue();
    held = false;
    const res = await route.fetch();
    const body = await res.json();
    body.job.environment = null;
    return route.fulfill({ response: res, json: body });
  });
  await submit(page, { label: 'e2e-env', runTime: '2' });
  assert.equal(held, false, 'the job page was loaded through the route');
  await page.waitForSelector('#bench-env > summary', { timeout: RUN_MS });
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });
  assert.equal(await page.locator('#bench-env').count(), 1, 'shown once');
});

test('a second run compared with the first', async (t) => {
  assert.ok(first, 'the first run exists');
  const page = await newPage(t);
  await loginTo(page, 'bench');
  second = await submit(page, { label: 'e2e-b', update: '50', size: '12M' });
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });

  // the list: both, filtered by label and by state
  await open(page, '#/bench', 'bench');
  const rows = page.locator('#bench-runs tbody tr');
  await page.getByLabel('Label contains').fill('e2e-b');
  assert.equal(await rows.count(), 1);
  assert.equal(await rows.first().getAttribute('data-id'), String(second));
  await page.getByLabel('Label contains').fill('');
  await page.getByLabel('State').selectOption('done');
  await page.waitForFunction(() => [...document.querySelectorAll('#bench-runs tbody tr')].every((r) => r.dataset.state === 'done'));
  assert.ok((await rows.count()) >= 2);
  assert.match(await page.locator(`#bench-runs tr[data-id="${first}"] td[data-label="p99"]`).textContent(), /µs|ms/);
  await shots(page, 'bench');

  const compare = page.getByRole('button', { name: 'Compare' });
  assert.ok(await compare.isDisabled(), 'nothing picked yet');
  await page.locator(`input[data-id="${first}"]`).check();
  await page.locator(`input[data-id="${second}"]`).check();
  await compare.click();
  await page.waitForSelector('body[data-ready="compare"]');
  assert.match(page.url(), new RegExp(`ids=${first},${second}&baseline=${first}`));

  const table = page.locator('#bench-compare-table');
  assert.match(await table.locator('thead').textContent(), /e2e-a.*baseline.*e2e-b/);
  const diff = table.locator('tr[data-figure="summary.iops"] .diff');
  assert.match(await diff.textContent(), /^[▲▼] [+−]\d+\.\d\u00a0% \((better|worse)\)$|^= 0\.0 %/);
  assert.ok((await table.locator('.diff.better, .diff.worse').count()) > 0, 'differences coloured');
  await page.waitForFunction(() => Number(document.querySelector('.bench-cmp-iops')?.closest('figure').dataset.points) > 0);
  assert.equal(await page.locator('figure:has(.bench-cmp-lat)').getAttribute('data-series'), '2');
  assert.equal(await page.locator('.bench-charts canvas').count(), 2);
  // what changed between them, and a note on the second's IOPS against the noise
  assert.match(await page.locator('#bench-differences').textContent(), /update_pct 0 → 50/);
  // a size as the spec takes it, not in bytes
  assert.match(await page.locator('#bench-differences').textContent(), /size 8M → 12M/);
  assert.equal(await page.locator(`#bench-significance li[data-job="${second}"]`).count(), 1);
  // the verdict in words first, the statistics behind a click
  const note = page.locator(`#bench-significance li[data-job="${second}"]`);
  const words = await note.evaluate((el) => [...el.childNodes].filter((c) => c.nodeName !== 'DETAILS').map((c) => c.textContent).join(''));
  assert.match(words, /IOPS|Not known/);
  assert.doesNotMatch(words, /Welch|standard errors/);
  assert.equal(await note.locator('details').getAttribute('open'), null, 'the statistics closed');
  await note.locator('details summary').click();
  assert.match(await note.locator('details p').textContent(), /Welch's t|noise is not known/);
  assert.ok((await page.locator('#bench-cmp-findings tr[data-finding="tail"] td').count()) === 2, 'the findings side by side');
  await shots(page, 'bench-compare');

  // another baseline
  await page.getByLabel('Baseline').selectOption(String(second));
  await page.waitForFunction((id) => location.hash.endsWith(`baseline=${id}`), second);
  await page.waitForSelector('body[data-ready="compare"]');
  assert.match(await page.locator('#bench-compare-table thead').textContent(), /e2e-b\s*baseline/);
});

test('run again with changes: the form filled from a run, past the page cache by default', async (t) => {
  assert.ok(first, 'the first run exists');
  const page = await newPage(t);
  await loginTo(page, 'bench/new');
  await page.waitForSelector('body[data-ready="bench-new"]');
  // a plain pattern starts with Direct I/O on
  await page.selectOption('#bench-pattern', 'randread');
  assert.ok(await page.isChecked('#bench-direct'), 'Direct I/O is on for a new plain run');

  await open(page, `#/bench/jobs/${first}`, 'job');
  await page.getByRole('link', { name: 'Run again with changes' }).click();
  await page.waitForSelector('body[data-ready="bench-new"]');
  assert.match(page.url(), new RegExp(`#/bench/new\\?from=${first}$`));
  assert.equal(await page.locator('#bench-pattern').inputValue(), 'slob');
  assert.equal(await page.getByLabel('Label').inputValue(), 'e2e-a');
  assert.equal(await page.getByLabel('Sessions').inputValue(), '2');
  assert.equal(await page.locator('#bench-size').inputValue(), '8M', 'a size as typed, not in bytes');
  assert.match(await page.locator('h1').textContent(), new RegExp(`from run #${first}`));
  await page.getByLabel('Label').fill('e2e-again');
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForSelector('body[data-ready="job"]');
  const again = Number(/#\/bench\/jobs\/(\d+)/.exec(page.url())[1]);
  assert.ok(again > first);
  const doc = await (await fetch(`${box.http}${JOBS}/${again}`, { headers: { Authorization: `Basic ${Buffer.from(`admin:${box.admin_password}`).toString('base64')}` } })).json();
  assert.equal(doc.job.spec.label, 'e2e-again');
  assert.equal(doc.job.spec.sessions, 2);
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });

  // and from the list: the row's "again" opens the same form, filled from that run
  await open(page, '#/bench', 'bench');
  await page.getByRole('link', { name: `Run #${second} again with changes` }).click();
  await page.waitForSelector('body[data-ready="bench-new"]');
  assert.match(page.url(), new RegExp(`#/bench/new\\?from=${second}$`));
  assert.equal(await page.getByLabel('Label').inputValue(), 'e2e-b');
  assert.equal(await page.getByLabel('Update percent').inputValue(), '50');
  assert.equal(await page.locator('#bench-size').inputValue(), '12M');
  await shots(page, 'bench-again', { inPlace: true });
});

test('a sweep: its table fills, its knee is explained, its runs compare', async (t) => {
  const page = await newPage(t);
  await loginTo(page, 'bench');
  // submitted through the API, as a script would (the console reads sweeps)
  const [status, doc] = await page.evaluate(async () => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    const body = { name: 'e2e-sweep', spec: { pattern: 'randread', size: '8M', block_size: '4k', runtime_s: 1 }, axes: { threads: [1, 2] } };
    const res = await fetch('/api/bench/v1/sweeps', { method: 'POST', headers: { 'X-Auth-Session': token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return [res.status, await res.json()];
  });
  assert.equal(status, 201, JSON.stringify(doc));
  const id = doc.sweep.id;

  await open(page, '#/bench', 'bench');
  await page.locator('#bench-sweeps-link').click();
  await page.waitForSelector('body[data-ready="sweeps"]');
  assert.equal(await page.locator(`#sweeps tr[data-id="${id}"]`).count(), 1);
  await page.locator(`#sweeps tr[data-id="${id}"] a`).click();
  await page.waitForSelector('body[data-ready="sweep"]');
  // the page refreshes itself until both runs are done
  await page.waitForFunction(() => [...document.querySelectorAll('#sweep-table tbody tr')].every((r) => r.dataset.state === 'done'), null, { timeout: RUN_MS * 2 });
  const rows = page.locator('#sweep-table tbody tr');
  assert.equal(await rows.count(), 2);
  assert.deepEqual(await rows.locator('td[data-label="threads"]').allTextContents(), ['1', '2']);
  assert.match(await rows.first().locator('td[data-label="IOPS"]').textContent(), /\d/);
  // one knee entry for the one group, with its reason either way
  const knee = page.locator('#sweep-knees li');
  assert.equal(await knee.count(), 1);
  assert.ok((await knee.textContent()).length > 20, await knee.textContent());
  assert.equal(await page.locator('#sweep-cancel').count(), 0, 'no Cancel once it ended');
  await shots(page, 'bench-sweep');
  await page.locator('#sweep-compare').click();
  await page.waitForSelector('body[data-ready="compare"]');
  // (threads of a randread run are its readers in the spec as stored)
  assert.match(await page.locator("#bench-differences").textContent(), /readers 1 → 2/);
  // reads only: no write rows, which would be zero in every run
  assert.ok((await page.locator('#bench-compare-table tr[data-figure^="read."]').count()) > 0);
  assert.equal(await page.locator('#bench-compare-table tr[data-figure^="write."]').count(), 0);
});

test('a sweep made in the form: a refused axis said at its row, then it runs, and its chart marks the knee', async (t) => {
  const page = await newPage(t);
  watcher(page).expect('/api/bench/v1/sweeps', 400);
  await loginTo(page, 'bench/sweeps');
  await page.waitForSelector('body[data-ready="sweeps"]');
  await page.locator('#sweep-new').click();
  await page.waitForSelector('body[data-ready="sweep-new"]');
  assert.equal(await page.locator('h1').textContent(), 'New sweep');
  await page.selectOption('#bench-pattern', 'randread');
  // the first axis offered: the thread count doubling, its own field swept
  const axis = page.locator('.sweep-axis').first();
  assert.equal(await axis.locator('select').inputValue(), 'threads');
  assert.equal(await page.locator('#bench-threads').isDisabled(), true, 'a swept field is set by its axis');
  await page.locator('#sweep-name').fill('e2e-form-sweep');
  await page.locator('#bench-size').fill('8M');
  await page.locator('#bench-block_size').fill('4k');
  // 3 s: a whole second of the disks' figures inside each run, whatever second it starts
  // in (a run's finding on its reads compares them with the disk's)
  await page.locator('#bench-runtime_s').fill('3');
  // through the page cache, on purpose: on two CPUs more threads soon add no IOPS, only waiting
  await page.locator('#bench-direct').uncheck();
  await axis.locator('input').fill('1, 2, 2');
  assert.match(await page.locator('#sweep-axes-count').textContent(), /^3 runs/);
  await page.getByRole('button', { name: 'Start sweep' }).click();
  await page.waitForFunction(() => document.querySelector('.sweep-axis .field-error')?.textContent.length > 0);
  assert.match(await axis.locator('.field-error').textContent(), /^axes\.threads: value 2 is value 1 again/);
  assert.equal(await axis.locator('input').getAttribute('aria-invalid'), 'true');
  assert.match(page.url(), /#\/bench\/sweeps\/new/, 'nothing made');
  // a second axis, added and removed again
  await page.locator('#sweep-axis-add').click();
  assert.equal(await page.locator('.sweep-axis').count(), 2);
  await page.locator('.sweep-axis').nth(1).getByRole('button', { name: 'Remove this axis' }).click();
  assert.equal(await page.locator('.sweep-axis').count(), 1);
  // 1 to 256 threads on two CPUs: past two, more threads add no IOPS, only waiting, so
  // the server finds a knee (a step of under 5 % more IOPS for a higher p99). On a very
  // busy machine more threads win a larger share of the CPUs from the other processes at
  // every step, and then there is none: the server says so, and nothing is marked.
  await axis.locator('input').fill('1, 2, 64, 128, 256');
  assert.match(await page.locator('#sweep-axes-count').textContent(), /^5 runs/);
  await shots(page, 'bench-sweep-form', { inPlace: true });
  await page.getByRole('button', { name: 'Start sweep' }).click();
  await page.waitForSelector('main[data-page="sweep"]');
  await page.waitForSelector('body[data-ready="sweep"]');
  assert.match(await page.locator('h1').textContent(), /e2e-form-sweep/);
  await page.waitForFunction(() => [...document.querySelectorAll('#sweep-table tbody tr')].every((r) => r.dataset.state === 'done'), null, { timeout: RUN_MS * 4 });
  const rows = page.locator('#sweep-table tbody tr');
  assert.deepEqual(await rows.locator('td[data-label="threads"]').allTextContents(), ['1', '2', '64', '128', '256']);
  // the chart: a point per run on the threads axis, and the knee the server found marked
  const fig = page.locator('figure:has(.sweep-iops)');
  await page.waitForFunction(() => document.querySelector('figure:has(.sweep-iops)')?.dataset.points === '5');
  assert.equal(await fig.getAttribute('data-axis'), 'threads');
  const knee = await page.locator('#sweep-knees li').first().getAttribute('data-threads');
  const why = await page.locator('#sweep-knees li').first().textContent();
  const marked = JSON.parse(await fig.getAttribute('data-knees'));
  t.diagnostic(`knee: ${knee}; ${why}`);
  if (knee === 'null') {
    assert.match(why, /^No knee\. IOPS grew by 5 % or more, or p99 did not grow, at every step up to 256 threads$/);
    assert.deepEqual(marked, [], 'no mark without a knee');
    assert.equal(await page.locator('#sweep-table tr.knee').count(), 0);
  } else {
    assert.match(knee, /^(1|2|64|128)$/);
    assert.deepEqual(marked, [Number(knee)], 'the mark is the server\'s knee');
    assert.equal(await page.locator(`#sweep-table tr.knee td[data-label="threads"]`).textContent(), knee);
  }
  // The marks the chart draws, from a sweep document whose knees are known (whatever this
  // machine's runs gave): one group, and two groups by a second axis, each its own mark.
  const model = await page.evaluate(async () => {
    const { chartModel } = await import('/js/bench/sweeps.js');
    const row = (threads, size, iops) => ({ values: size ? { threads, size } : { threads }, state: 'done', iops, p99_ns: 1000 * threads });
    const knee = (threads, group = {}) => ({ group, axis: 'threads', threads, iops: 1, p99_ns: 1, why: '' });
    const one = chartModel({ axes: { threads: [1, 2, 4, 8] }, knee: [knee(4)], table: [1, 2, 4, 8].map((n) => row(n, null, 100 * n)) });
    const two = chartModel({
      axes: { threads: [1, 2, 4], size: ['8M', '64M'] },
      knee: [knee(2, { size: '8M' }), { ...knee(null, { size: '64M' }), threads: null }],
      table: [1, 2, 4].flatMap((n) => [row(n, '8M', n), row(n, '64M', 2 * n)]),
    });
    return {
      one: { axis: one.axis, marks: one.marks.map((m) => [m.x, m.label]), iops: one.column(one.groups[0], (r) => r.iops) },
      two: { labels: two.labels, marks: two.marks.map((m) => [m.x, m.label]) },
    };
  });
  assert.deepEqual(model.one, { axis: 'threads', marks: [[2, 'knee: 4 threads']], iops: [100, 200, 400, 800] });
  assert.deepEqual(model.two, { labels: ['size 8M', 'size 64M'], marks: [[1, 'knee size 8M']] });
  // the readout names the thread count under the cursor
  const box = await page.locator('.sweep-iops').boundingBox();
  await page.mouse.move(box.x + box.width - 75, box.y + 60);
  await page.waitForSelector('.sweep-iops .chart-tip:not([hidden])');
  assert.match(await page.locator('.sweep-iops .chart-tip-x').textContent(), /^(1|2|64|128|256)$/);
  await shots(page, 'bench-sweep-chart');
  // its runs read through the page cache, and their findings say so (the box's disks read
  // some 12k/s, far fewer than the reads asked): the run with the most IOPS, the surest
  const best = await rows.evaluateAll((trs) => {
    const iops = (tr) => { const m = /^([\d.]+)([kMG]?)$/.exec(tr.querySelector('td[data-label="IOPS"]').textContent.trim()); return m ? Number(m[1]) * ({ k: 1e3, M: 1e6, G: 1e9 }[m[2]] || 1) : 0; };
    return trs.reduce((b, tr, i) => (iops(tr) > iops(trs[b]) ? i : b), 0);
  });
  await rows.nth(best).locator('td[data-label="Run"] a').click();
  await page.waitForSelector('body[data-ready="job"]');
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });
  const cache = page.locator('#bench-findings li[data-finding="cache_served"]');
  assert.equal(await cache.locator('.bench-finding-title').textContent(), 'The page cache answered');
  assert.equal(await cache.getAttribute('data-flag'), 'true');
  assert.match(await cache.locator('.bench-finding-text').textContent(), /measured memory, not the disk\. Run it with Direct I\/O/);
});

test('a cancelled run says so, and keeps what it did', async (t) => {
  const page = await newPage(t);
  await loginTo(page, 'bench');
  await submit(page, { label: 'e2e-cancel', runTime: '60' });
  await page.waitForFunction(() => Number(document.querySelector('.bench-charts').dataset.points) >= 1, null, { timeout: RUN_MS });
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await page.waitForFunction(() => document.querySelector('#bench-state')?.textContent.trim() === 'cancelled', null, { timeout: RUN_MS });
  assert.match(await page.locator('#bench-reason').textContent(), /^Cancelled: /);
  await page.waitForSelector('#bench-result', { timeout: RUN_MS });
  assert.equal(await page.locator('#bench-result-title').textContent(), 'Partial result');
  assert.equal(await page.locator('#bench-cancel').count(), 0, 'no Cancel once it ended');
});

test('a monitor user reads runs and results but may not start or cancel one', async (t) => {
  assert.ok(first, 'the first run exists');
  const admin = await newPage(t);
  await loginTo(admin, 'bench');
  const made = await admin.evaluate(async () => {
    const { token } = JSON.parse(sessionStorage.getItem('spindle.session'));
    const r = await fetch('/api/user/v1/users', {
      method: 'POST',
      headers: { 'X-Auth-Session': token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'benchwatch', password: 'Watch-the-runs-1', roles: ['monitor'] }),
    });
    return r.status;
  });
  assert.equal(made, 201);

  const page = await newPage(t, { phone: true });
  await loginTo(page, 'bench', 'benchwatch', 'Watch-the-runs-1');
  assert.equal(await page.locator('#bench-new-link').count(), 0, 'no New run');
  assert.ok((await page.locator('#bench-runs tbody tr').count()) >= 2);
  await open(page, `#/bench/jobs/${first}`, 'job');
  await page.waitForSelector('#bench-result');
  assert.equal(await page.locator('#bench-cancel').count(), 0);
  await open(page, '#/bench/new', 'bench-new');
  assert.match(await page.locator('main').textContent(), /may read runs and results but not start runs/);
});
