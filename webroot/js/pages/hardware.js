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
// A box past this many chassis or bays (a rack of shelves) opens with its enclosures
// folded: each a line from the chassis list, its bays read when it is unfolded, so a
// page of 48 shelves is 49 lines and one request, not 1,152 bays and 49 (each bay's LED
// read back from its enclosure), and the refresh reads only what is unfolded.
const FOLD_CHASSIS = 4;
const FOLD_BAYS = 96;
const LOAD_AT_ONCE = 4; // disk lists read at a time when a search needs them all

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

// The counters of a disk's health reading, by its kind, as a person reads them.
const SMART_ROWS = [
  ['reallocated_sectors', 'Reallocated sectors'],
  ['pending_sectors', 'Pending sectors'],
  ['offline_uncorrectable', 'Offline uncorrectable'],
  ['crc_errors', 'Interface CRC errors'],
  ['grown_defects', 'Grown defects'],
  ['uncorrected_read_errors', 'Uncorrected read errors'],
  ['uncorrected_write_errors', 'Uncorrected write errors'],
  ['critical_warning', 'Critical warning'],
  ['percentage_used', 'Endurance used (%)'],
  ['available_spare', 'Spare left (%)'],
  ['media_errors', 'Media errors'],
];

// A disk's health in words: "warning: 8 sectors pending reallocation".
function healthText(d) {
  if (!d.health) return '–';
  return d.health_details ? `${d.health}: ${d.health_details}` : d.health;
}

