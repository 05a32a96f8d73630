// SPDX-License-Identifier: ISC
// Hardware: every chassis (the system first, then each SES enclosure) with its disks laid
// out by slot, faulted disks marked, and a locator switch on each disk, each empty slot and
// each chassis, with the LED backend that drives it named.
//
// Lighting a locator is the one change a monitor user may make, so the switch works for
// anyone holding hardware:locate. A toggle waits for the server's answer (the LED is
// written and read back); a refusal puts the switch back and shows the server's message.

import { can, get, put, seg } from '../api.js';
import { bytes, h, num, toast } from '../dom.js';
import { subscribe } from '../live.js';
import { setRoute } from '../app.js';

const HW = '/api/hardware/v1/chassis';
const REFRESH_MS = 30000;

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

// Disk sizes as vendors print them (decimal), with the binary size after.
function diskSize(b) {
  if (b === null || b === undefined) return '–';
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  let x = b;
  while (x >= 1000 && i < units.length - 1) {
    x /= 1000;
    i++;
  }
  return `${x.toFixed(x >= 100 || i === 0 ? 0 : 1)}\u00a0${units[i]} (${bytes(b)})`;
}

// The name a person reads on the disk or the bay: its device, else its slot, else its bay.
function diskName(d) {
  return d.device || d.location || d.slot || d.label || d.id;
}

function slotNumber(d) {
  const m = /(\d+)\s*$/.exec(d.slot || d.label || '');
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
}

// Columns of bays, shaped like common enclosures: 12 bays as 3 rows of 4 (2U), 24 as 4 of 6,
// bigger ones in rows of 12 (a top-loader's drawer). The phone keeps at most 4 across.
function columns(n) {
  if (n <= 4) return Math.max(1, n);
  if (n <= 16) return 4;
  if (n <= 24) return 6;
  return 12;
}

// What each LED backend lights, in words (the API's name stays beside it).
const BACKENDS = {
  ses: 'the enclosure\u2019s slot LED',
  leds: 'a LED of the kernel\u2019s',
  ledctl: 'the controller\u2019s LED, through ledctl',
  ipmi: 'the board\u2019s identify LED, through IPMI',
  virtual: 'lights nothing physical: the state is only kept',
};

function backendText(name) {
  return BACKENDS[name] ? `LED: ${name} (${BACKENDS[name]})` : `LED: ${name || 'unknown'}`;
}

// A locator: LED, switch, state word, backend and a place for the server's refusal.
// target: {name, path, locate, led_backend, led_fault}; onChange(obj) gets the updated object.
function locator(target, onChange) {
  const allowed = can('hardware:locate');
  const input = h('input', {
    type: 'checkbox',
    role: 'switch',
    class: 'switch',
    'aria-label': `Locate ${target.name}`,
    disabled: !allowed,
    title: allowed ? null : 'Your role may not change locator LEDs',
  });
  const dot = h('span', { class: 'led-dot', 'aria-hidden': 'true' });
  const word = h('span', { class: 'led-word' });
  const backend = h('span', { class: 'led-backend muted' });
  const error = h('p', { class: 'field-error locate-error', role: 'alert', id: nextId('locate-err') });
  input.setAttribute('aria-describedby', error.id);
  // The whole row is the switch's label: a thumb-sized target, not just the slider.
  const el = h('div', { class: 'locator' }, h('label', { class: 'locator-row' }, dot, input, word), backend, error);
  let busy = false;
  let current = target; // what the hardware last said

  function show(obj) {
    current = obj;
    input.checked = obj.locate === true;
    input.indeterminate = obj.locate === null || obj.locate === undefined;
    dot.classList.toggle('on', obj.locate === true);
    word.textContent = obj.locate === true ? 'Locating' : obj.locate === false ? 'Off' : 'Unknown';
    word.classList.toggle('lit', obj.locate === true);
    backend.textContent = backendText(obj.led_backend);
    backend.title = obj.led_fault ? `Re-applying the LED at start-up failed: ${obj.led_fault}` : '';
    if (obj.led_fault && !error.textContent) error.textContent = obj.led_fault;
  }

  // While a change is in flight the switch is disabled with aria-disabled, not the
  // attribute: a disabled element loses the keyboard's focus.
  input.addEventListener('click', (ev) => {
    if (busy) ev.preventDefault();
  });
  input.addEventListener('change', async () => {
    const want = input.checked;
    busy = true;
    input.setAttribute('aria-disabled', 'true');
    el.setAttribute('aria-busy', 'true');
    error.textContent = '';
    try {
      const ans = await put(target.path, { locate: want });
      const obj = (ans && (ans.disk || ans.chassis)) || { ...current, locate: want };
      show(obj);
      onChange(obj);
      toast(`${target.name}: locator ${obj.locate ? 'lit' : 'off'}`);
    } catch (e) {
      show(current);
      if (e.status === 401) return;
      const msg = e.details || e.message || 'no answer from the server';
      error.textContent = msg;
      toast(`Cannot turn the locator of ${target.name} ${want ? 'on' : 'off'}: ${msg}`, 'error');
    } finally {
      busy = false;
      input.removeAttribute('aria-disabled');
      el.removeAttribute('aria-busy');
    }
  });

  show(target);
  return {
    el,
    get busy() {
      return busy;
    },
    update(obj) {
      if (!busy) show(obj);
    },
  };
}

