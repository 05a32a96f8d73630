// SPDX-License-Identifier: ISC
// #/bench/new: a job spec from a form. The patterns come from the presets (SLOB-like,
// iozone-like) and the plain ones; each shows the fields that apply to it, with its unit and
// the limits server/worker/spec.c enforces as hints. The server checks the spec; its fault
// shows next to the field it names. #/bench/sweeps/new is the same form with axes: up to
// four of its fields, each given a list of values, every combination a run (POST .../sweeps).

import { ApiError, can, get, post } from '../api.js';
import { clear, field, h, showFault } from '../dom.js';
import { go } from '../app.js';
import { BASE, loadJob } from './common.js';

const PLAIN = {
  randread: 'Random reads by reader threads',
  read: 'Sequential reads, the file shared out in slices',
  randwrite: 'Random writes by writer threads',
  write: 'Sequential writes, the file shared out in slices',
  randrw: 'Random reads and writes: threads that mix (rwmix_read), or separate readers and writers',
};

const SIZE_HINT = 'bytes, or with a binary unit: 512, 8k, 64M, 1G';
const DUR_HINT = 'seconds, or with a unit: 30s, 500ms, 2m';

// A size in bytes as the spec takes it and a person types it (the server's own form, as
// its comparisons write it): 8192 "8k", 12582912 "12M"; one that is no whole number of
// KiB stays in bytes.
export function specSize(v) {
  if (!Number.isInteger(v) || v < 1024 || v % 1024) return String(v);
  const units = 'kMGTP';
  let u = 0;
  v /= 1024;
  while (u + 1 < units.length && v >= 1024 && v % 1024 === 0) {
    v /= 1024;
    u++;
  }
  return `${v}${units[u]}`;
}

