// SPDX-License-Identifier: ISC
// The audit log, newest first. The API answers entries from a start time, oldest first,
// at most 1000 at a time: the page reads forward from the chosen start to the end, then
// filters by user, action, result and text here, and shows PAGE entries at a time.

import { get, qs } from '../api.js';
import { field, h, showFault, timeEl } from '../dom.js';
import { stackTable } from './common.js';
import { setRoute } from '../app.js';

const PAGE = 50;
const BATCH = 1000; // the API's largest limit
const MAX_BATCHES = 20; // 20,000 entries: past that, ask for a later start

const SINCE = [
  ['3600', 'Last hour'],
  ['86400', 'Last 24 hours'],
  ['604800', 'Last 7 days'],
  ['2592000', 'Last 30 days'],
  ['31536000', 'Last 365 days'],
  ['all', 'Everything kept'],
];

const COLUMNS = [
  { label: 'Time', key: 'time' },
  { label: 'User', key: 'user' },
  { label: 'Action', key: 'action' },
  { label: 'Target', key: 'target' },
  { label: 'Result', key: 'result' },
  { label: 'Details', key: 'details' },
  { label: 'Address', key: 'address' },
];

// Every entry from start on, oldest first. The next batch starts at the last entry's
// second; the entries of that second read twice are dropped by id.
async function readFrom(start, signal) {
  const out = [];
  const seen = new Set();
  let from = start;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const logs = (await get(`/api/log/v1/logs/audit${qs({ start: from, limit: BATCH })}`, { signal })).logs;
    for (const e of logs) {
      if (seen.has(e.id)) continue;
      seen.add(e.id);
      out.push(e);
    }
    if (logs.length < BATCH) return { entries: out, complete: true };
    const last = Math.floor(new Date(logs[logs.length - 1].time).getTime() / 1000);
    if (last === from) break; // a whole batch in one second: cannot step on
    from = last;
  }
  return { entries: out, complete: false };
}

// A target as a person finds it: a disk's path, and under it the disk as it was then
// ("sdc · Slot 02 · serial Z1Z0A102", from the entry's details).
function targetCell(e) {
  const m = /; disk (.+)$/.exec(e.details || '');
  if (!m) return e.target || '';
  return h('span', { class: 'audit-target' }, h('span', { class: 'audit-disk', text: m[1] }), h('span', { class: 'muted mono', text: e.target || '' }));
}

function options(values, all) {
  return [h('option', { value: '', text: all }), ...values.map((v) => h('option', { value: v, text: v }))];
}

