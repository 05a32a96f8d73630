// SPDX-License-Identifier: ISC
// A dataset's samples as chart series: the answer of .../data laid on a regular time grid
// (gaps as nulls, so a line breaks where nothing was sampled), the top N keys plus
// "other", each series' figures for the legend, and the CSV export. Pure functions: no
// DOM, no requests.

// The data answer (asked with meta=true) -> {xs, step, keys: [{key, values}], sampled}.
// The grid runs from the window's first sample index (meta.sample) to `end` (epoch
// seconds, exclusive) in steps of meta.sample_seconds. sampled[i]: the point has a sample
// with a value (a drilldown's missing key there is a zero, as a heat map's empty bucket).
// A dataset without a drilldown has one series, named `name`, from each sample's value.
// Asked with top= or keys=, the answer shows some keys (meta.keys, each a series even
// where it has no value) and sums the rest in each sample's "other": then `other` is that
// column and `others` how many keys it sums; else both are null.
export function shape(resp, end, name, drilled) {
  const step = Math.max(1, resp.meta.sample_seconds || 1);
  const t0 = resp.meta.sample;
  const n = Math.max(1, Math.ceil((end - t0) / step));
  const xs = new Array(n);
  for (let i = 0; i < n; i++) xs[i] = t0 + i * step;
  let samples = resp.data;
  if (!Array.isArray(samples)) samples = samples ? [samples] : [];
  const sampled = new Array(n).fill(false);
  const byKey = new Map();
  const column = (key) => {
    let c = byKey.get(key);
    if (!c) {
      c = new Array(n).fill(null);
      byKey.set(key, c);
    }
    return c;
  };
  if (!drilled) column(name);
  const chosen = drilled && Array.isArray(resp.meta.keys) ? resp.meta.keys : null;
  if (chosen) for (const k of chosen) column(k);
  const other = chosen ? new Array(n).fill(null) : null;
  for (const s of samples) {
    const i = Math.round((s.sample - t0) / step);
    if (i < 0 || i >= n || !s.data) continue;
    sampled[i] = s.data.value !== null && s.data.value !== undefined;
    if (!drilled) {
      byKey.get(name)[i] = s.data.value;
      continue;
    }
    for (const kv of s.data.data || []) column(kv.key)[i] = kv.value;
    if (other && typeof s.data.other === 'number') other[i] = s.data.other;
  }
  const others = other ? resp.meta.other_keys ?? null : null;
  return { xs, step, keys: [...byKey].map(([key, values]) => ({ key, values })), sampled, other, others };
}

// The samples of a window, from a first answer and the ones asked since for its newest
// part: `old` samples before `from`, from the window's start `start` on, then `fresh`
// (which start at `from`). Both as .../data answers them (a list, a sample or null).
export function mergeSamples(old, fresh, start, from) {
  const list = (x) => (Array.isArray(x) ? x : x ? [x] : []);
  return [...list(old).filter((s) => s.sample >= start && s.sample < from), ...list(fresh)];
}

// Current (newest value), min, max and mean of a series; nulls left out.
export function stats(values) {
  let cur = null;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let count = 0;
  for (const v of values) {
    if (v === null || v === undefined) continue;
    cur = v;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    count++;
  }
  return count ? { cur, min, max, avg: sum / count } : { cur: null, min: null, max: null, avg: null };
}

export const OTHER = 'other';

// The series to draw: `only` (the worksheet's chosen keys) if given, else the top n by
// mean, largest first, and "other" (the sum of the rest, where any of them has a value).
// n of 0 or less: every key. Each series: {key, values, stats, other}.
export function collapse(keys, n, only = []) {
  const withStats = keys.map((k) => ({ ...k, stats: stats(k.values), other: false }));
  if (only && only.length) {
    const len = keys.length ? keys[0].values.length : 0;
    return only.map(
      (key) => withStats.find((k) => k.key === key) || { key, values: new Array(len).fill(null), stats: stats([]), other: false },
    );
  }
  withStats.sort((a, b) => (b.stats.avg ?? -Infinity) - (a.stats.avg ?? -Infinity));
  if (n <= 0 || withStats.length <= n + 1) return withStats;
  // n keys and "other" in place of the rest: never one key folded into "other" alone
  const top = withStats.slice(0, n);
  const rest = withStats.slice(n);
  const len = rest[0].values.length;
  const sum = new Array(len).fill(null);
  for (const r of rest) {
    for (let i = 0; i < len; i++) {
      const v = r.values[i];
      if (v !== null && v !== undefined) sum[i] = (sum[i] ?? 0) + v;
    }
  }
  for (let i = 0; i < len; i++) if (sum[i] !== null) sum[i] = Math.round(sum[i] * 1000) / 1000;
  top.push({ key: OTHER, values: sum, stats: stats(sum), other: true, count: rest.length });
  return top;
}

function csvCell(s) {
  const t = String(s);
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

// time (ISO 8601 UTC) and one column per series; empty cells where nothing was sampled.
export function csv(xs, series) {
  const lines = [['time', ...series.map((s) => s.key)].map(csvCell).join(',')];
  for (let i = 0; i < xs.length; i++) {
    const row = [new Date(xs[i] * 1000).toISOString().replace('.000Z', 'Z')];
    for (const s of series) {
      const v = s.values[i];
      row.push(v === null || v === undefined ? '' : String(v));
    }
    lines.push(row.join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}