function healthRows(d) {
  const s = d.smart;
  const temp = d.temperature_c === null || d.temperature_c === undefined ? '–'
    : `${d.temperature_c} °C${s && s.temperature_limit_c ? ` (its limit ${s.temperature_limit_c} °C)` : ''}`;
  const rows = [
    ['Health', healthText(d)],
    ['Temperature', temp],
    ['Power-on hours', d.power_on_hours === null || d.power_on_hours === undefined ? '–' : num(d.power_on_hours)],
  ];
  if (!s) return rows;
  rows.push(['Health read', (s.read ? new Date(s.read).toLocaleString() : 'never') + (s.asleep ? ' (asleep since: not woken)' : '')]);
  for (const [k, label] of SMART_ROWS) if (k in s) rows.push([label, s[k] === null ? '–' : num(s[k])]);
  return rows;
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
    ...(d.present ? healthRows(d) : []),
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
  // its health, when it is not well, and its temperature
  const health = h('span', { class: 'badge bay-health', hidden: true });
  const temp = h('span', { class: 'bay-temp' });
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
    const bad = obj.health === 'failing' || obj.health === 'warning';
    health.hidden = !bad;
    health.textContent = obj.health === 'failing' ? 'Failing' : 'Warning';
    health.className = `badge bay-health ${obj.health === 'failing' ? 'sev-critical' : 'sev-minor'}`;
    health.title = bad ? obj.health_details : '';
    el.classList.toggle('failing', obj.health === 'failing');
    el.classList.toggle('health-warning', obj.health === 'warning');
    temp.textContent = obj.temperature_c === null || obj.temperature_c === undefined ? '' : `${obj.temperature_c} °C`;
  }
  open.addEventListener('click', () => onSelect(api));
  el.append(open, fault, health, temp, loc.el);
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
// disks null: folded, its bays not read yet; expand(disks) lays them out. onToggle(card):
// the fold button was pressed (the page reads the disks and calls expand, or folds it).
// elsewhere: the disks in the other chassis, and how many of those hold any.
function chassisCard(c, disks, onLed, elsewhere = { disks: 0, chassis: 0 }, onToggle = null) {
  const headingId = nextId('chassis');
  const kind = c.kind === 'enclosure' || c.type === 'storage' ? 'Enclosure' : 'System';
  const title = c.display_name && c.display_name !== c.name ? `${c.name} · ${c.display_name}` : c.name || c.id;
  const meta = [
    [c.manufacturer || c.vendor, c.model].filter(Boolean).join(' '),
    c.serial ? `serial ${c.serial}` : null,
    c.slot_count !== undefined
      ? `${c.disk_count} of ${c.slot_count} slots used`
      : !c.disk_count && elsewhere.disks
        ? `no disks of its own; ${elsewhere.disks} in the ${elsewhere.chassis === 1 ? 'enclosure' : `${elsewhere.chassis} enclosures`} below`
        : `${c.disk_count} disk${c.disk_count === 1 ? '' : 's'}`,
  ].filter(Boolean);
  const fault = h('span', { class: 'badge sev-critical', text: 'Faulted disk', hidden: !c.faulted });
  const loc = locator({ name: c.name || c.id, path: `${HW}/${seg(c.id)}`, locate: c.locate, led_backend: c.led_backend, led_fault: c.led_fault }, (obj) => {
    el.classList.toggle('led-lit', obj.locate === true);
    onLed();
  });
  const panelId = nextId('disk-details');
  const panel = h('div', { class: 'disk-panel', id: panelId, hidden: true, role: 'region', 'aria-label': `Disk details, ${c.name || c.id}` });
  const bodyId = nextId('chassis-bays');
  const body = h('div', { class: 'chassis-body', id: bodyId });
  const nbays = c.slot_count !== undefined ? c.slot_count : c.disk_count;
  const fold = onToggle
    ? h('button', { type: 'button', class: 'chassis-fold', 'aria-expanded': 'false', 'aria-controls': bodyId, on: { click: () => onToggle(card) } })
    : null;
  let selected = null;
  let bays = [];
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
  // The bays of these disks, in place of any before.
  function layOut(list) {
    selected = null;
    panel.hidden = true;
    const ordered = list.slice().sort((a, b) => (c.slot_count !== undefined ? slotNumber(a) - slotNumber(b) : 0));
    bays = ordered.map((d) => bay(c, d, select, onLed));
    for (const b of bays) b.open.setAttribute('aria-controls', panelId);
    const cols = columns(c.slot_count !== undefined ? Math.max(c.slot_count, bays.length) : bays.length);
    const grid = h('div', { class: 'bays', role: 'list', 'aria-label': `${c.name || c.id}: ${c.slot_count !== undefined ? 'slots' : 'disks'}` }, bays.map((b) => b.el));
    grid.style.setProperty('--cols', String(cols));
    grid.style.setProperty('--cols-phone', String(Math.min(cols, 4)));
    body.replaceChildren(bays.length ? grid : elsewhere.disks ? '' : h('p', { class: 'muted', text: 'No disks.' }), panel);
    card.ids = list.map((d) => d.id).sort().join(' ');
  }
  const el = h(
    'section',
    { class: ['card', 'chassis', c.locate === true ? 'led-lit' : null], 'aria-labelledby': headingId, dataset: { chassis: c.id } },
    h(
      'div',
      { class: 'chassis-head' },
      h('div', { class: 'chassis-title' },
        h('h2', { id: headingId }, h('span', { text: title }), ' ', h('span', { class: 'badge', text: kind }), ' ', fault),
        h('p', { class: 'muted chassis-meta', text: meta.join(' · ') }),
        fold),
      h('div', { class: 'chassis-locator' }, h('span', { class: 'muted', text: `${kind} locator` }), loc.el),
    ),
    body,
  );
  // Whether the bays show: unfolded, or a filter found some of them.
  let expanded = false;
  let revealed = false;
  function showBody() {
    const open = expanded || revealed;
    body.hidden = !open;
    el.classList.toggle('folded', !open);
    if (fold) {
      fold.setAttribute('aria-expanded', String(open));
      fold.textContent = open ? 'Fold the bays' : `Show its ${nbays} bay${nbays === 1 ? '' : 's'}`;
    }
  }
  const card = {
    el,
    id: c.id,
    chassis: c,
    ids: null, // its disks' ids, once read
    get bays() {
      return bays;
    },
    get loaded() {
      return card.ids !== null;
    },
    get open() {
      return expanded || revealed;
    },
    // Unfolds it with these disks (or the ones it has).
    expand(list) {
      if (list) layOut(list);
      expanded = true;
      showBody();
    },
    fold() {
      expanded = false;
      showBody();
    },
    // A filter found bays here (true) or is gone (false): shown whatever the fold says.
    reveal(on) {
      revealed = on;
      showBody();
    },
    // Opens the details of the disk with this id (a link from a problem); false if none.
    show(diskId) {
      const b = bays.find((x) => x.disk.id === diskId);
      if (!b) return false;
      if (selected !== b) select(b);
      b.open.focus({ preventScroll: true });
      panel.scrollIntoView({ block: 'nearest' });
      return true;
    },
    // Fresh states; disksNew null: the chassis alone was read.
    update(cNew, disksNew) {
      card.chassis = cNew;
      loc.update(cNew);
      if (!loc.busy) el.classList.toggle('led-lit', cNew.locate === true);
      fault.hidden = !cNew.faulted;
      if (!disksNew) return;
      if (disksNew.map((d) => d.id).sort().join(' ') !== card.ids) {
        layOut(disksNew); // a disk came or went here
        return;
      }
      const byId = new Map(disksNew.map((d) => [d.id, d]));
      for (const b of bays) if (byId.has(b.disk.id)) b.update(byId.get(b.disk.id));
      if (selected) showPanel(selected);
    },
  };
  if (disks) card.expand(disks);
  else showBody();
  return card;
}