// Every field of a spec: the key sent, the control, its hint (unit and limits as spec.c
// has them), and the patterns it applies to (spec.c's `only` table).
const ALL = ['read', 'write', 'randread', 'randwrite', 'randrw', 'slob', 'iozone'];
const NOT_IOZONE = ALL.filter((p) => p !== 'iozone');
const FIELDS = [
  { key: 'label', label: 'Label', kind: 'text', hint: 'what this run tries, e.g. recordsize=8k; at most 256 characters', max: 256, on: ALL },
  { key: 'name', more: true, label: 'Name', kind: 'text', hint: 'optional: 1 to 64 letters, digits, “.”, “_” or “-”, not starting with “.” or “-”; names the job’s own file', max: 64, on: ALL },
  { key: 'target', label: 'Target file', kind: 'text', hint: 'absolute path of a file inside a bench dir; empty: the job’s own file in the first bench dir', on: ALL },
  { key: 'sessions', label: 'Sessions', kind: 'int', min: 1, max: 256, unit: 'threads', on: ['slob'] },
  { key: 'update_pct', label: 'Update percent', kind: 'int', min: 0, max: 100, unit: '%', on: ['slob'] },
  { key: 'threads', label: 'Threads', kind: 'int', min: 1, max: 256, unit: 'threads', on: ['read', 'write', 'randread', 'randwrite', 'randrw', 'iozone'], hint: { randrw: 'threads that mix reads and writes; or give readers and writers instead' } },
  { key: 'readers', label: 'Readers', kind: 'int', min: 0, max: 256, unit: 'threads', on: ['read', 'randread', 'randrw'] },
  { key: 'writers', label: 'Writers', kind: 'int', min: 0, max: 256, unit: 'threads', on: ['write', 'randwrite', 'randrw'] },
  { key: 'rwmix_read', label: 'Read mix', kind: 'int', min: 0, max: 100, unit: '% of a thread’s I/Os that read (default 50)', on: ['randrw'] },
  { key: 'passes', label: 'Passes', kind: 'passes', on: ['iozone'] },
  { key: 'size', alias: { iozone: 'file_size' }, label: 'Size', kind: 'size', on: ALL, limits: '512 B to 1 PiB, a multiple of the block size; no more than the target’s filesystem, leaving its reserve free' },
  { key: 'block_size', alias: { iozone: 'record_size' }, label: 'Block size', kind: 'size', on: ALL, limits: '512 B to 16 MiB, a multiple of 512', hint: { read: 'default 8k', write: 'default 8k', randread: 'default 8k', randwrite: 'default 8k', randrw: 'default 8k' } },
  { key: 'runtime_s', alias: { slob: 'run_time' }, label: 'Run time', kind: 'duration', on: NOT_IOZONE, limits: 'from 0.001 s; with the ramp-up at most the server’s --bench-max-runtime', hint: { read: 'empty: one pass over the size, or the amount', write: 'empty: one pass over the size, or the amount', randread: 'empty: one pass over the size, or the amount', randwrite: 'empty: one pass over the size, or the amount', randrw: 'empty: one pass over the size, or the amount' } },
  { key: 'ramp_s', more: true, label: 'Ramp-up', kind: 'duration', on: NOT_IOZONE, limits: '0 to 86400 s, not measured' },
  { key: 'io_size', more: true, label: 'Amount', kind: 'size', on: NOT_IOZONE, limits: 'bytes to move instead of a run time; a multiple of the block size' },
  { key: 'engine', more: true, label: 'Engine', kind: 'select', options: ['psync', 'io_uring'], on: ALL, limits: 'psync: one I/O at a time per thread; io_uring: a queue per thread' },
  { key: 'iodepth', more: true, label: 'I/O depth', kind: 'int', min: 1, max: 1024, unit: 'I/Os in flight per thread, above 1 with io_uring only; threads × depth × block size at most 4 GiB', on: ALL },
  { key: 'iodepth_batch', more: true, label: 'I/O batch', kind: 'int', min: 1, max: 1024, unit: 'I/Os per submit (io_uring), at most the I/O depth; default 1', on: ALL },
  { key: 'fsync_every', more: true, label: 'fsync every', kind: 'int', min: 0, max: 2 ** 30, unit: 'writes per thread between fsyncs; 0: none (jobs that write only)', on: ['write', 'randwrite', 'randrw', 'slob', 'iozone'] },
  { key: 'seed', more: true, label: 'Random seed', kind: 'int', min: 0, unit: 'a non-negative integer, for a repeatable sequence of offsets', on: ALL },
  { key: 'direct', label: 'Direct I/O (O_DIRECT), past the page cache', kind: 'bool', on: ALL },
  { key: 'confirm', more: true, label: 'The target is a raw block device: I confirm it may be overwritten', kind: 'bool', on: ALL },
];
const PASSES = ['write', 'rewrite', 'read', 'reread', 'random_read', 'random_write'];

const keyFor = (f, pattern) => (f.alias && f.alias[pattern]) || f.key;

function hintFor(f, pattern, preset) {
  const key = keyFor(f, pattern);
  const parts = [];
  const said = preset && preset.fields && (preset.fields[key] || preset.fields[f.key]);
  if (said) parts.push(said);
  if (f.hint && typeof f.hint === 'string') parts.push(f.hint);
  else if (f.hint && f.hint[pattern]) parts.push(f.hint[pattern]);
  if (f.kind === 'int' && f.max !== undefined) parts.push(`${f.min} to ${f.max}${f.unit ? ` ${f.unit}` : ''}`);
  else if (f.kind === 'int' && f.unit) parts.push(f.unit);
  if (f.kind === 'size') parts.push(SIZE_HINT);
  if (f.kind === 'duration') parts.push(DUR_HINT);
  if (f.limits) parts.push(f.limits);
  return parts.join(' · ');
}

// What a text box holds, as the spec wants it: integers as numbers, the rest as typed (so
// the server, not the browser, says what is wrong with it).
function valueOf(f, el) {
  if (f.kind === 'bool') return el.checked ? true : undefined;
  if (f.kind === 'passes') {
    const on = [...el.querySelectorAll('input:checked')].map((i) => i.value);
    return on.length === PASSES.length ? undefined : on;
  }
  const v = el.value.trim();
  if (v === '') return undefined;
  if (f.kind === 'int' || f.kind === 'size') return /^\d+$/.test(v) ? Number(v) : v;
  if (f.kind === 'duration') return /^\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  return v;
}

