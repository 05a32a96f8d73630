// SPDX-License-Identifier: ISC
// Heat maps' buckets: which datasets are drawn as heat maps (their keys are numeric ranges
// and their drilldown one the appliance draws so), each key's place on the bucket axis,
// the axis' ticks and the texts of ranges and values. Pure functions: no DOM, no requests.
//
// A heat map's y axis is in "axis units": log2 of the nanoseconds or bytes where the
// buckets grow by powers of two (latency, size), else the keys' own numbers (offset in
// 64ths of the device, utilization in percent).

import { num } from '../dom.js';

const NBSP = '\u00a0';
const RANGE = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/;
const OPEN = /^(\d+)\+$/;

// How each drilldown's buckets are laid out and read. edge: the height (axis units) given
// to a bucket whose range has no finite log (from 0, or open above), as its neighbours
// have; span: the least range shown, so a few rows are not stretched over the height.
const KINDS = {
  latency: { log: true, edge: 0.25, span: 4, fallback: [14, 24], text: (v) => nsText(v) },
  size: { log: true, edge: 1, span: 4, fallback: [9, 20], text: (v) => sizeText(v) },
  offset: { log: false, fixed: [0, 64], text: (v) => `${num((v / 64) * 100)}${NBSP}%`, of: ' of the device' },
  utilization: { log: false, fixed: [0, 100], text: (v) => `${num(v)}${NBSP}%`, of: ' busy' },
};

// zpool.vdev_ops' waits (zpool iostat -w): nanoseconds, as latency's (a power of two each).
const ALIASES = { total_wait: 'latency', disk_wait: 'latency', syncq_wait: 'latency', asyncq_wait: 'latency' };

// The drilldown a dataset's name ends with: "io.ops[disk=sda][latency]" -> "latency".
export function drilldownOf(name) {
  const m = /\[([^[\]]*)\]$/.exec(name || '');
  return m ? m[1] : '';
}

// A key as a range: {lo, hi, open}, hi Infinity for "N+"; null if it is no range.
export function parseKey(key) {
  let m = RANGE.exec(key);
  if (m) {
    const lo = Number(m[1]);
    const hi = Number(m[2]);
    return hi > lo ? { lo, hi, open: false } : null;
  }
  m = OPEN.exec(key);
  return m ? { lo: Number(m[1]), hi: Infinity, open: true } : null;
}

// The heat map kind of a dataset ("latency", "size", "offset", "utilization"), or null to
// draw it as lines: the drilldown must be one of those and every key a range (none yet
// counts: a new dataset is a heat map before its first second).
export function heatKind(name, keys = []) {
  const drill = drilldownOf(name);
  const kind = Object.hasOwn(ALIASES, drill) ? ALIASES[drill] : drill;
  if (!Object.hasOwn(KINDS, kind)) return null;
  return keys.every((k) => parseKey(k) !== null) ? kind : null;
}

// The keys as rows of the heat map, lowest range first: {key, lo, hi, open, y0, y1},
// y0 and y1 the row's bottom and top in axis units.
export function rows(kind, keys) {
  const k = KINDS[kind];
  const out = [];
  for (const key of keys) {
    const r = parseKey(key);
    if (!r) continue;
    let y0 = r.lo;
    let y1 = r.hi;
    if (k.log) {
      y1 = r.open ? Math.log2(r.lo) + k.edge : Math.log2(r.hi);
      y0 = r.lo > 0 ? Math.log2(r.lo) : y1 - k.edge;
    } else if (r.open) y1 = r.lo + 1;
    out.push({ key, ...r, y0, y1 });
  }
  return out.sort((a, b) => a.y0 - b.y0);
}

// The y axis' [min, max] in axis units: the whole scale where it has one (offset,
// utilization), else the rows' extent in whole powers of two, at least k.span of them.
export function yRange(kind, list) {
  const k = KINDS[kind];
  if (k.fixed) return k.fixed.slice();
  if (!list.length) return k.fallback.slice();
  let lo = Math.floor(Math.min(...list.map((r) => r.y0)));
  let hi = Math.ceil(Math.max(...list.map((r) => r.y1)));
  const short = k.span - (hi - lo);
  if (short > 0) {
    lo -= Math.floor(short / 2);
    hi += Math.ceil(short / 2);
  }
  return [lo, hi];
}

