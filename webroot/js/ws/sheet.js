// SPDX-License-Identifier: ISC
// One worksheet: charts stacked under one shared time window, cursors synced.
//
// The window is [end - seconds, end). Live, its end is the server's newest sample (asked
// of the server, never the browser's clock, which may be off), and it moves on by itself:
// every second for windows up to 10 minutes, about once per new point for longer ones,
// never while the page is hidden. Paused, the end stays where the user put it (back,
// forward, a dragged range). Each chart asks for about one point per pixel of its width
// (points=), at the finest granularity that the retention still holds for the window.
// Datasets whose keys are ranges of latency, size, offset or utilization are heat maps
// (heat.js), as the appliance draws them; the others are lines.

import { ApiError, can, get, post, put, seg, session } from '../api.js';
import { append, bytes, download, duration, h, ms, naturalCompare, num, prefs, time as timeText, timeEl, toast } from '../dom.js';
import { chart, colour } from '../chart.js';
import { go, setRoute } from '../app.js';
import { askName, chooseKeys } from './dialog.js';
import { heatKind, rangeText as bucketText } from './buckets.js';
import { heatChart } from './heat.js';
import { BASE, cloneWorksheet, deleteWorksheet, mayEdit, mayModify, renameWorksheet } from './list.js';
import { collapse, csv, mergeSamples, OTHER, shape, stats } from './series.js';

const DATASETS = '/api/analytics/v1/datasets';
const MIN_SECONDS = 10;
const DEFAULT_SECONDS = 600;
const LIVE_EVERY_SECOND = 600; // windows up to this many seconds refresh every second
const TOPS = [4, 8, 16, 32, 0]; // 0: every key
const OTHER_COLOUR = '#8a8f94';
const PRESETS = [
  ['1 min', 60],
  ['10 min', 600],
  ['1 h', 3600],
  ['1 d', 86400],
  ['1 week', 604800],
];

let sheetSeq = 0;

// The dataset's URL: its href from the catalog, else its name encoded as the API wants.
function hrefOf(catalog, name) {
  const d = catalog.get(name);
  return d ? d.href : `${DATASETS}/${encodeURIComponent(name.replace(/\//g, '|'))}`;
}

// Axis and legend text for a unit.
function formatter(unit) {
  switch (unit) {
    case 'percent':
      return (v) => `${num(v)}\u00a0%`;
    case 'bytes':
    case 'bytes per second':
      return (v) => bytes(v);
    case 'kilobytes per second':
      return (v) => bytes(v * 1024);
    case 'milliseconds':
      return (v) => (v === 0 ? '0' : ms(v));
    default:
      return (v) => num(v);
  }
}

function fileName(s) {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, '') || 'chart';
}