// The details of one disk, as a definition list.
function diskDetails(d) {
  const rows = [
    ['Device', d.device || 'empty slot'],
    ['Bay', d.label],
    ['Slot', d.slot || (d.enclosure ? '–' : 'not in an enclosure')],
    ['Model', d.model || '–'],
    ['Manufacturer', d.manufacturer || d.vendor || '–'],
    ['Serial', d.serial || '–'],
    ['Size', diskSize(d.size)],
    ['Interface', d.interface || '–'],
    ['Rotation', d.rpm ? `${num(d.rpm)} rpm` : d.rotational === false ? 'solid state' : '–'],
    ['Firmware', d.revision || '–'],
    ['WWID', d.wwid || '–'],
    ['Paths', d.pathcount],
    ['Fault status', d.fault_status || (d.faulted ? 'faulted' : 'ok')],
    ['LED backend', d.led_backend],
    ['Id', d.id],
  ];
  return h(
    'dl',
    { class: 'disk-details' },
    rows.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: v === null || v === undefined ? '–' : String(v) })]),
  );
}

// One bay of the grid: the disk (or the empty slot), its fault, and its locator.
function bay(chassis, d, onSelect, onLed) {
  const name = diskName(d);
  const open = h('button', { type: 'button', class: 'bay-name', 'aria-expanded': 'false', title: `Details of ${name}` },
    h('span', { class: 'bay-label', text: d.label || '' }),
    h('span', { class: 'bay-dev mono', text: d.present ? d.device || name : 'empty' }));
  const fault = h('span', { class: 'badge sev-critical bay-fault', text: 'Faulted', hidden: !d.faulted });
  const el = h('div', {
    class: ['bay', d.present ? null : 'empty', d.faulted ? 'faulted' : null],
    role: 'listitem',
    dataset: { disk: d.id, slot: d.slot || '' },
  });
  const loc = locator(
    { name, path: `${HW}/${seg(chassis.id)}/disk/${seg(d.id)}`, locate: d.locate, led_backend: d.led_backend, led_fault: d.led_fault },
    (obj) => {
      apply(obj);
      onLed();
    },
  );
  function apply(obj) {
    el.classList.toggle('led-lit', obj.locate === true);
    el.dataset.locate = obj.locate === true ? 'on' : obj.locate === false ? 'off' : 'unknown';
    el.classList.toggle('faulted', !!obj.faulted);
    fault.hidden = !obj.faulted;
  }
  open.addEventListener('click', () => onSelect(api));
  el.append(open, fault, loc.el);
  apply(d);
  const api = {
    el,
    open,
    disk: d,
    update(obj) {
      api.disk = obj;
      if (!loc.busy) {
        loc.update(obj);
        apply(obj);
      }
    },
  };
  return api;
}