// Tick positions (axis units) between min and max, at most `count` of them: round numbers
// of the unit (1, 2, 5 x 10^n ns; powers of 2 bytes; quarters of the linear scales).
export function ticks(kind, min, max, count) {
  const k = KINDS[kind];
  count = Math.max(2, count);
  if (!k.log) {
    for (const parts of [4, 2, 1]) {
      if (parts + 1 > count) continue;
      const step = (k.fixed[1] - k.fixed[0]) / parts;
      const out = [];
      for (let v = k.fixed[0]; v <= k.fixed[1] + 1e-9; v += step) if (v >= min - 1e-9 && v <= max + 1e-9) out.push(v);
      return out;
    }
    return [min, max];
  }
  if (kind === 'size') {
    const all = [];
    for (let e = Math.ceil(min); e <= Math.floor(max); e++) all.push(e);
    const every = Math.ceil(all.length / count);
    return all.filter((e) => e % every === 0);
  }
  // latency: decimal round numbers of nanoseconds, as finely as there is room for
  const lo = 2 ** min;
  const hi = 2 ** max;
  const decades = (mults, every = 1) => {
    const out = [];
    for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
      if (p % every) continue;
      for (const m of mults) {
        const v = m * 10 ** p;
        if (v >= lo && v <= hi) out.push(Math.log2(v));
      }
    }
    return out;
  };
  for (const mults of [[1, 2, 5], [1, 3], [1]]) {
    const t = decades(mults);
    if (t.length <= count) return t;
  }
  for (let every = 2; ; every++) {
    const t = decades([1], every);
    if (t.length <= count) return t;
  }
}

// Axis-units value -> text of the unit ("10 µs", "4 KiB", "25 %").
export function axisText(kind, y) {
  const k = KINDS[kind];
  // 2 ** log2(1e6) is 999999.99...: the round number the tick was chosen as
  return k.text(k.log ? Number((2 ** y).toPrecision(9)) : y);
}

// The row at axis-units y, or null; a row's top edge counts as in it (the cursor at the
// very top of the plot reads the top of the scale).
export function rowAt(list, y) {
  return list.find((r) => y >= r.y0 && y < r.y1) || list.find((r) => y === r.y1) || null;
}

// A bucket's range as the user reads it: "32.8 µs – 41 µs", "≥ 68.7 s", "8 KiB – 16 KiB",
// "25 % – 26.6 % of the device", "95 % – 100 % busy".
export function rangeText(kind, r) {
  const k = KINDS[kind];
  const of = k.of || '';
  if (r.open) return `≥${NBSP}${k.text(r.lo)}${of}`;
  return `${k.text(r.lo)} – ${k.text(r.hi)}${of}`;
}

// What the value counts, short: "ops/s" for operations per second, the CPUs or the disks
// of a utilization heat map (its dataset's unit is the total's, a percent for the CPUs).
export function valueNoun(name, unit) {
  if (drilldownOf(name) === 'utilization') {
    if (/^cpu\./.test(name)) return 'CPUs';
    return unit === 'percent' ? '' : unit;
  }
  if (unit === 'operations per second') return 'ops/s';
  const m = /^(.*) per second$/.exec(unit || '');
  return m ? `${m[1]}/s` : unit || '';
}

// Three significant digits at most, trailing zeros dropped: 32.768 -> "32.8", 41 -> "41".
function sig(v) {
  return String(Number(v.toPrecision(3)));
}

// Nanoseconds in the unit that suits them: "512 ns", "32.8 µs", "4.19 ms", "1.07 s".
export function nsText(v) {
  if (v < 1e3) return `${sig(v)}${NBSP}ns`;
  if (v < 1e6) return `${sig(v / 1e3)}${NBSP}µs`;
  if (v < 1e9) return `${sig(v / 1e6)}${NBSP}ms`;
  return `${sig(v / 1e9)}${NBSP}s`;
}

// Bytes in binary units, whole where they are: "512 B", "8 KiB", "1.5 MiB".
export function sizeText(v) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${sig(v)}${NBSP}${units[i]}`;
}