function control(f) {
  if (f.kind === 'select') return h('select', {}, h('option', { value: '', text: 'default (psync)' }), f.options.map((o) => h('option', { value: o, text: o })));
  if (f.kind === 'int') return h('input', { type: 'number', inputmode: 'numeric', min: f.min, max: f.max, step: 1 });
  if (f.kind === 'bool') return h('input', { type: 'checkbox' });
  return h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none', maxlength: f.max });
}

// The iozone passes: a group of checkboxes (all by default).
function passesField(id) {
  const boxes = PASSES.map((p) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: p, checked: true, name: 'passes' }), p.replace('_', ' ')));
  const group = h('fieldset', { id, class: 'bench-passes', tabindex: '-1' }, h('legend', { text: 'Passes' }), h('div', { class: 'row' }, boxes));
  const hint = h('p', { class: 'hint', id: `${id}-hint` });
  const error = h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' });
  group.setAttribute('aria-describedby', `${id}-hint ${id}-error`);
  return { wrap: h('div', { class: 'field' }, group, hint, error), input: group, error, hint };
}

const MAX_AXES = 4; // server/bench/sweeps.c
const NOT_AXES = new Set(['label', 'name', 'passes', 'confirm']);

// An axis' values as typed ("1, 2, 4" or "4k 8k"), each as the spec wants it.
function axisValues(f, text) {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((v) => {
      if (f.kind === 'bool') return v === 'true' ? true : v === 'false' ? false : v;
      if (f.kind === 'int' || f.kind === 'size') return /^\d+$/.test(v) ? Number(v) : v;
      if (f.kind === 'duration') return /^\d+(\.\d+)?$/.test(v) ? Number(v) : v;
      return v;
    });
}