export async function render(section, ctx) {
  const since = field('audit-since', 'Since', h('select', { name: 'start' }, SINCE.map(([v, l]) => h('option', { value: v, text: l, selected: v === '604800' }))));
  const user = field('audit-user', 'User', h('select', { name: 'user' }, options([], 'Anyone')));
  const action = field('audit-action', 'Action', h('select', { name: 'action' }, options([], 'Any action')));
  const result = field(
    'audit-result',
    'Result',
    h('select', { name: 'result' }, h('option', { value: '', text: 'Any result' }), h('option', { value: 'success', text: 'Succeeded' }), h('option', { value: 'failure', text: 'Failed' })),
  );
  const text = field('audit-text', 'Search', h('input', { name: 'q', type: 'search', autocomplete: 'off', placeholder: 'disk, serial, target, details, address' }));
  const form = h('form', { class: 'filters', id: 'audit-filters', role: 'search', 'aria-label': 'Filter the audit log', novalidate: true }, since.wrap, user.wrap, action.wrap, result.wrap, text.wrap);
  const error = h('p', { class: 'error', role: 'alert' });
  const summary = h('p', { class: 'muted', id: 'audit-summary', role: 'status' });
  const list = h('div', { class: 'admin-list' });
  const newer = h('button', { type: 'button', text: 'Newer', id: 'audit-newer' });
  const older = h('button', { type: 'button', text: 'Older', id: 'audit-older' });
  const pageInfo = h('span', { class: 'muted', id: 'audit-page' });
  const refresh = h('button', { type: 'button', text: 'Refresh', id: 'audit-refresh' });
  const pager = h('nav', { class: 'row pager', 'aria-label': 'Audit log pages' }, newer, pageInfo, older);
  section.append(form, h('div', { class: 'toolbar' }, summary, h('span', { class: 'spacer' }), refresh), error, list, pager);

  let entries = []; // newest first
  let complete = true;
  let page = 0;

  // The filters from the route (#/admin/audit?since=86400&user=bob&action=...&result=
  // failure&q=sdc), and into it as they change: a reload or a link shows the same entries.
  const q0 = ctx.query;
  if (SINCE.some(([v]) => v === q0.get('since'))) since.input.value = q0.get('since');
  if (['success', 'failure'].includes(q0.get('result'))) result.input.value = q0.get('result');
  text.input.value = q0.get('q') || '';
  let pending = { user: q0.get('user') || '', action: q0.get('action') || '' }; // once their choices are known
  function toRoute() {
    const p = new URLSearchParams();
    if (since.input.value !== '604800') p.set('since', since.input.value);
    for (const [k, el] of [['user', user.input], ['action', action.input], ['result', result.input]]) if (el.value) p.set(k, el.value);
    if (text.input.value.trim()) p.set('q', text.input.value.trim());
    const qs = p.toString();
    setRoute(`admin/audit${qs ? `?${qs}` : ''}`);
  }

  function setChoices(select, values) {
    const keep = select.value;
    const all = select.options[0].textContent;
    select.replaceChildren(...options(values, all));
    select.value = values.includes(keep) ? keep : '';
  }

  function filtered() {
    const u = user.input.value;
    const a = action.input.value;
    const r = result.input.value;
    const q = text.input.value.trim().toLowerCase();
    return entries.filter(
      (e) =>
        (!u || e.user === u) &&
        (!a || e.action === a) &&
        (!r || e.result === r) &&
        (!q || [e.target, e.details, e.address, e.user, e.action].some((s) => (s || '').toLowerCase().includes(q))),
    );
  }

  function draw() {
    const shown = filtered();
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    const slice = shown.slice(page * PAGE, page * PAGE + PAGE);
    const rows = slice.map((e) => [
      timeEl(e.time),
      e.user || h('span', { class: 'muted', text: '–' }),
      h('code', { text: e.action }),
      targetCell(e),
      h('span', { class: ['badge', e.result === 'success' ? 'state-ok' : 'state-failed'], text: e.result === 'success' ? 'ok' : e.result === 'failure' ? 'failed' : e.result }),
      h('span', { class: 'details', text: e.details || '' }),
      e.address || '',
    ]);
    list.replaceChildren(slice.length ? stackTable('Audit log entries, newest first', COLUMNS, rows, { rowData: slice.map((e) => ({ id: String(e.id) })) }) : h('p', { class: 'muted empty', text: 'No entries match.' }));
    summary.textContent =
      `${shown.length} of ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} match, newest first.` +
      (complete ? '' : ` Only the ${entries.length} oldest since the start were read: choose a later start for the newest.`);
    pageInfo.textContent = `Page ${page + 1} of ${pages}`;
    newer.disabled = page === 0;
    older.disabled = page >= pages - 1;
    pager.hidden = pages === 1;
  }

  async function load() {
    const s = since.input.value;
    const start = s === 'all' ? 0 : Math.floor(Date.now() / 1000) - Number(s);
    refresh.disabled = true;
    try {
      const got = await readFrom(start, ctx.signal);
      entries = got.entries.reverse();
      complete = got.complete;
      setChoices(user.input, [...new Set(entries.map((e) => e.user).filter(Boolean))].sort());
      setChoices(action.input, [...new Set(entries.map((e) => e.action))].sort());
      if (pending) {
        for (const [k, el] of [['user', user.input], ['action', action.input]]) {
          if (pending[k] && ![...el.options].some((o) => o.value === pending[k])) el.append(h('option', { value: pending[k], text: pending[k] }));
          if (pending[k]) el.value = pending[k];
        }
        pending = null;
      }
      showFault(null, { start: since }, error);
      page = 0;
      draw();
    } catch (e) {
      if (e.name === 'AbortError') return;
      showFault(e, { start: since }, error);
    } finally {
      refresh.disabled = false;
    }
  }

  form.addEventListener('submit', (ev) => ev.preventDefault());
  since.input.addEventListener('change', () => {
    toRoute();
    load();
  });
  for (const f of [user, action, result])
    f.input.addEventListener('change', () => {
      page = 0;
      toRoute();
      draw();
    });
  text.input.addEventListener('input', () => {
    page = 0;
    toRoute();
    draw();
  });
  refresh.addEventListener('click', load);
  // A new page starts at its top: the pager sits below a long list.
  const turn = (by) => {
    page = Math.max(0, page + by);
    draw();
    summary.scrollIntoView({ block: 'start' });
  };
  newer.addEventListener('click', () => turn(-1));
  older.addEventListener('click', () => turn(1));
  await load();
  ctx.ready();
}