const listChassis = (signal) => get(HW, { signal }).then((list) => list.chassis || list.hardware || []);
const listDisks = (id, signal) => get(`${HW}/${seg(id)}/disk`, { signal }).then((d) => d.disks || []);

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
  let folding = false; // a big box: enclosures folded
  let dashLit = null; // the dashboard's count: it knows the LEDs of folded enclosures too
  const countLit = () => {
    const n = cards.every((x) => x.loaded) || dashLit === null ? body.querySelectorAll('.led-dot.on').length : dashLit;
    lit.textContent = n ? `${n} locator LED${n === 1 ? '' : 's'} lit` : 'No locator LED lit';
    lit.classList.toggle('on', n > 0);
  };

  // The filters, from the route (#/hardware?q=sdc&faulted=1&lit=1) and into it.
  search.value = ctx.query.get('q') || '';
  onlyFaulted.checked = ctx.query.get('faulted') === '1';
  onlyLit.checked = ctx.query.get('lit') === '1';
  const filtering = () => !!(search.value.trim() || onlyFaulted.checked || onlyLit.checked);

  // Reads the disks of the cards not read yet, a few at a time (a search of a big box).
  async function loadAll() {
    const todo = cards.filter((x) => !x.loaded);
    const one = async () => {
      for (let x = todo.shift(); x; x = todo.shift()) {
        const disks = await listDisks(x.id, ctx.signal);
        if (!x.loaded) x.update(x.chassis, disks); // laid out, folded or not as it was
      }
    };
    await Promise.all(Array.from({ length: LOAD_AT_ONCE }, one));
  }

  let filterRun = 0;
  async function applyFilters() {
    const run = ++filterRun;
    if (filtering() && cards.some((x) => !x.loaded)) {
      shown.textContent = 'Reading every enclosure\u2019s bays\u2026';
      try {
        await loadAll();
      } catch (e) {
        if (e.name !== 'AbortError' && e.status !== 401) toast(`Cannot read the hardware: ${e.details || e.message}`, 'error');
        return;
      }
      if (run !== filterRun) return; // typed on meanwhile: the later run shows
    }
    const q = search.value.trim().toLowerCase();
    const any = filtering();
    let match = 0;
    let all = 0;
    for (const card of cards) {
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
      card.reveal(!!any && here > 0);
    }
    shown.textContent = any ? `${match} of ${all} bays shown` : '';
    countLit();
    const p = new URLSearchParams();
    if (q) p.set('q', search.value.trim());
    if (onlyFaulted.checked) p.set('faulted', '1');
    if (onlyLit.checked) p.set('lit', '1');
    for (const k of ['chassis', 'disk']) if (ctx.query.get(k)) p.set(k, ctx.query.get(k));
    setRoute(p.toString() ? `hardware?${p}` : 'hardware');
  }
  for (const el of [search, onlyFaulted, onlyLit]) el.addEventListener('input', applyFilters);

  // Unfolds a card (reading its disks first), or folds it.
  async function toggle(card) {
    if (card.open && !card.el.hidden && card.loaded) {
      if (filtering()) card.reveal(false);
      card.fold();
      return;
    }
    try {
      card.expand(card.loaded ? null : await listDisks(card.id, ctx.signal));
    } catch (e) {
      if (e.name !== 'AbortError' && e.status !== 401) toast(`Cannot read ${card.chassis.name || card.id}: ${e.details || e.message}`, 'error');
    }
  }

  // The chassis list and, for each chassis read open, its disks: every chassis on a small
  // box; on a big one the system, the faulted enclosures and the one a link names.
  const wantChassis = ctx.query.get('chassis');
  const wantDisk = ctx.query.get('disk');
  async function build(chassis) {
    const bayCount = chassis.reduce((n, c) => n + (c.slot_count !== undefined ? c.slot_count : c.disk_count || 0), 0);
    folding = chassis.length > FOLD_CHASSIS || bayCount > FOLD_BAYS;
    const openAtStart = (c) => !folding || c.type === 'system' || c.id === 'system' || !!c.faulted || c.id === wantChassis;
    const disks = await Promise.all(chassis.map((c) => (openAtStart(c) ? listDisks(c.id, ctx.signal) : null)));
    // (a read list holds its empty slots too: they are no disk)
    const own = (c, i) => (disks[i] ? disks[i].filter((d) => d.present).length : c.disk_count || 0);
    const present = chassis.reduce((n, c, i) => n + own(c, i), 0);
    const holding = chassis.filter((c, i) => own(c, i) > 0).length;
    cards = chassis.map((c, i) => {
      const mine = own(c, i);
      const elsewhere = { disks: present - mine, chassis: holding - (mine > 0 ? 1 : 0) };
      return chassisCard(c, disks[i], countLit, elsewhere, folding ? toggle : null);
    });
    body.replaceChildren(...cards.map((x) => x.el));
    countLit();
    await applyFilters();
  }

  // Fresh states in place (the chassis list, and the disks of what shows); a chassis that
  // came or went rebuilds the page.
  let reloading = false;
  async function reload() {
    if (reloading) return;
    reloading = true;
    body.setAttribute('aria-busy', 'true');
    try {
      const chassis = await listChassis(ctx.signal);
      const same = chassis.length === cards.length && chassis.every((c, i) => c.id === cards[i].id);
      if (!same) {
        await build(chassis);
        return;
      }
      await Promise.all(
        chassis.map(async (c, i) => {
          const card = cards[i];
          card.update(c, card.loaded && (card.open || !folding) ? await listDisks(c.id, ctx.signal) : null);
        }),
      );
      countLit();
      if (filtering()) await applyFilters();
    } catch (e) {
      if (e.name !== 'AbortError' && e.status !== 401) toast(`Cannot read the hardware: ${e.details || e.message}`, 'error');
    } finally {
      reloading = false;
      body.removeAttribute('aria-busy');
    }
  }
  refresh.addEventListener('click', reload);

  await build(await listChassis(ctx.signal));
  // #/hardware?chassis=ID&disk=ID (a problem's component): that disk's details open, or
  // that chassis in view.
  let target = cards.find((x) => x.id === wantChassis);
  if (!target && wantDisk) {
    target = cards.find((x) => x.loaded && x.ids.split(' ').includes(wantDisk));
    // on a big box the disk's enclosure may be folded: read the others until it is found
    for (const x of cards) {
      if (target || x.loaded) continue;
      const disks = await listDisks(x.id, ctx.signal);
      x.update(x.chassis, disks);
      if (disks.some((d) => d.id === wantDisk)) target = x;
    }
  }
  if (target && !target.open) target.expand(target.loaded ? null : await listDisks(target.id, ctx.signal));
  if (target && !(wantDisk && target.show(wantDisk))) target.el.scrollIntoView({ block: 'start' });
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
      dashLit = doc.leds_lit;
      const now = `${doc.leds_lit}/${doc.problems}`;
      if (seen !== null && now !== seen) reload();
      else countLit();
      seen = now;
    }),
  );
}