// One chassis: its header with its own locator, the bays, and the details of the chosen disk.
function chassisCard(c, disks, onLed, elsewhere = 0) {
  const headingId = nextId('chassis');
  const kind = c.kind === 'enclosure' || c.type === 'storage' ? 'Enclosure' : 'System';
  const title = c.display_name && c.display_name !== c.name ? `${c.name} · ${c.display_name}` : c.name || c.id;
  const meta = [
    [c.manufacturer || c.vendor, c.model].filter(Boolean).join(' '),
    c.serial ? `serial ${c.serial}` : null,
    c.slot_count !== undefined
      ? `${c.disk_count} of ${c.slot_count} slots used`
      : !c.disk_count && elsewhere
        ? `no disks of its own; ${elsewhere} in the enclosure${elsewhere === 1 ? '' : 's'} below`
        : `${c.disk_count} disk${c.disk_count === 1 ? '' : 's'}`,
  ].filter(Boolean);
  const fault = h('span', { class: 'badge sev-critical', text: 'Faulted disk', hidden: !c.faulted });
  const loc = locator({ name: c.name || c.id, path: `${HW}/${seg(c.id)}`, locate: c.locate, led_backend: c.led_backend, led_fault: c.led_fault }, (obj) => {
    el.classList.toggle('led-lit', obj.locate === true);
    onLed();
  });
  const panelId = nextId('disk-details');
  const panel = h('div', { class: 'disk-panel', id: panelId, hidden: true, role: 'region', 'aria-label': `Disk details, ${c.name || c.id}` });
  let selected = null;
  const showPanel = (b) => {
    const d = b.disk;
    panel.replaceChildren(
      h('div', { class: 'row' }, h('h3', { text: `${d.label || diskName(d)} · ${diskName(d)}` }), h('span', { class: 'spacer' }),
        h('button', { type: 'button', text: 'Close', on: { click: () => select(b) } })),
      diskDetails(d),
    );
  };
  // Opens a disk's details, or closes them when it is the one shown.
  const select = (b) => {
    if (selected) selected.open.setAttribute('aria-expanded', 'false');
    if (selected === b) {
      selected = null;
      panel.hidden = true;
      b.open.focus();
      return;
    }
    selected = b;
    b.open.setAttribute('aria-expanded', 'true');
    showPanel(b);
    panel.hidden = false;
    // The details are under the whole grid: bring them into view (on a phone they are a
    // screen or more below the bay that was tapped).
    panel.scrollIntoView({ block: 'nearest' });
  };
  const ordered = disks.slice().sort((a, b) => (c.slot_count !== undefined ? slotNumber(a) - slotNumber(b) : 0));
  const bays = ordered.map((d) => bay(c, d, select, onLed));
  for (const b of bays) b.open.setAttribute('aria-controls', panelId);
  const cols = columns(c.slot_count !== undefined ? Math.max(c.slot_count, bays.length) : bays.length);
  const grid = h('div', { class: 'bays', role: 'list', 'aria-label': `${c.name || c.id}: ${c.slot_count !== undefined ? 'slots' : 'disks'}` }, bays.map((b) => b.el));
  grid.style.setProperty('--cols', String(cols));
  grid.style.setProperty('--cols-phone', String(Math.min(cols, 4)));
  const el = h(
    'section',
    { class: ['card', 'chassis', c.locate === true ? 'led-lit' : null], 'aria-labelledby': headingId, dataset: { chassis: c.id } },
    h(
      'div',
      { class: 'chassis-head' },
      h('div', { class: 'chassis-title' },
        h('h2', { id: headingId }, h('span', { text: title }), ' ', h('span', { class: 'badge', text: kind }), ' ', fault),
        h('p', { class: 'muted chassis-meta', text: meta.join(' · ') })),
      h('div', { class: 'chassis-locator' }, h('span', { class: 'muted', text: `${kind} locator` }), loc.el),
    ),
    bays.length ? grid : h('p', { class: 'muted', text: 'No disks.' }),
    panel,
  );
  return {
    el,
    bays,
    ids: disks.map((d) => d.id).sort().join(' '),
    // Opens the details of the disk with this id (a link from a problem); false if none.
    show(diskId) {
      const b = bays.find((x) => x.disk.id === diskId);
      if (!b) return false;
      if (selected !== b) select(b);
      b.open.focus({ preventScroll: true });
      panel.scrollIntoView({ block: 'nearest' });
      return true;
    },
    update(cNew, disksNew) {
      loc.update(cNew);
      if (!loc.busy) el.classList.toggle('led-lit', cNew.locate === true);
      fault.hidden = !cNew.faulted;
      const byId = new Map(disksNew.map((d) => [d.id, d]));
      for (const b of bays) if (byId.has(b.disk.id)) b.update(byId.get(b.disk.id));
      if (selected) showPanel(selected);
    },
  };
}

async function load(signal) {
  const list = await get(HW, { signal });
  const chassis = list.chassis || list.hardware || [];
  const disks = await Promise.all(chassis.map((c) => get(`${HW}/${seg(c.id)}/disk`, { signal }).then((d) => d.disks || [])));
  return chassis.map((c, i) => ({ c, disks: disks[i] }));
}