function windowText(seconds) {
  const p = PRESETS.find(([, s]) => s === seconds);
  if (p) return p[0];
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export async function renderSheet(main, ctx) {
  const { signal } = ctx;
  const isNew = ctx.parts[0] === 'new';
  const [catalogDoc, settingsDoc, wsDoc] = await Promise.all([
    get(DATASETS, { signal }),
    get('/api/analytics/v1/settings', { signal }),
    isNew ? null : get(`${BASE}/${seg(ctx.parts[0])}`, { signal }),
  ]);
  const catalog = new Map(catalogDoc.datasets.map((d) => [d.name, d]));
  const ret = settingsDoc.settings;
  const allSeconds = Math.max(ret.retain_second_data, ret.retain_minute_data, ret.retain_hour_data) * 3600;

  let ws;
  if (isNew) {
    const first = ctx.query.get('dataset');
    ws = { uuid: null, name: '', owner: session.user, mtime: null, datasets: first ? [{ name: first, drilldowns: [], seconds: DEFAULT_SECONDS }] : [] };
  } else {
    ws = wsDoc.worksheet;
  }
  const edit = isNew ? mayModify() : mayEdit(ws);
  // What was on the page, unsaved, when the session expired: back as it was.
  const draft = edit && ctx.draft && Array.isArray(ctx.draft.datasets) ? ctx.draft : null;
  if (draft) ws = { ...ws, datasets: draft.datasets };
  const syncKey = `ws-${++sheetSeq}`;
  // The window the worksheet was saved with: its length, and its end when saved paused.
  const savedWindow = () => {
    const d = ws.datasets[0];
    const end = d && d.end ? Math.round(Date.parse(d.end) / 1000) : null;
    return { seconds: (d && d.seconds) || DEFAULT_SECONDS, end: Number.isFinite(end) ? end : null };
  };
  const own0 = savedWindow();
  const view = {
    live: own0.end === null,
    seconds: Math.min(allSeconds, Math.max(MIN_SECONDS, own0.seconds)),
    end: own0.end, // paused: the window's end, epoch seconds
    edge: null, // the server's newest sample + 1, as last seen
  };
  // The window from the route (a reload, a bookmark, a link someone sent): ?seconds=N and,
  // paused, &end=T (epoch seconds).
  const qSeconds = Number(ctx.query.get('seconds'));
  if (Number.isInteger(qSeconds) && qSeconds > 0) {
    view.seconds = Math.min(allSeconds, Math.max(MIN_SECONDS, qSeconds));
    // a window in the address is the whole window: without an end, it is live
    view.live = true;
    view.end = null;
  }
  const qEnd = Number(ctx.query.get('end'));
  if (ctx.query.has('end') && Number.isInteger(qEnd) && qEnd > 0) {
    view.live = false;
    view.end = qEnd;
  }
  // ... and back into the route whenever it changes, so a reload keeps it.
  const routeNow = () => {
    const q = new URLSearchParams();
    if (!ws.uuid && ctx.query.get('dataset')) q.set('dataset', ctx.query.get('dataset'));
    // the worksheet's own window, as saved, needs no words in the address
    const own = savedWindow();
    const ownEnd = view.live ? null : view.end;
    if (view.seconds !== own.seconds || ownEnd !== own.end) {
      q.set('seconds', String(view.seconds));
      if (ownEnd !== null) q.set('end', String(ownEnd));
    }
    const qs = q.toString();
    return `worksheets/${ws.uuid ? seg(ws.uuid) : 'new'}${qs ? `?${qs}` : ''}`;
  };
  let dirty = (isNew && ws.datasets.length > 0) || !!draft;
  ctx.stash(() => (dirty && edit ? { datasets: body().datasets } : null));
  ctx.guard(() => (dirty && edit ? `${ws.name ? `“${ws.name}”` : 'This worksheet'} has unsaved changes. Leave it and lose them?` : null));
  const charts = [];

  // ---- the head: name, owner, and what can be done with it

  const title = h('h1', { class: 'ws-title' });
  const meta = h('p', { class: 'muted ws-meta' });
  const dirtyNote = h('span', { class: 'ws-dirty', text: 'Unsaved changes', hidden: true });
  const showHead = () => {
    title.textContent = ws.name || 'New worksheet';
    meta.replaceChildren(
      ws.uuid ? `Owner ${ws.owner}` : 'Not saved yet',
      ws.mtime ? ' · changed ' : '',
      ws.mtime ? timeEl(ws.mtime, { seconds: false }) : '',
      edit ? '' : ' · read-only',
    );
    dirtyNote.hidden = !dirty || !edit;
    for (const b of [renameBtn, deleteBtn]) if (b) b.hidden = !ws.uuid;
    if (cloneBtn) cloneBtn.hidden = !ws.uuid;
  };
  const markDirty = () => {
    dirty = true;
    showHead();
  };

  const addBtn = edit ? h('button', { type: 'button', text: 'Add chart', 'aria-expanded': 'false', 'aria-controls': 'ws-add' }) : null;
  const saveBtn = edit ? h('button', { type: 'button', class: 'primary', text: 'Save' }) : null;
  const renameBtn = edit ? h('button', { type: 'button', text: 'Rename' }) : null;
  const cloneBtn = mayModify() ? h('button', { type: 'button', text: 'Clone' }) : null;
  const deleteBtn = edit ? h('button', { type: 'button', class: 'danger', text: 'Delete' }) : null;

  // ---- adding a chart: a statistic, then its drilldown

  const statistics = new Map(); // statistic -> a dataset of it (grouping, explanation, unit, drilldowns)
  for (const d of catalogDoc.datasets) if (!statistics.has(d.statistic)) statistics.set(d.statistic, d);
  const groups = new Map();
  for (const d of statistics.values()) {
    if (!groups.has(d.grouping)) groups.set(d.grouping, []);
    groups.get(d.grouping).push(d);
  }
  const statSel = h(
    'select',
    { id: 'ws-add-stat', name: 'statistic' },
    [...groups].map(([g, list]) => h('optgroup', { label: g }, list.map((d) => h('option', { value: d.statistic, text: d.statistic })))),
  );
  const drillSel = h('select', { id: 'ws-add-drill', name: 'drilldown' });
  // A dataset may be kept to one disk, and a heat map of the disks' (or the pools')
  // operations to one direction, as the appliance names them: io.ops[disk=sda][latency].
  const diskSel = h('select', { id: 'ws-add-disk', name: 'disk' }, h('option', { value: '', text: 'every disk' }));
  const opSel = h('select', { id: 'ws-add-op', name: 'op' }, ['', 'read', 'write'].map((v) => h('option', { value: v, text: v || 'both' })));
  const diskField = h('div', { class: 'field', hidden: true }, h('label', { for: diskSel.id, text: 'Disk' }), diskSel);
  const opField = h('div', { class: 'field', hidden: true }, h('label', { for: opSel.id, text: 'Operations' }), opSel);
  let disksAsked = false;
  let disksRetry = 0; // the timer asking again
  let disksTries = 0;
  // The disks the collector counts, once: the keys of io.ops[disk]'s newest seconds (none
  // yet in a box's first seconds: asked again a second later, while the field is shown,
  // up to half a minute).
  const loadDisks = async () => {
    if (disksAsked) return;
    disksAsked = true;
    clearTimeout(disksRetry);
    try {
      const doc = await get(`${DATASETS}/${seg('io.ops[disk]')}/data?start=-3&seconds=3`, { signal });
      const samples = Array.isArray(doc.data) ? doc.data : doc.data ? [doc.data] : [];
      const names = new Set();
      for (const s of samples) for (const kv of (s && s.data && s.data.data) || []) names.add(kv.key);
      diskSel.append(...[...names].sort(naturalCompare).map((n) => h('option', { value: n, text: n })));
      if (!names.size && ++disksTries < 30) {
        disksAsked = false;
        disksRetry = setTimeout(() => signal.aborted || diskField.hidden || loadDisks(), 1000);
      }
    } catch (err) {
      if (err.name !== 'AbortError') disksAsked = false; /* asked again next time */
    }
  };
  signal.addEventListener('abort', () => clearTimeout(disksRetry));
  const statHint = h('p', { class: 'hint', id: 'ws-add-stat-hint' });
  const drillHint = h('p', { class: 'hint', id: 'ws-add-drill-hint' });
  statSel.setAttribute('aria-describedby', statHint.id);
  drillSel.setAttribute('aria-describedby', drillHint.id);
  const addError = h('p', { class: 'error', role: 'alert' });
  const addGo = h('button', { type: 'submit', class: 'primary', text: 'Add' });
  const chosenName = () =>
    statSel.value +
    (!diskField.hidden && diskSel.value ? `[disk=${diskSel.value}]` : '') +
    (!opField.hidden && opSel.value ? `[op=${opSel.value}]` : '') +
    (drillSel.value ? `[${drillSel.value}]` : '');
  // Which filters the statistic and drilldown take (as the server checks them).
  const showFilters = () => {
    const stat = statSel.value;
    const ofDisks = ['io.ops', 'io.bytes', 'io.latency', 'io.queue', 'io.busy'].includes(stat);
    diskField.hidden = !ofDisks || drillSel.value === 'disk';
    opField.hidden = !((stat === 'io.ops' && ['latency', 'size', 'offset'].includes(drillSel.value)) || stat === 'zpool.vdev_ops');
    if (!diskField.hidden) loadDisks();
  };
  const showDrill = () => {
    const d = statistics.get(statSel.value);
    if (!d) return;
    statHint.textContent = `${d.explanation} Unit: ${d.unit}.`;
    const keep = drillSel.value;
    drillSel.replaceChildren(
      h('option', { value: '', text: 'none (the total)' }),
      ...d.available_drilldowns.map((k) => h('option', { value: k, text: `by ${k}` })),
    );
    if (d.available_drilldowns.includes(keep)) drillSel.value = keep;
    showFilters();
    showDrillHint();
  };
  const showDrillHint = () => {
    const name = chosenName();
    if (catalog.has(name)) drillHint.textContent = `Dataset ${name}.`;
    else if (can('settings:modify')) drillHint.textContent = `${name} is not collected yet: adding it starts collecting it from now on.`;
    else drillHint.textContent = `${name} is not collected; an administrator can start collecting it.`;
  };
  statSel.addEventListener('change', showDrill);
  drillSel.addEventListener('change', () => {
    showFilters();
    showDrillHint();
  });
  diskSel.addEventListener('change', showDrillHint);
  opSel.addEventListener('change', showDrillHint);
  const addForm = h(
    'form',
    { class: 'card ws-add', id: 'ws-add', hidden: true, 'aria-label': 'Add a chart' },
    h('h2', { text: 'Add a chart' }),
    h('div', { class: 'ws-add-fields' },
      h('div', { class: 'field' }, h('label', { for: statSel.id, text: 'Statistic' }), statSel, statHint),
      h('div', { class: 'field' }, h('label', { for: drillSel.id, text: 'Broken down by' }), drillSel, drillHint),
      diskField,
      opField),
    addError,
    h('div', { class: 'row' }, addGo, h('button', { type: 'button', text: 'Cancel', on: { click: () => toggleAdd(false) } })),
  );
  const toggleAdd = (open) => {
    addForm.hidden = !open;
    if (addBtn) addBtn.setAttribute('aria-expanded', String(open));
    if (open) {
      showDrill();
      statSel.focus();
    } else if (addBtn) addBtn.focus();
  };
  addForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    addError.textContent = '';
    const name = chosenName();
    addGo.disabled = true;
    try {
      await addDataset(name, () => toggleAdd(false));
    } catch (err) {
      if (err.name !== 'AbortError') addError.textContent = err.details || err.message;
    } finally {
      addGo.disabled = false;
    }
  });

  // A chart of the dataset name, collected from now on if it is not yet (which needs
  // settings:modify): the add form's, and a legend key's drilldown. done() before it draws.
  async function addDataset(name, done = () => {}) {
    if (!catalog.has(name)) {
      if (!can('settings:modify')) throw new Error(`${name} is not collected; an administrator can start collecting it.`);
      // with a filter, the whole name as the statistic (the appliance's way)
      const m = /^([^[]+)\[([^=\]]+)\]$/.exec(name);
      const body = name.includes('=') || !m ? { statistic: name } : { statistic: m[1], drilldown: m[2] };
      const d = (await post(DATASETS, body, { signal })).dataset;
      catalog.set(d.name, d);
    }
    const c = addChart({ name, drilldowns: [], seconds: view.seconds });
    markDirty();
    done();
    await refresh();
    c.heading.focus();
    c.el.scrollIntoView({ block: 'start' });
    return c;
  }

  // What a legend key drills down to, as the appliance's worksheets do: a disk of a
  // by-disk chart broken down by what its statistic offers but disk (io.ops[disk=sdc][op]),
  // reads or writes of io.ops[op] as heat maps (io.ops[op=read][latency]).
  const DISK_STATS = ['io.ops', 'io.bytes', 'io.latency', 'io.queue', 'io.busy'];
  const PHRASE = { op: 'type of operation' };
  function drillTargets(c, key) {
    const d = catalog.get(c.view.name);
    if (!edit || !d || c.kind || c.view.name.includes('=')) return [];
    const offered = (statistics.get(d.statistic) || d).available_drilldowns || [];
    let drills = [];
    let filter = '';
    if (d.drilldown === 'disk' && DISK_STATS.includes(d.statistic)) {
      drills = offered.filter((x) => x !== 'disk');
      filter = `disk=${key}`;
    } else if (d.drilldown === 'op' && d.statistic === 'io.ops' && (key === 'read' || key === 'write')) {
      drills = offered.filter((x) => ['latency', 'size', 'offset'].includes(x));
      filter = `op=${key}`;
    }
    return drills.map((x) => ({ name: `${d.statistic}[${filter}][${x}]`, label: `${key} by ${PHRASE[x] || x}` }));
  }

  // ---- time controls

  const liveBtn = h('button', { type: 'button', class: 'ws-live', 'aria-pressed': 'true', title: 'Follow the newest samples, or hold the window still' });
  const presetBtns = PRESETS.map(([label, s]) => h('button', { type: 'button', class: 'small', text: label, 'aria-pressed': 'false', dataset: { seconds: s } }));
  presetBtns.push(h('button', { type: 'button', class: 'small', text: 'All', 'aria-pressed': 'false', title: 'As far back as the retention keeps data', dataset: { seconds: allSeconds } }));
  const rangeText = h('p', { class: 'ws-range', 'aria-live': 'off' });
  const ctl = (text, label, fn) => h('button', { type: 'button', class: 'small', text, 'aria-label': label, title: label, on: { click: fn } });
  // The keys that move the window (help with ?), as the appliance's worksheets have them.
  const KEYS = [
    ['[', 'back half a window', () => move(-0.5)],
    [']', 'forward half a window', () => move(0.5)],
    ['-', 'zoom out (twice the window)', () => zoom(2)],
    ['+', 'zoom in (half the window)', () => zoom(0.5)],
    ['l', 'live, or pause where it is', () => (view.live ? setView({ live: false, end: view.edge }) : setView({ live: true, end: null }))],
    ['?', 'these keys', () => showKeys()],
  ];
  function showKeys() {
    const dlg = h(
      'dialog',
      { class: 'ws-dialog ws-keys-help', 'aria-labelledby': 'ws-keys-title' },
      h('h2', { id: 'ws-keys-title', text: 'Keyboard shortcuts' }),
      h('table', {}, h('tbody', {}, KEYS.map(([k, what]) => h('tr', {}, h('th', { scope: 'row' }, h('kbd', { text: k })), h('td', { text: what }))))),
      h('div', { class: 'row ws-dialog-buttons' }, h('button', { type: 'button', class: 'primary', text: 'Close', on: { click: () => dlg.close() } })),
    );
    dlg.addEventListener('close', () => dlg.remove());
    document.body.append(dlg);
    dlg.showModal();
  }
  const onKey = (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName))) return; // typing
    if (document.querySelector('dialog[open]')) return;
    const key = e.key === '=' ? '+' : e.key === 'L' ? 'l' : e.key;
    const k = KEYS.find(([x]) => x === key);
    if (!k) return;
    e.preventDefault();
    k[2]();
  };
  document.addEventListener('keydown', onKey);
  ctx.cleanup(() => document.removeEventListener('keydown', onKey));
  const helpBtn = h('button', { type: 'button', class: 'small', text: '?', 'aria-label': 'Keyboard shortcuts', title: 'Keyboard shortcuts (?)', on: { click: () => showKeys() } });
  const picker = timePicker();
  const timebar = h(
    'div',
    { class: 'ws-timebar', role: 'group', 'aria-label': 'Time window' },
    h('div', { class: 'row ws-move' },
      liveBtn,
      ctl('◀', 'Back', () => move(-0.5)),
      ctl('▶', 'Forward', () => move(0.5)),
      ctl('Now', 'Now (go live)', () => setView({ live: true, end: null })),
      ctl('−', 'Zoom out', () => zoom(2)),
      ctl('+', 'Zoom in', () => zoom(0.5))),
    h('div', { class: 'row ws-presets', role: 'group', 'aria-label': 'Window length' }, presetBtns, picker.button, helpBtn),
    rangeText,
    picker.form,
  );
  liveBtn.addEventListener('click', () => {
    if (view.live) setView({ live: false, end: view.edge });
    else setView({ live: true, end: null });
  });
  for (const b of presetBtns) b.addEventListener('click', () => setView({ seconds: Number(b.dataset.seconds) }));

  // From and to, to the second, in the zone the console shows (local, or UTC by the header's
  // switch), with the box's own zone beside them: a window an incident report names.
  function timePicker() {
    const pad = (n) => String(n).padStart(2, '0');
    const inputValue = (t) => {
      const d = new Date(t * 1000);
      const u = prefs.utc;
      const parts = u
        ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
        : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
      return `${parts[0]}-${pad(parts[1])}-${pad(parts[2])}T${pad(parts[3])}:${pad(parts[4])}:${pad(parts[5])}`;
    };
    // "2026-12-06T10:00" or with seconds: epoch seconds in the shown zone, or NaN
    const parse = (v) => {
      const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?$/.exec(v);
      if (!m) return NaN;
      const [y, mo, d, hh, mi, ss] = m.slice(1).map((x) => Number(x || 0));
      return (prefs.utc ? Date.UTC(y, mo - 1, d, hh, mi, ss) : new Date(y, mo - 1, d, hh, mi, ss).getTime()) / 1000;
    };
    const offsetText = (s) => `UTC${s < 0 ? '−' : '+'}${pad(Math.floor(Math.abs(s) / 3600))}:${pad(Math.floor((Math.abs(s) % 3600) / 60))}`;
    const from = h('input', { type: 'datetime-local', step: 1, id: 'ws-from', required: true });
    const to = h('input', { type: 'datetime-local', step: 1, id: 'ws-to', required: true });
    const zone = h('p', { class: 'hint', id: 'ws-pick-zone' });
    const error = h('p', { class: 'field-error', id: 'ws-pick-error', role: 'alert' });
    from.setAttribute('aria-describedby', 'ws-pick-zone ws-pick-error');
    to.setAttribute('aria-describedby', 'ws-pick-zone ws-pick-error');
    const form = h(
      'form',
      { class: 'ws-pick', id: 'ws-pick', hidden: true, 'aria-label': 'Show a window from a time to a time', novalidate: true },
      h('div', { class: 'row' },
        h('div', { class: 'field' }, h('label', { for: from.id, text: 'From' }), from),
        h('div', { class: 'field' }, h('label', { for: to.id, text: 'To' }), to),
        h('div', { class: 'row ws-pick-go' }, h('button', { type: 'submit', class: 'primary small', text: 'Show' }), h('button', { type: 'button', class: 'small', text: 'Cancel', on: { click: () => show(false) } }))),
      zone,
      error,
    );
    const button = h('button', { type: 'button', class: 'small', id: 'ws-pick-open', text: 'From–to…', 'aria-expanded': 'false', 'aria-controls': 'ws-pick', title: 'A window from a time to a time' });
    let box = null; // the box's zone, once asked
    const sayZone = () => {
      const mine = prefs.utc ? 'UTC' : `your local time (${offsetText(-new Date().getTimezoneOffset() * 60)})`;
      const theirs = box ? `${box.timezone || 'UTC'} (${offsetText(box.utc_offset_s)})` : '…';
      zone.textContent = `Times in ${mine}. The box's clock: ${theirs}.`;
    };
    const show = async (open) => {
      form.hidden = !open;
      button.setAttribute('aria-expanded', String(open));
      error.textContent = '';
      if (!open) return button.focus();
      const end = view.live ? view.edge ?? Date.now() / 1000 : view.end;
      from.value = inputValue(Math.floor(end - view.seconds));
      to.value = inputValue(Math.floor(end));
      sayZone();
      from.focus();
      if (!box)
        try {
          box = (await get('/api/system/v1/version', { signal })).version;
          sayZone();
        } catch {
          /* the zone stays unsaid */
        }
    };
    button.addEventListener('click', () => show(form.hidden));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const a = parse(from.value);
      const b = parse(to.value);
      const refuse = (text, at) => {
        error.textContent = text;
        at.setAttribute('aria-invalid', 'true');
        at.focus();
      };
      from.removeAttribute('aria-invalid');
      to.removeAttribute('aria-invalid');
      if (!Number.isFinite(a)) return refuse('From: a date and a time, to the minute or second.', from);
      if (!Number.isFinite(b)) return refuse('To: a date and a time, to the minute or second.', to);
      if (b - a < MIN_SECONDS) return refuse(`To must be at least ${MIN_SECONDS} seconds after From.`, to);
      if (b - a > allSeconds) return refuse(`At most ${duration(allSeconds)}: the data kept reaches no further.`, from);
      const edge = view.edge ?? Date.now() / 1000;
      if (a >= edge) return refuse(`From is after the newest sample (${timeText(edge)}).`, from);
      show(false);
      // a window reaching past the newest sample follows it
      if (b >= edge) setView({ live: true, end: null, seconds: Math.round(edge - a) });
      else setView({ live: false, end: Math.round(b), seconds: Math.round(b - a) });
    });
    return { button, form };
  }

  const clampEnd = (end) => (view.edge !== null && end > view.edge ? view.edge : end);
  function setView(change) {
    Object.assign(view, change);
    view.seconds = Math.round(Math.min(allSeconds, Math.max(MIN_SECONDS, view.seconds)));
    if (!view.live) {
      // nothing known of the server's time yet (no chart): stay live
      const end = view.end ?? view.edge;
      view.end = Number.isFinite(end) ? Math.round(clampEnd(end)) : null;
      view.live = view.end === null;
    }
    if (view.live) view.end = null;
    setRoute(routeNow());
    showTimebar();
    refresh();
  }
  function move(fraction) {
    if (view.edge === null) return;
    const end = (view.live ? view.edge : view.end) + fraction * view.seconds;
    setView({ live: false, end });
  }
  function zoom(factor) {
    const seconds = view.seconds * factor;
    if (view.live) return setView({ seconds });
    const mid = view.end - view.seconds / 2;
    return setView({ seconds, end: mid + Math.min(allSeconds, Math.max(MIN_SECONDS, seconds)) / 2 });
  }
  function showTimebar() {
    liveBtn.setAttribute('aria-pressed', String(view.live));
    liveBtn.textContent = view.live ? '● Live' : '❚❚ Paused';
    liveBtn.classList.toggle('on', view.live);
    for (const b of presetBtns) b.setAttribute('aria-pressed', String(Number(b.dataset.seconds) === view.seconds));
  }

  // ---- the charts

  const stack = h('div', { class: 'ws-charts' });
  const empty = h('p', { class: 'muted ws-empty', text: edit ? 'No charts yet: add a statistic with “Add chart”.' : 'This worksheet has no charts.' });

  function addChart(dsView) {
    const d = catalog.get(dsView.name);
    const unit = d ? d.unit : '';
    const fmt = formatter(unit);
    const c = {
      view: { name: dsView.name, drilldowns: dsView.drilldowns || [], seconds: dsView.seconds },
      drilled: d ? !!d.drilldown : dsView.name.includes('['),
      unit,
      fmt,
      top: 8,
      showOther: false, // "other" sums the rest: drawn on demand, its scale would flatten them
      plot: null,
      shaped: null,
      series: [],
      focusKey: null,
      kind: null, // a heat map's kind (buckets.js), null for lines
    };
    const id = `ws-chart-${charts.length}-${Math.random().toString(36).slice(2, 7)}`;
    // the appliance's kind of title ("Disk: I/O operations per second broken down by
    // disk"), the dataset's own name beside it for those who type it
    const title = d && d.title ? d.title : dsView.name;
    c.heading = h('h2', { id: `${id}-title`, tabindex: '-1', text: title });
    c.error = h('p', { class: 'error', role: 'alert' });
    c.plotEl = h('div', { class: 'ws-plot', role: 'img', 'aria-label': `Chart of ${title}` });
    c.heatFoot = h('div', { class: 'ws-heat-foot', hidden: true });
    c.legendBody = h('tbody');
    const topSel = h('select', { id: `${id}-top`, class: 'ws-top' }, TOPS.map((n) => h('option', { value: n, text: n ? `top ${n}` : 'every key', selected: n === c.top })));
    topSel.addEventListener('change', () => {
      c.top = Number(topSel.value);
      refetch(c); // the box ranks them
    });
    const csvBtn = h('button', { type: 'button', class: 'small', text: 'CSV', 'aria-label': `Export ${dsView.name} as CSV`, title: 'Export this chart’s data as CSV' });
    csvBtn.addEventListener('click', () => exportCsv(c));
    const keysBtn = edit && c.drilled
      ? h('button', { type: 'button', class: 'small', text: 'Keys', 'aria-label': `Choose the keys of ${dsView.name}`, title: 'Choose which keys to show' })
      : null;
    const topLabel = h('label', { class: 'visually-hidden', for: topSel.id, text: `Series shown in ${dsView.name}` });
    // a heat map draws every bucket: neither the top N nor a choice of keys applies
    const showTop = () => {
      const on = c.drilled && !c.view.drilldowns.length && !c.kind;
      topSel.hidden = !on;
      topLabel.hidden = !on;
      if (keysBtn) keysBtn.hidden = !!c.kind;
    };
    c.showTools = showTop;
    if (keysBtn) {
      keysBtn.addEventListener('click', async () => {
        let seen = c.shaped ? collapse(c.shaped.keys, 0).map((s) => s.key) : [];
        try {
          // the chart may hold the top few only: a second of data lists every key
          const one = await get(`${hrefOf(catalog, c.view.name)}/data?seconds=1`, { signal });
          if (one.data) seen = [...new Set([...seen, ...one.data.data.data.map((kv) => kv.key)])];
        } catch {
          /* the keys the chart holds */
        }
        const keys = [...c.view.drilldowns, ...seen.filter((k) => !c.view.drilldowns.includes(k)).sort(naturalCompare)];
        const chosen = await chooseKeys({ title: `Keys of ${dsView.name}`, keys, chosen: c.view.drilldowns });
        keysBtn.focus();
        if (chosen === null) return;
        c.view.drilldowns = chosen;
        showTop();
        markDirty();
        refetch(c);
      });
    }
    const removeBtn = edit
      ? h('button', { type: 'button', class: 'small danger', text: 'Remove', 'aria-label': `Remove the chart ${dsView.name}` })
      : null;
    if (removeBtn) removeBtn.addEventListener('click', () => removeChart(c));
    c.el = h(
      'section',
      { class: 'chart ws-chart', 'aria-labelledby': c.heading.id, dataset: { dataset: dsView.name } },
      h('div', { class: 'ws-chart-head' },
        h('div', { class: 'ws-chart-name' }, c.heading, h('p', { class: 'muted ws-unit' }, h('code', { class: 'ws-raw', text: dsView.name }), d ? ` · ${d.unit}` : '', d ? h('span', { class: 'visually-hidden', text: `. ${d.explanation}` }) : null)),
        h('div', { class: 'row ws-chart-tools' },
          topLabel,
          topSel,
          keysBtn,
          csvBtn,
          removeBtn)),
      c.error,
      c.plotEl,
      c.heatFoot,
    );
    c.legendCaption = h('caption', { class: 'visually-hidden' });
    c.legendHead = h('th', { scope: 'col' });
    c.tableWrap = h('div', { class: 'table-wrap' },
      h('table', { class: 'legend-table ws-legend' },
        c.legendCaption,
        h('thead', {}, h('tr', {},
          c.legendHead,
          c.curHead = h('th', { scope: 'col', class: 'num', text: 'Current' }),
          ['Min', 'Max', 'Average'].map((t) => h('th', { scope: 'col', class: 'num', text: t })))),
        c.legendBody));
    // a heat map's figures by range: there may be a hundred ranges, so folded away
    c.valuesSummary = h('summary', {});
    c.details = h('details', { class: 'ws-heat-values' }, c.valuesSummary);
    c.el.append(c.details, c.tableWrap);
    setKind(c, heatKind(dsView.name));
    if (!catalog.has(dsView.name)) c.error.textContent = `No dataset ${dsView.name}: it is not collected.`;
    charts.push(c);
    stack.append(c.el);
    empty.hidden = true;
    return c;
  }

  function removeChart(c) {
    const i = charts.indexOf(c);
    if (i < 0) return;
    charts.splice(i, 1);
    if (c.plot) c.plot.destroy();
    c.el.remove();
    empty.hidden = charts.length > 0;
    markDirty();
    const next = charts[i] || charts[i - 1];
    if (next) next.heading.focus();
    else if (addBtn) addBtn.focus();
  }

  // Lines or a heat map (kind, from buckets.js; null: lines), and what goes with each: the
  // tools, the heat map's scale and readout, the legend folded away or not.
  function setKind(c, kind) {
    if (c.plot && kind !== c.kind) {
      c.plot.destroy();
      c.plot = null;
    }
    c.kind = kind;
    c.legendKeys = null;
    c.showTools();
    c.el.classList.toggle('ws-heat', !!kind);
    c.heatFoot.hidden = !kind;
    c.details.hidden = !kind;
    c.plotEl.setAttribute('aria-label', `${kind ? 'Heat map' : 'Chart'} of ${c.view.name}`);
    c.legendHead.textContent = kind ? 'Range' : 'Series';
    c.legendCaption.textContent = kind
      ? `Values of ${c.view.name} by range: select one to outline its row`
      : `Legend of ${c.view.name}: select a series to focus it`;
    if (kind) c.details.append(c.tableWrap);
    else c.details.after(c.tableWrap);
  }

  function exportCsv(c) {
    if (!c.shaped) return toast('No data to export yet.', 'error');
    // a heat map's columns in the order of its ranges
    const all = c.kind && c.heatRows
      ? collapse(c.shaped.keys, 0, c.heatRows.map((r) => r.key))
      : withOther(c, collapse(c.shaped.keys, 0, c.view.drilldowns));
    download(`${fileName(ws.name || 'worksheet')}-${fileName(c.view.name)}.csv`, csv(c.shaped.xs, all));
  }

  // The series, and the box's "other" (the keys it did not show, summed) after them when it
  // sent one and no keys were chosen by name.
  function withOther(c, list) {
    if (!c.shaped.other || c.view.drilldowns.length) return list;
    const values = c.shaped.other;
    return [...list, { key: OTHER, values, stats: stats(values), other: true, count: c.shaped.others ?? '…' }];
  }

  // Draws c's shaped data: the series to show, the plot, the legend.
  function draw(c) {
    if (!c.shaped) return;
    const kind = heatKind(c.view.name, c.shaped.keys.map((k) => k.key));
    if (kind !== c.kind) setKind(c, kind);
    if (kind) return drawHeat(c);
    // the box's top N and "other" when it chose them; else ranked here (every key)
    const list = c.shaped.other
      ? withOther(c, collapse(c.shaped.keys, 0, c.view.drilldowns))
      : collapse(c.shaped.keys, c.drilled ? c.top : 0, c.view.drilldowns);
    c.series = list;
    const spec = list.map((s, i) => ({ label: s.other ? `other (${s.count})` : s.key, colour: s.other ? OTHER_COLOUR : colour(i), show: s.other ? c.showOther : true }));
    const data = [c.shaped.xs, ...list.map((s) => s.values)];
    if (!c.plot) {
      c.plot = chart(c.plotEl, {
        series: spec,
        syncKey,
        yFormat: c.fmt,
        yZero: true,
        height: window.matchMedia('(max-width: 700px)').matches ? 180 : 220,
        onSelect: (min, max) => setView({ live: false, seconds: max - min, end: max }),
        // the legend's first column follows the cursor: each key's value at that second
        onCursor: (i) => legendValues(c, c.fmt, i),
      });
    }
    c.plot.setWindow(c.window[0], c.window[1]);
    c.plot.setSeries(spec, data);
    const oi = list.findIndex((s) => s.other);
    if (oi >= 0) c.plot.show(oi, c.showOther);
    legend(c, spec);
    const fi = list.findIndex((s) => s.key === c.focusKey);
    if (c.focusKey !== null && fi < 0) c.focusKey = null;
    c.plot.focus(fi < 0 ? null : fi);
  }

  // A heat map: every bucket, the legend's rows its ranges, lowest first, each with the
  // colour of its largest value.
  function drawHeat(c) {
    if (!c.plot) {
      c.plot = heatChart(c.plotEl, c.heatFoot, {
        kind: c.kind,
        name: c.view.name,
        unit: c.unit,
        syncKey,
        height: window.matchMedia('(max-width: 700px)').matches ? 200 : 260,
        onSelect: (min, max) => setView({ live: false, seconds: max - min, end: max }),
      });
    }
    const rows = c.plot.draw(c.shaped, c.window);
    c.heatRows = rows;
    const byKey = new Map(collapse(c.shaped.keys, 0).map((s) => [s.key, s]));
    c.series = rows.map((r) => byKey.get(r.key));
    const spec = rows.map((r, i) => ({ label: bucketText(c.kind, r), colour: c.plot.colour(c.series[i].stats.max) }));
    c.valuesSummary.textContent = `Values by range (${rows.length}${c.plot.noun ? `, ${c.plot.noun}` : ''})`;
    legend(c, spec, c.plot.format);
    const fi = rows.findIndex((r) => r.key === c.focusKey);
    if (c.focusKey !== null && fi < 0) c.focusKey = null;
    c.plot.focus(fi < 0 ? null : fi);
  }

  // The keys c's legend rows must be for: legend() rebuilds the rows when they change.
  const keysOf = (c) => c.series.map((s) => s.key).join('\u0000');

  // The legend's rows (spec: their labels and colours), figures through fmt.
  function legend(c, spec, fmt = c.fmt) {
    const rows = c.legendBody.rows;
    const keysNow = keysOf(c);
    if (c.legendKeys !== keysNow) {
      c.legendKeys = keysNow;
      c.legendBody.replaceChildren(
        ...c.series.map((s, i) => {
          const btn = h('button', { type: 'button', class: 'ws-series', 'aria-pressed': 'false' },
            h('span', { class: 'ws-swatch', 'aria-hidden': 'true', dataset: { i: String(i) } }),
            h('span', { text: spec[i].label }));
          const swatch = btn.firstChild;
          swatch.style.setProperty('--swatch', spec[i].colour);
          const tr = h('tr', { dataset: { key: s.key } },
            h('th', { scope: 'row' }, btn),
            h('td', { class: 'num' }), h('td', { class: 'num' }), h('td', { class: 'num' }), h('td', { class: 'num' }));
          if (s.other) {
            // the sum of the rest, drawn only when asked: its row says so and draws it
            btn.setAttribute('aria-pressed', String(c.showOther));
            btn.title = 'The sum of the keys not shown; drawn on its own scale it would flatten the others: press to draw it';
            btn.append(h('span', { class: 'ws-other-note', text: c.showOther ? ' · drawn' : ' · not drawn' }));
            tr.addEventListener('click', () => {
              c.showOther = !c.showOther;
              btn.setAttribute('aria-pressed', String(c.showOther));
              btn.querySelector('.ws-other-note').textContent = c.showOther ? ' · drawn' : ' · not drawn';
              c.plot.show(i, c.showOther);
            });
            return tr;
          }
          const targets = drillTargets(c, s.key);
          if (targets.length) {
            const sel = h(
              'select',
              { class: 'ws-drill', 'aria-label': `Drill down on ${s.key}`, title: `Drill down on ${s.key}` },
              h('option', { value: '', text: 'Drill down…' }),
              targets.map((t) => h('option', { value: t.name, text: t.label })),
            );
            sel.addEventListener('click', (e) => e.stopPropagation());
            sel.addEventListener('change', async () => {
              const name = sel.value;
              sel.value = '';
              if (!name) return;
              c.error.textContent = '';
              try {
                await addDataset(name);
              } catch (err) {
                if (err.name !== 'AbortError') c.error.textContent = `Cannot drill down: ${err.details || err.message}`;
              }
            });
            tr.cells[0].append(sel);
          }
          tr.addEventListener('click', () => {
            c.focusKey = c.focusKey === s.key ? null : s.key;
            const idx = c.series.findIndex((x) => x.key === c.focusKey);
            c.plot.focus(idx < 0 ? null : idx);
            markFocus(c);
          });
          return tr;
        }),
      );
      if (!c.series.length) c.legendBody.append(h('tr', {}, h('td', { colspan: 5, class: 'muted', text: 'No samples in this window.' })));
    }
    c.series.forEach((s, i) => {
      const tds = rows[i].cells;
      // a heat map's swatches follow its scale, which moves with the window
      if (c.kind) rows[i].querySelector('.ws-swatch').style.setProperty('--swatch', spec[i].colour);
      tds[2].textContent = s.stats.min === null ? '–' : fmt(s.stats.min);
      tds[3].textContent = s.stats.max === null ? '–' : fmt(s.stats.max);
      tds[4].textContent = s.stats.avg === null ? '–' : fmt(Math.round(s.stats.avg * 1000) / 1000);
    });
    legendValues(c, fmt);
    markFocus(c);
  }

  // The legend's first column: each key's value at the second under the cursor (the
  // column says which), else its newest. idx: the index under the cursor as the chart said
  // it (undefined: ask the chart). Not while the rows are another set of keys' (a chart
  // being rebuilt for new keys: legend() fills the new rows next).
  function legendValues(c, fmt = c.fmt, idx = undefined) {
    const rows = c.legendBody.rows;
    if (c.legendKeys !== keysOf(c)) return;
    const i = c.kind ? null : idx !== undefined ? idx : c.plot ? c.plot.cursor() : null;
    const x = i === null ? undefined : c.shaped?.xs[i];
    const at = x !== undefined;
    // the date only when the window spans days: the readout beside it says it anyway
    const days = c.window && c.window[1] - c.window[0] > 86400;
    c.curHead.textContent = at ? `At ${timeText(x, { date: days })}` : 'Current';
    c.series.forEach((s, k) => {
      if (!rows[k] || rows[k].cells.length < 5) return;
      const v = at ? s.values[i] : s.stats.cur;
      rows[k].cells[1].textContent = v === null || v === undefined ? '–' : fmt(v);
    });
  }

  function markFocus(c) {
    for (const tr of c.legendBody.rows) {
      if (tr.dataset.key === OTHER && c.series.some((s) => s.other)) continue; // its own toggle
      const on = tr.dataset.key !== undefined && tr.dataset.key === c.focusKey;
      tr.classList.toggle('focus', on);
      const b = tr.querySelector('button');
      if (b) b.setAttribute('aria-pressed', String(on));
    }
  }

  // ---- fetching

  const GRAN_SECONDS = { second: 1, minute: 60, hour: 3600 };
  const pickGranularity = (start, seconds, edge) => {
    const age = edge - start;
    if (seconds <= 2 * 3600 && age <= ret.retain_second_data * 3600) return 'second';
    if (seconds <= 14 * 86400 && age <= ret.retain_minute_data * 3600) return 'minute';
    return 'hour';
  };

  let timer = 0;
  let inflight = null;
  let failures = 0; // refreshes in a row the box did not answer: each waits twice longer
  let readyDone = false;
  const markReady = () => {
    if (!readyDone) {
      readyDone = true;
      ctx.ready();
    }
  };

  // What a chart last drew, to ask only for what is newer next time: its samples (the
  // answer's data, a list), meta, the window's end and its newest sample's start.
  function remember(resp, sig, end) {
    const data = Array.isArray(resp.data) ? resp.data : resp.data ? [resp.data] : [];
    return { sig, meta: resp.meta, data, end, last: data.length ? data[data.length - 1].sample : null };
  }

  // The chart's keys or top N changed: all of its window again.
  function refetch(c) {
    c.cache = null;
    refresh();
  }

  async function refresh() {
    clearTimeout(timer);
    if (inflight) inflight.abort();
    const ac = new AbortController();
    inflight = ac;
    const live = charts.filter((c) => catalog.has(c.view.name));
    try {
      if (!live.length) {
        rangeText.textContent = '';
        return;
      }
      if (view.live || view.edge === null) {
        // seconds=1 answers with the newest complete second: its index + 1 is the edge
        const probe = await get(`${hrefOf(catalog, live[0].view.name)}/data?start=-1&meta=true`, { signal: ac.signal });
        view.edge = probe.meta.sample + 1;
      }
      const end = view.live ? view.edge : Math.min(view.end, view.edge);
      const start = end - view.seconds;
      const gran = pickGranularity(start, view.seconds, view.edge);
      await Promise.all(
        live.map(async (c) => {
          const points = Math.max(10, Math.round(c.plot ? c.plot.plotWidth() : stack.clientWidth - 80));
          const href = `${hrefOf(catalog, c.view.name)}/data`;
          // keys chosen: only those asked for (a thousand disks' seconds are not fetched for
          // two); else, but for a heat map (every bucket), the box's top N and "other"
          const chosen = c.view.drilldowns.length ? c.view.drilldowns.join(',') : '';
          const topN = c.drilled && !chosen && c.top > 0 && !heatKind(c.view.name) ? c.top : 0;
          const sig = `${gran}|${chosen}|${topN}|${view.seconds}|${points}`;
          const ask = (query) => get(`${href}?${query}&granularity=${gran}&meta=true`, { signal: ac.signal });
          // a key the box no longer has: asked again without keys
          const orAll = async (query, keys) => {
            if (!keys) return ask(query);
            try {
              return await ask(`${query}&keys=${encodeURIComponent(keys)}`);
            } catch (e) {
              if (e.status === 400 && /^keys:/.test(e.details || '')) return null;
              throw e;
            }
          };
          const fetchData = async () => {
            const prev = c.cache;
            c.cache = null;
            const a = start - (start % GRAN_SECONDS[gran]);
            // live, one point a granule: only the granules it lacks, from its newest sample
            // (which may have been incomplete) on, the top N's keys as ranked at first
            if (view.live && prev && prev.sig === sig && prev.meta.sample_seconds === GRAN_SECONDS[gran] && end > prev.end && end - prev.end < view.seconds && (!topN || (prev.meta.keys || []).length)) {
              const from = Math.max(prev.last ?? a, a);
              const inc = await orAll(`start=${from}&seconds=${end - from}`, topN ? prev.meta.keys.join(',') : chosen);
              if (inc) {
                const data = mergeSamples(prev.data, inc.data, a, from);
                return remember({ meta: { ...prev.meta, sample: a, points: Math.ceil((end - a) / GRAN_SECONDS[gran]), other_keys: inc.meta.other_keys }, data }, sig, end);
              }
            }
            const q = `start=${start}&seconds=${view.seconds}&points=${points}`;
            const whole = (topN ? await ask(`${q}&top=${topN}`) : await orAll(q, chosen)) || (await ask(q));
            return remember(whole, sig, end);
          };
          try {
            const got = await fetchData();
            const resp = { meta: got.meta, data: got.data };
            c.cache = got;
            c.error.textContent = '';
            c.shaped = shape(resp, end, c.view.name, c.drilled);
            c.window = [start, end];
            c.step = c.shaped.step;
            draw(c);
          } catch (err) {
            if (err.name === 'AbortError' || err.status === 401) throw err;
            c.error.textContent = `Cannot read ${c.view.name}: ${err.details || err.message}`;
          }
        }),
      );
      const step = live[0].step || 1;
      rangeText.replaceChildren(
        timeEl(start, { date: view.seconds >= 86400 }),
        ' – ',
        timeEl(end, { date: view.seconds >= 86400 }),
        ` · ${windowText(view.seconds)}`,
        step > 1 ? ` · one point per ${windowText(step)}` : ' · one point per second',
        view.live ? ' · live' : '',
      );
      markReady();
      failures = 0;
    } catch (err) {
      if (err.name === 'AbortError' || err.status === 401) return;
      if (err.unreachable) failures++;
      rangeText.textContent = err.unreachable
        ? `The box does not answer: trying again in ${Math.round(retryMs() / 1000)} s`
        : `Cannot read the data: ${err.details || err.message}`;
      markReady();
    } finally {
      if (inflight === ac) inflight = null;
      schedule();
    }
  }

  function retryMs() {
    return Math.min(30000, 1000 * 2 ** failures);
  }

  function schedule() {
    clearTimeout(timer);
    if (failures) {
      // unanswered: again later (1, 2, 4 ... 30 s), paused windows too, until it answers
      if (!document.hidden && !signal.aborted && charts.length) timer = setTimeout(refresh, retryMs());
      return;
    }
    if (!view.live || document.hidden || signal.aborted || !charts.length) return;
    let every = 1000;
    if (view.seconds > LIVE_EVERY_SECOND) {
      const perPoint = charts[0] && charts[0].step ? charts[0].step * 1000 : 5000;
      every = Math.min(60000, Math.max(2000, perPoint));
    }
    timer = setTimeout(refresh, every);
  }

  const onVisible = () => {
    if (document.hidden) clearTimeout(timer);
    else if (view.live) refresh();
  };
  document.addEventListener('visibilitychange', onVisible);
  ctx.cleanup(() => {
    clearTimeout(timer);
    if (inflight) inflight.abort();
    document.removeEventListener('visibilitychange', onVisible);
    for (const c of charts) if (c.plot) c.plot.destroy();
  });

  // ---- saving

  // The window goes with it: its length, and where it ends when paused (null: live).
  const body = () => {
    const end = !view.live && view.end !== null ? new Date(view.end * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') : null;
    return {
      name: ws.name,
      datasets: charts.map((c) => ({ name: c.view.name, drilldowns: c.view.drilldowns, seconds: view.seconds, end })),
    };
  };
  const saved = (w) => {
    ws = w;
    dirty = false;
    showHead();
  };
  if (saveBtn) {
    saveBtn.addEventListener('click', async () => {
      if (!ws.uuid) {
        const w = await askName({
          title: 'Save worksheet',
          label: 'Name',
          value: charts.length ? charts.map((c) => c.view.name).slice(0, 2).join(', ') : '',
          ok: 'Save',
          action: async (name) => (await post(BASE, { ...body(), name }, { signal })).worksheet,
        });
        if (!w) return;
        saved(w);
        setRoute(routeNow());
        toast(`Saved “${w.name}”.`);
        return;
      }
      saveBtn.disabled = true;
      try {
        saved((await put(`${BASE}/${seg(ws.uuid)}`, body(), { signal })).worksheet);
        setRoute(routeNow());
        toast(`Saved “${ws.name}”.`);
      } catch (err) {
        if (err instanceof ApiError && err.status !== 401) toast(`Cannot save: ${err.details}`, 'error');
      } finally {
        saveBtn.disabled = false;
      }
    });
  }
  if (renameBtn) {
    renameBtn.addEventListener('click', async () => {
      const w = await renameWorksheet(ws.uuid, ws.name);
      if (w) {
        ws = { ...ws, name: w.name, mtime: w.mtime };
        showHead();
      }
    });
  }
  if (cloneBtn) {
    cloneBtn.addEventListener('click', async () => {
      const w = await cloneWorksheet(ws.uuid, ws.name, body().datasets);
      if (!w) return;
      dirty = false; // the clone holds the changes
      go(`worksheets/${seg(w.uuid)}`);
    });
  }
  if (deleteBtn) {
    deleteBtn.addEventListener('click', async () => {
      if (await deleteWorksheet(ws.uuid, ws.name)) {
        toast(`Deleted “${ws.name}”.`);
        dirty = false;
        go('worksheets');
      }
    });
  }
  if (addBtn) addBtn.addEventListener('click', () => toggleAdd(addForm.hidden));

  // ---- the page

  append(main, [
    h('nav', { class: 'ws-crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/worksheets', text: 'Worksheets' })),
    h('div', { class: 'ws-head' },
      h('div', { class: 'ws-head-text' }, title, meta),
      edit || cloneBtn ? h('div', { class: 'row ws-tools' }, dirtyNote, addBtn, saveBtn, renameBtn, cloneBtn, deleteBtn) : null),
    edit ? addForm : null,
    timebar,
    empty,
    stack,
  ]);
  showHead();
  showTimebar();
  for (const v of ws.datasets) addChart(v);
  empty.hidden = charts.length > 0;
  if (edit && !charts.length) toggleAdd(true);
  if (draft) toast('Your unsaved changes are back: save them to keep them.');
  if (!charts.some((c) => catalog.has(c.view.name))) markReady();
  await refresh();
}

export { OTHER };
