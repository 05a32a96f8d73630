// SPDX-License-Identifier: ISC
// Building the page: elements from plain data, text only through textContent, and the
// formats every page shares. Nothing here writes HTML from a string, so no answer of the
// server can become markup.

// h('button', {class: 'primary', type: 'button', on: {click: fn}}, 'Save')
// props: class (string or array), text, dataset {}, on {event: fn}, hidden, any attribute.
// Children: nodes, strings (as text), numbers, arrays, and null/false (skipped).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'value') el.value = v;
      else if (k === 'checked' || k === 'disabled' || k === 'selected' || k === 'hidden')
        el[k] = !!v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// A labelled form field: label, control, a hint (unit, limits) and a place for its fault.
// Returns {wrap, input, error}; the control gets id `id`.
export function field(id, label, input, hint) {
  input.id = id;
  const error = h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' });
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint`, text: hint }) : null;
  input.setAttribute('aria-describedby', [hintEl && hintEl.id, error.id].filter(Boolean).join(' '));
  const wrap = h('div', { class: 'field' }, h('label', { for: id, text: label }), input, hintEl, error);
  return { wrap, input, error };
}

// Shows the server's fault next to the field it names (fields: name -> {input, error}),
// else in `fallback`. Returns true if a field took it.
export function showFault(err, fields, fallback) {
  for (const f of Object.values(fields)) {
    f.error.textContent = '';
    f.input.removeAttribute('aria-invalid');
  }
  if (fallback) fallback.textContent = '';
  const f = err && err.field ? fields[err.field] || fields[err.field.split(/[.[]/)[0]] : null;
  if (f) {
    f.error.textContent = err.details;
    f.input.setAttribute('aria-invalid', 'true');
    f.input.focus();
    return true;
  }
  if (fallback) fallback.textContent = err ? err.details || String(err) : '';
  return false;
}

let toastTimer = 0;
// A short message at the bottom of the screen, read out by screen readers.
export function toast(text, kind = 'info') {
  const t = document.getElementById('toast');
  if (!t) return;
  t.textContent = text;
  t.dataset.kind = kind;
  t.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.remove('show'), kind === 'error' ? 8000 : 3000);
}

// ---- formats

// Names in the order a person counts them: sda .. sdz, sdaa (a disk's letters are a number
// written in letters), disk2 before disk10.
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
export function naturalCompare(a, b) {
  const disk = /^(sd|vd|xvd|hd)([a-z]+)$/;
  const x = disk.exec(String(a));
  const y = disk.exec(String(b));
  if (x && y && x[1] === y[1] && x[2].length !== y[2].length) return x[2].length - y[2].length;
  return collator.compare(String(a), String(b));
}

const NBSP = '\u00a0';

export function num(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(digits)}G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(digits)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(digits)}k`; // 7.8k beside 35.3k: one form in a column
  return a >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(digits);
}

// Bytes in binary units: 1.5 GiB.
export function bytes(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let x = Math.abs(v);
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${(v < 0 ? -x : x).toFixed(i ? digits : 0)}${NBSP}${units[i]}`;
}

export function pct(v, digits = 1) {
  return v === null || v === undefined ? '–' : `${Number(v).toFixed(digits)}${NBSP}%`;
}

// Milliseconds as a latency reads: µs below a millisecond, a decimal below 10 µs (page-cache
// reads take 1.3 µs: "1 µs" on one axis tick and the next said nothing).
export function ms(v) {
  if (v === null || v === undefined) return '–';
  if (v >= 1) return `${v.toFixed(v < 10 ? 2 : 1)}${NBSP}ms`;
  const us = v * 1000;
  return `${us > 0 && us < 10 ? us.toFixed(1) : us.toFixed(0)}${NBSP}µs`;
}

export function duration(s) {
  if (s === null || s === undefined) return '–';
  s = Math.round(s);
  const d = Math.floor(s / 86400);
  const hh = Math.floor((s % 86400) / 3600);
  const mm = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${hh}h`;
  if (hh) return `${hh}h ${mm}m`;
  if (mm) return `${mm}m ${s % 60}s`;
  return `${s}s`;
}

// ---- time: local by default, UTC when the user asks (kept across reloads: a preference,
// not a secret, so localStorage is fine for it).

const UTC_KEY = 'spindle.utc';
const timeListeners = new Set();

export const prefs = {
  get utc() {
    return localStorage.getItem(UTC_KEY) === '1';
  },
  set utc(on) {
    localStorage.setItem(UTC_KEY, on ? '1' : '0');
    for (const fn of timeListeners) fn(on);
  },
};

export function onTimeZone(fn) {
  timeListeners.add(fn);
  return () => timeListeners.delete(fn);
}

function toDate(t) {
  if (t instanceof Date) return t;
  if (typeof t === 'number') return new Date(t * 1000); // epoch seconds
  return new Date(t); // ISO 8601
}

function pad(n) {
  return String(n).padStart(2, '0');
}

// "2026-12-01 18:16:36" in local time or UTC ("… UTC").
export function time(t, { seconds = true, date = true } = {}) {
  if (t === null || t === undefined || t === '') return '–';
  const d = toDate(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const u = prefs.utc;
  const Y = u ? d.getUTCFullYear() : d.getFullYear();
  const M = pad((u ? d.getUTCMonth() : d.getMonth()) + 1);
  const D = pad(u ? d.getUTCDate() : d.getDate());
  const hh = pad(u ? d.getUTCHours() : d.getHours());
  const mi = pad(u ? d.getUTCMinutes() : d.getMinutes());
  const ss = pad(u ? d.getUTCSeconds() : d.getSeconds());
  const clock = seconds ? `${hh}:${mi}:${ss}` : `${hh}:${mi}`;
  return `${date ? `${Y}-${M}-${D} ` : ''}${clock}${u ? ' UTC' : ''}`;
}

// A <time> element that shows t in the chosen zone.
export function timeEl(t, opts) {
  const d = toDate(t);
  return h('time', { datetime: Number.isNaN(d.getTime()) ? '' : d.toISOString(), text: time(t, opts) });
}

// Downloads text as a file (CSV export) without a server round trip.
export function download(name, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