export async function render(main, ctx) {
  const lit = h('span', { class: 'hw-lit', role: 'status' });
  const refresh = h('button', { type: 'button', text: 'Refresh' });
  const note = can('hardware:locate')
    ? null
    : h('p', { class: 'muted', text: 'Your role may look at the hardware but not change locator LEDs.' });
  const body = h('div', { class: 'chassis-list' });
  // A box of many disks: find one by name, bay, serial or model; only the faulted; only
  // the lit. Bays that do not match are hidden, chassis without a match folded away.
  const search = h('input', { type: 'search', id: 'hw-search', placeholder: 'sdc, HDD 3, serial…', autocomplete: 'off', spellcheck: 'false' });
  const onlyFaulted = h('input', { type: 'checkbox', id: 'hw-faulted' });
  const onlyLit = h('input', { type: 'checkbox', id: 'hw-lit' });
  const shown = h('span', { class: 'muted', id: 'hw-shown' });
  const filters = h(
    'div',
    { class: 'toolbar hw-filters', role: 'search', 'aria-label': 'Find disks' },
    h('label', { for: 'hw-search', class: 'visually-hidden', text: 'Find a disk by name, bay, serial or model' }),
    search,
    h('label', { class: 'check' }, onlyFaulted, 'Faulted only'),
    h('label', { class: 'check' }, onlyLit, 'Locating only'),
    shown,
  );
  main.append(h('div', { class: 'toolbar' }, h('h1', { text: 'Hardware' }), h('span', { class: 'spacer' }), lit, refresh), ...[note, filters, body].filter(Boolean));

  let cards = [];
  const countLit = () => {
    const n = body.querySelectorAll('.led-dot.on').length;
    lit.textContent = n ? `${n} locator LED${n === 1 ? '' : 's'} lit` : 'No locator LED lit';
    lit.classList.toggle('on', n > 0);
  };

  // The filters, from the route (#/hardware?q=sdc&faulted=1&lit=1) and into it.
  search.value = ctx.query.get('q') || '';
  onlyFaulted.checked = ctx.query.get('faulted') === '1';
  onlyLit.checked = ctx.query.get('lit') === '1';
  function applyFilters() {
    const q = search.value.trim().toLowerCase();
    const any = q || onlyFaulted.checked || onlyLit.checked;
    let match = 0;
    let all = 0;
    for (const { card } of cards) {
      let here = 0;
      for (const b of card.bays) {
        const d = b.disk;
        all++;
        const text = [d.device, d.label, d.slot, d.serial, d.model, d.wwid, d.id].filter(Boolean).join(' ').toLowerCase();
        const ok = (!q || text.includes(q)) && (!onlyFaulted.checked || !!d.faulted) && (!onlyLit.checked || b.el.classList.contains('led-lit'));
        b.el.hidden = !ok;
        if (ok) here++;
      }
      match += here;
      card.el.hidden = !!any && !here;
    }
    shown.textContent = any ? `${match} of ${all} bays shown` : '';
    const p = new URLSearchParams();
    if (q) p.set('q', search.value.trim());
    if (onlyFaulted.checked) p.set('faulted', '1');
    if (onlyLit.checked) p.set('lit', '1');
    for (const k of ['chassis', 'disk']) if (ctx.query.get(k)) p.set(k, ctx.query.get(k));
    setRoute(p.toString() ? `hardware?${p}` : 'hardware');
  }
  for (const el of [search, onlyFaulted, onlyLit]) el.addEventListener('input', applyFilters);

  function build(items) {
    const all = items.reduce((n, it) => n + it.disks.filter((d) => d.present !== false).length, 0);
    cards = items.map(({ c, disks }) => ({ id: c.id, card: chassisCard(c, disks, countLit, all - disks.length) }));
    body.replaceChildren(...cards.map((x) => x.card.el));
    countLit();
    applyFilters();
  }

  // Fresh states in place; a chassis or disk that came or went rebuilds the page.
  let reloading = false;
  async function reload() {
    if (reloading) return;
    reloading = true;
    try {
      const items = await load(ctx.signal);
      const same =
        items.length === cards.length &&
        items.every((it, i) => it.c.id === cards[i].id && it.disks.map((d) => d.id).sort().join(' ') === cards[i].card.ids);
      if (same) items.forEach((it, i) => cards[i].card.update(it.c, it.disks));
      else build(items);
      countLit();
      if (onlyFaulted.checked || onlyLit.checked) applyFilters();
    } catch (e) {
      if (e.name !== 'AbortError' && e.status !== 401) toast(`Cannot read the hardware: ${e.details || e.message}`, 'error');
    } finally {
      reloading = false;
    }
  }
  refresh.addEventListener('click', reload);

  build(await load(ctx.signal));
  // #/hardware?chassis=ID&disk=ID (a problem's component): that disk's details open, or
  // that chassis in view.
  const wantChassis = ctx.query.get('chassis');
  const wantDisk = ctx.query.get('disk');
  const target = cards.find((x) => x.id === wantChassis) || (wantDisk ? cards.find((x) => x.card.ids.split(' ').includes(wantDisk)) : null);
  if (target && !(wantDisk && target.card.show(wantDisk))) target.card.el.scrollIntoView({ block: 'start' });
  ctx.ready();

  // Someone else lighting an LED, or a disk faulting, shows up in the dashboard document;
  // a disk plugged in shows up on the next look (a wall screen looks twice a minute).
  const timer = setInterval(() => {
    if (!document.hidden) reload();
  }, REFRESH_MS);
  ctx.cleanup(() => clearInterval(timer));
  let seen = null;
  ctx.cleanup(
    subscribe((doc) => {
      const now = `${doc.leds_lit}/${doc.problems}`;
      if (seen !== null && now !== seen) reload();
      seen = now;
    }),
  );
}