// The axes of a sweep: a row per axis (a field and its values), Add and Remove, and the
// number of runs they make. onChange() after any change.
function axesEditor(controls, patternOf, onChange) {
  const rows = h('div', { class: 'sweep-axes-rows' });
  const error = h('p', { class: 'field-error', id: 'sweep-axes-error', role: 'alert' });
  const count = h('p', { class: 'hint', id: 'sweep-axes-count', 'aria-live': 'polite' });
  const add = h('button', { type: 'button', id: 'sweep-axis-add', text: 'Add an axis' });
  const box = h('fieldset', { class: 'sweep-axes', id: 'sweep-axes', tabindex: '-1', 'aria-describedby': 'sweep-axes-count sweep-axes-error' }, h('legend', { text: 'Axes: the fields to vary, each with its values; every combination is a run' }), rows, add, count, error);
  let serial = 0;
  const list = []; // {select, values, wrap, error}
  const options = () => controls.filter((c) => !c.wrap.hidden && !NOT_AXES.has(c.f.key));
  const byKey = (k) => controls.find((c) => keyFor(c.f, patternOf()) === k || c.f.key === k);
  const fillOptions = (row, keep) => {
    clear(row.select);
    for (const c of options()) row.select.append(h('option', { value: keyFor(c.f, patternOf()), text: c.f.label }));
    const offered = (k) => [...row.select.options].some((o) => o.value === k);
    // a field the pattern lacks gives way to its thread count (SLOB's sessions), as a new
    // sweep starts
    const pick = [keep, 'threads', 'sessions'].find((k) => k && offered(k));
    if (pick) row.select.value = pick;
  };
  const changed = () => {
    add.disabled = list.length >= MAX_AXES;
    for (const r of list) r.remove.disabled = list.length === 1;
    const n = list.reduce((m, r) => m * Math.max(1, axisValues(byKey(r.select.value)?.f || {}, r.values.value).length), 1);
    count.textContent = `${n} run${n === 1 ? '' : 's'}, one after another (at most 256).`;
    onChange();
  };
  const addRow = (key, values = '') => {
    const id = `sweep-axis-${++serial}`;
    const select = h('select', { id: `${id}-field` });
    const input = h('input', { type: 'text', id: `${id}-values`, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none', value: values, 'aria-describedby': `${id}-hint ${id}-error` });
    const rowError = h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' });
    const row = { select, values: input, error: rowError };
    row.remove = h('button', {
      type: 'button',
      class: 'sweep-axis-remove',
      'aria-label': 'Remove this axis',
      text: 'Remove',
      on: {
        click: () => {
          list.splice(list.indexOf(row), 1);
          row.wrap.remove();
          changed();
        },
      },
    });
    row.wrap = h(
      'div',
      { class: 'sweep-axis' },
      h('div', { class: 'field' }, h('label', { for: select.id, text: 'Field' }), select),
      h('div', { class: 'field sweep-axis-values' }, h('label', { for: input.id, text: 'Values' }), input, h('p', { class: 'hint', id: `${id}-hint`, text: 'separated by commas or spaces: 1, 2, 4, 8 or 4k 8k 64k' }), rowError),
      row.remove,
    );
    fillOptions(row, key);
    // an edited axis no longer holds what was refused
    const edited = () => {
      rowError.textContent = '';
      input.removeAttribute('aria-invalid');
      error.textContent = '';
      changed();
    };
    select.addEventListener('change', edited);
    input.addEventListener('input', edited);
    list.push(row);
    rows.append(row.wrap);
    changed();
    return row;
  };
  add.addEventListener('click', () => {
    const used = new Set(list.map((r) => r.select.value));
    const free = options().find((c) => !used.has(keyFor(c.f, patternOf())));
    addRow(free ? keyFor(free.f, patternOf()) : undefined).select.focus();
  });
  return {
    el: box,
    error,
    input: box,
    rows: list,
    addRow,
    // the pattern changed: each row offers its fields, keeping what it had where it can
    refresh() {
      for (const r of list) fillOptions(r, r.select.value);
      changed();
    },
    swept: () => new Set(list.map((r) => r.select.value)),
    // {field: [values]}, or a fault at the first row that has none
    read() {
      const axes = {};
      for (const r of list) {
        const c = byKey(r.select.value);
        axes[r.select.value] = axisValues(c ? c.f : {}, r.values.value);
      }
      return axes;
    },
    clearFaults() {
      error.textContent = '';
      for (const r of list) {
        r.error.textContent = '';
        r.values.removeAttribute('aria-invalid');
      }
    },
    // a fault naming an axis goes to its row; true if a row took it
    show(key, text) {
      const r = list.find((x) => x.select.value === key);
      if (!r) return false;
      r.error.textContent = text;
      r.values.setAttribute('aria-invalid', 'true');
      r.values.focus();
      return true;
    },
  };
}

export async function render(main, ctx) {
  const sweepMode = ctx.parts[0] === 'sweeps';
  main.append(h('h1', { text: sweepMode ? 'New sweep' : 'New benchmark run' }));
  if (!can('bench:run')) {
    main.append(h('p', { class: 'muted', text: 'Your role may read runs and results but not start runs.' }), h('p', {}, h('a', { href: '#/bench', text: 'Back to the runs' })));
    ctx.ready();
    return;
  }
  const { presets } = await get(`${BASE}/presets`, { signal: ctx.signal });
  const byName = Object.fromEntries(presets.map((p) => [p.name, p]));

  const pattern = field(
    'bench-pattern',
    'Pattern',
    h(
      'select',
      {},
      h('optgroup', { label: 'Presets' }, presets.map((p) => h('option', { value: p.name, text: `${p.name} (preset)` }))),
      h('optgroup', { label: 'Plain patterns' }, Object.keys(PLAIN).map((p) => h('option', { value: p, text: p }))),
    ),
  );
  const describe = h('p', { class: 'hint bench-describe', id: 'bench-pattern-about' });
  pattern.input.setAttribute('aria-describedby', `bench-pattern-about ${pattern.error.id}`);

  // one control per field; the form shows those of the chosen pattern
  const controls = FIELDS.map((f) => {
    const id = `bench-${f.key}`;
    const c = f.kind === 'passes' ? passesField(id) : field(id, f.label, control(f), ' ');
    if (f.kind === 'bool') {
      c.wrap.classList.add('field-check');
      c.wrap.prepend(c.input); // box first, then its label
    }
    const hint = c.hint || c.wrap.querySelector('.hint');
    return { f, ...c, hint };
  });
  // a fault may name a field by any of its keys (the canonical one or the alias sent)
  const faultFields = {};
  for (const c of controls) {
    faultFields[c.f.key] = c;
    for (const a of Object.values(c.f.alias || {})) faultFields[a] = c;
  }
  faultFields.pattern = pattern;
  faultFields.spec = pattern;

  const general = h('div', { class: 'bench-form-grid' });
  const moreGrid = h('div', { class: 'bench-form-grid' });
  const more = h('details', { class: 'bench-more', id: 'bench-more' }, h('summary', { text: 'More settings: engine, queue depth, fsync, ramp-up, amount, seed, name' }), moreGrid);
  const fallback = h('p', { class: 'error', role: 'alert', id: 'bench-form-error' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'bench-submit', text: sweepMode ? 'Start sweep' : 'Start run' });
  // a sweep's own name and label, and its axes
  const sweepName = sweepMode ? field('sweep-name', 'Sweep name', h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none', maxlength: 64 }), 'optional: names the file its runs share; default the spec’s name, else “sweep”') : null;
  const sweepLabel = sweepMode ? field('sweep-label', 'Sweep label', h('input', { type: 'text', autocomplete: 'off', maxlength: 256 }), 'what the sweep looks for, e.g. the knee of 8k random reads') : null;
  const markSwept = () => {
    if (!axes) return;
    const swept = axes.swept();
    for (const c of controls) {
      const on = swept.has(keyFor(c.f, pattern.input.value));
      c.input.disabled = on;
      c.wrap.classList.toggle('swept', on);
    }
  };
  const axes = sweepMode ? axesEditor(controls, () => pattern.input.value, () => markSwept()) : null;
  const form = h(
    'form',
    { class: 'card bench-form', novalidate: true, 'aria-labelledby': 'bench-new-title' },
    h('h2', { id: 'bench-new-title', class: 'visually-hidden', text: 'Job spec' }),
    sweepMode ? h('div', { class: 'bench-form-grid' }, sweepName.wrap, sweepLabel.wrap) : null,
    pattern.wrap,
    describe,
    general,
    more,
    axes ? axes.el : null,
    fallback,
    h('div', { class: 'row' }, submit, h('a', { class: 'button', href: '#/bench', text: 'Cancel' })),
  );
  for (const c of controls) (c.f.more ? moreGrid : general).append(c.wrap);

  const fill = (values) => {
    for (const c of controls) {
      const v = values[keyFor(c.f, pattern.input.value)] ?? values[c.f.key];
      if (c.f.kind === 'passes') {
        for (const b of c.input.querySelectorAll('input')) b.checked = !Array.isArray(v) || v.includes(b.value);
      } else if (c.f.kind === 'bool') c.input.checked = v === true;
      else if (c.f.kind === 'size' && typeof v === 'number') c.input.value = specSize(v);
      else c.input.value = v === undefined ? '' : String(v);
    }
  };

  const choose = (fromExample) => {
    const p = pattern.input.value;
    const preset = byName[p];
    describe.textContent = preset ? preset.description : PLAIN[p] || '';
    for (const c of controls) {
      c.wrap.hidden = !c.f.on.includes(p);
      c.hint.textContent = hintFor(c.f, p, preset);
      const lab = c.wrap.querySelector(`label[for="${c.input.id}"]`);
      if (lab && c.f.alias) lab.textContent = keyFor(c.f, p) === c.f.key ? c.f.label : `${c.f.label} (${keyFor(c.f, p)})`;
    }
    if (fromExample) {
      // a preset starts from its example, kept short and small: a test run, not a study;
      // past the page cache unless it says otherwise (through the cache, a first 8k random
      // read measures memory, not the disks)
      const ex = preset ? { ...preset.example } : {};
      delete ex.pattern;
      if (ex.direct === undefined) ex.direct = true;
      fill(ex);
    }
    if (axes) {
      axes.refresh();
      axes.clearFaults();
    }
    showFault(null, faultFields, fallback);
  };
  pattern.input.addEventListener('change', () => choose(true));
  pattern.input.value = ctx.query.get('pattern') && (byName[ctx.query.get('pattern')] || PLAIN[ctx.query.get('pattern')]) ? ctx.query.get('pattern') : presets[0].name;
  choose(true);
  // a sweep starts as the usual one: the thread count doubling (SLOB's are sessions)
  if (axes) axes.addRow(pattern.input.value === 'slob' ? 'sessions' : 'threads', '1, 2, 4, 8, 16');
  // #/bench/new?from=ID: run again with changes, the form filled with that run's spec
  const from = ctx.query.get('from');
  if (/^[1-9]\d*$/.test(from || '')) {
    try {
      const job = await loadJob(from, ctx.signal);
      if (job.spec && (byName[job.spec.pattern] || PLAIN[job.spec.pattern])) {
        pattern.input.value = job.spec.pattern;
        choose(false);
        fill(job.spec);
        main.querySelector('h1').textContent = `${sweepMode ? 'New sweep' : 'New run'} from run #${job.id}`;
        if (controls.some((c) => c.f.more && !c.wrap.hidden && (c.f.kind === 'bool' ? c.input.checked : c.input.value))) more.open = true;
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      fallback.textContent = `Cannot read run ${from} to start from it: ${e.details || e.message}`;
    }
  }

  // A sweep's fault: "axes.threads: ..." at that axis; "axes: threads 1000 (with ...):
  // threads: ..." (a combination the job checks refused) at the axis or field it names;
  // name and label at the sweep's own. True when it was shown.
  const sweepFault = (e) => {
    if (e.field === 'name' || e.field === 'label') return showFault(e, { name: sweepName, label: sweepLabel }, fallback);
    if (!e.field || !e.field.startsWith('axes')) return false;
    const direct = /^axes\.(\w+):/.exec(e.details);
    const inner = /^axes: .*?\): (\w+):|^axes: [^:()]*: (\w+):/.exec(e.details);
    const key = direct ? direct[1] : inner ? inner[1] || inner[2] : null;
    if (key && axes.show(key, e.details)) return true;
    if (key && faultFields[key] && !faultFields[key].wrap.hidden) {
      if (more.contains(faultFields[key].wrap)) more.open = true;
      return showFault({ ...e, field: key, details: e.details }, faultFields, fallback);
    }
    axes.error.textContent = e.details;
    axes.el.focus();
    return true;
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const p = pattern.input.value;
    const spec = { pattern: p };
    const swept = axes ? axes.swept() : new Set();
    for (const c of controls) {
      if (c.wrap.hidden || swept.has(keyFor(c.f, p))) continue;
      const v = valueOf(c.f, c.input);
      if (v !== undefined) spec[keyFor(c.f, p)] = v;
    }
    submit.disabled = true;
    try {
      if (axes) {
        const body = { spec, axes: axes.read() };
        const name = sweepName.input.value.trim();
        const label = sweepLabel.input.value.trim();
        if (name) body.name = name;
        if (label) body.label = label;
        const doc = await post(`${BASE}/sweeps`, body, { signal: ctx.signal });
        go(`bench/sweeps/${doc.sweep.id}`);
      } else {
        const doc = await post(`${BASE}/jobs`, spec, { signal: ctx.signal });
        go(`bench/jobs/${doc.job.id}`);
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e instanceof ApiError && e.code === 'ERR_CONFIRM_REQUIRED') e.field = 'confirm';
      if (axes) {
        axes.clearFaults();
        showFault(null, faultFields, fallback);
        if (sweepFault(e)) return;
      }
      // a field folded away is shown before its fault goes next to it
      const at = e.field && faultFields[e.field];
      if (at && more.contains(at.wrap)) more.open = true;
      showFault(e, faultFields, fallback);
    } finally {
      submit.disabled = false;
    }
  });

  main.append(form);
  ctx.ready();
}
