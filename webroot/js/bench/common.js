// SPDX-License-Identifier: ISC
// What the benchmark pages share: job figures read the same way everywhere, the progress
// stream, and the latency histogram's bins regrouped for a chart.

import { get, request, seg } from '../api.js';
import { bytes, h, ms, num, pct } from '../dom.js';
import { colour } from '../chart.js';

export const BASE = '/api/bench/v1';
export const STATES = ['queued', 'running', 'done', 'failed', 'cancelled', 'interrupted'];
export const LIVE = new Set(['queued', 'running']);
export const DIRS = ['read', 'write'];

export const jobPath = (id) => `${BASE}/jobs/${seg(id)}`;

// Nanoseconds as the console's latency text (ms/µs).
export function nsText(ns) {
  return ns === null || ns === undefined ? '–' : ms(ns / 1e6);
}

export function stateBadge(state) {
  return h('span', { class: ['badge', `state-${state}`], text: state });
}

// "#3 recordsize=8k" (or the name when there is no label).
export function jobTitle(job) {
  const what = job.label || job.name || '';
  return what ? `#${job.id} ${what}` : `#${job.id}`;
}

// Seconds from start to end (or to now while it runs); null before it starts.
export function jobSeconds(job, now = Date.now()) {
  if (!job.started) return null;
  const end = job.ended ? Date.parse(job.ended) : now;
  return Math.max(0, (end - Date.parse(job.started)) / 1000);
}

// The directions a result moved data in (read first); both when neither did.
export function activeDirs(result) {
  const d = DIRS.filter((k) => result && result[k] && result[k].ops > 0);
  return d.length ? d : DIRS.filter((k) => result && result[k]);
}

// The worst p99 over the directions that did I/O, in ns (null without a result).
export function worstP99(result) {
  if (!result) return null;
  const v = activeDirs(result).map((d) => result[d].latency_ns && result[d].latency_ns.p99);
  const nums = v.filter((x) => typeof x === 'number');
  return nums.length ? Math.max(...nums) : null;
}

// Results of finished runs never change: kept for the session's page views.
const results = new Map();
export async function result(id, signal) {
  if (results.has(id)) return results.get(id);
  const doc = await get(`${jobPath(id)}/result`, { signal });
  results.set(id, doc.result);
  return doc.result;
}

// The job's interval lines: the recorded ones, then (while it runs) each as it comes.
// onLine gets every parsed line ({type: 'interval' | 'end', ...}); resolves when the
// stream ends. NDJSON through fetch(), so the session header goes with it.
export async function progress(id, onLine, signal) {
  const res = await request('GET', `${jobPath(id)}/progress`, {
    headers: { Accept: 'application/x-ndjson' },
    signal,
  });
  if (!res.ok) {
    let details = `HTTP ${res.status}`;
    try {
      details = (await res.json()).fault.details || details;
    } catch {
      /* the status says enough */
    }
    throw Object.assign(new Error(details), { status: res.status, details });
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const take = (line) => {
    const t = line.trim();
    if (!t) return; // a keep-alive
    let o;
    try {
      o = JSON.parse(t);
    } catch {
      return;
    }
    onLine(o);
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      take(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  }
  take(buf + dec.decode());
}

// An interval line's point: seconds since the worker started, IOPS and p99 (ms) per
// direction.
export function intervalPoint(o) {
  const d = (k) => o[k] || {};
  const p99 = (k) => (d(k).ops > 0 ? d(k).lat_p99_ns / 1e6 : null);
  return {
    t: o.t_s,
    readIops: d('read').iops || 0,
    writeIops: d('write').iops || 0,
    iops: (d('read').iops || 0) + (d('write').iops || 0),
    readP99: p99('read'),
    writeP99: p99('write'),
    phase: o.phase,
    pass: o.pass,
  };
}

// The histogram's kept bins (log-linear: 128 linear steps per power of two, see
// server/worker/hist.h) regrouped into `per` bars per power of two, so a chart has tens of
// bars, not thousands. Returns [{lo, hi, count}] in ns, empty groups inside the range kept.
const SUB_BITS = 7;
const SUB = 1 << SUB_BITS;
function binLow(idx) {
  if (idx < SUB) return idx;
  const shift = Math.floor((idx - SUB) / SUB);
  return (SUB + ((idx - SUB) % SUB)) * 2 ** shift;
}

export function histGroups(hist, per = 4) {
  if (!hist || !Array.isArray(hist.bins) || hist.bins.length < 2) return [];
  // group k covers [2^(k/per) ... 2^((k+1)/per)) of the bin's lower bound
  const groups = new Map();
  for (let i = 0; i + 1 < hist.bins.length; i += 2) {
    const lo = Math.max(1, binLow(hist.bins[i]));
    const k = Math.floor(Math.log2(lo) * per + 1e-9);
    groups.set(k, (groups.get(k) || 0) + hist.bins[i + 1]);
  }
  const keys = [...groups.keys()];
  const min = Math.min(...keys);
  const max = Math.max(...keys);
  const out = [];
  for (let k = min; k <= max; k++)
    out.push({ lo: 2 ** (k / per), hi: 2 ** ((k + 1) / per), count: groups.get(k) || 0 });
  return out;
}

export const PCTS = ['p1', 'p5', 'p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99', 'p99.5', 'p99.9', 'p99.95', 'p99.99'];

// A section with a heading that names it (landmark for screen readers).
export function section(id, title, ...children) {
  return h('section', { class: 'bench-section', 'aria-labelledby': id }, h('h2', { id, text: title }), ...children);
}

// A chart's box: a figure with a caption, labelled for assistive technology (the numbers
// are in a table beside it as well).
export function chartBox(caption, cls) {
  const plot = h('div', { class: ['chart-plot', cls] });
  const fig = h('figure', { class: 'chart bench-chart' }, h('figcaption', { text: caption }), plot);
  return { fig, plot };
}

export function loadJob(id, signal) {
  return get(jobPath(id), { signal }).then((d) => d.job);
}

// A legend for a chart: uPlot's own is hidden in the console's stylesheet.
export function legend(labels) {
  return h(
    'ul',
    { class: 'bench-legend' },
    labels.map((l, i) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.setProperty('--swatch', colour(i));
      return h('li', {}, sw, l);
    }),
  );
}


// ---- findings and the environment

// A finding's value with its unit: "16.0x", "75.0 %", "81.8 µs", "device".
export function findingValue(f) {
  const v = f.value;
  if (typeof v !== 'number') return String(v);
  if (f.unit === '%') return pct(v);
  if (f.unit === 'x') return `${num(v)}x`;
  if (f.unit) return `${num(v)}\u00a0${f.unit}`;
  return num(v);
}

// The findings of a run: title, value and sentence; flagged ones marked in words as well
// as by colour, the rule and the inputs one click away.
export function findingsList(findings) {
  if (!Array.isArray(findings) || !findings.length) return h('p', { class: 'muted', id: 'bench-no-findings', text: 'No findings: their inputs were not measured.' });
  return h(
    'ul',
    { class: 'bench-findings', id: 'bench-findings' },
    findings.map((f) =>
      h(
        'li',
        { class: ['bench-finding', f.flag ? 'flagged' : null], dataset: { finding: f.id, flag: String(f.flag) } },
        h(
          'div',
          { class: 'bench-finding-head' },
          h('span', { class: 'bench-finding-title', text: f.title }),
          h('span', { class: 'bench-finding-value', text: findingValue(f) }),
          f.flag ? h('span', { class: 'badge bench-flag', text: 'worth a look' }) : null,
        ),
        h('p', { class: 'bench-finding-text', text: f.text }),
        h(
          'details',
          { class: 'bench-finding-how' },
          h('summary', { text: 'How it was found' }),
          h('p', { text: `Rule: ${f.rule}.` }),
          h(
            'dl',
            { class: 'bench-facts' },
            Object.entries(f.inputs || {}).map(([k, v]) => h('div', {}, h('dt', { text: k.replaceAll('_', ' ') }), h('dd', { text: typeof v === 'number' ? String(v) : v }))),
          ),
        ),
      ),
    ),
  );
}

function join(parts, sep = ', ') {
  return parts.filter((x) => x !== null && x !== undefined && x !== '').join(sep);
}

// The environment a run's target sat on, as facts of a few lines: the filesystem, the
// device stack, ZFS, the system. Only what was recorded.
export function environmentRows(env) {
  if (!env || typeof env !== 'object') return [];
  const rows = [];
  if (env.target) rows.push(['Target', join([env.target.path, env.target.kind && env.target.kind.replace('_', ' ')], ', ')]);
  const fs = env.filesystem;
  if (fs) rows.push(['Filesystem', join([join([fs.type, fs.source && `on ${fs.source}`, fs.mount_point && `at ${fs.mount_point}`], ' '), fs.block_size && `block ${bytes(fs.block_size)}`, fs.options && `options ${fs.options}`])]);
  if (Array.isArray(env.devices) && env.devices.length)
    rows.push([
      'Devices',
      join(
        env.devices.map((d) =>
          join([d.name, join([d.kind, d.level, d.dm_name, d.model, d.rotational === true ? 'rotational' : d.rotational === false ? 'solid state' : null, d.scheduler && `scheduler ${d.scheduler}`, d.write_cache && `cache ${d.write_cache}`], ', ')], ' '),
        ),
        ' → ',
      ),
    ]);
  const z = env.zfs;
  if (z) {
    const keys = ['primarycache', 'secondarycache', 'compression', 'atime', 'sync', 'logbias'];
    rows.push(['ZFS', join([z.dataset, z.recordsize && `recordsize ${bytes(z.recordsize, 0)}`, ...keys.map((k) => z[k] && `${k} ${z[k]}`), z.arc_max_bytes && `ARC max ${bytes(z.arc_max_bytes)}`])]);
    if (Array.isArray(z.vdevs) && z.vdevs.length) rows.push(['Pool', join([z.pool, ...z.vdevs.map((v) => join([v.type, ...(v.devices || [])], ' '))])]);
    if (z.why) rows.push(['ZFS not read', z.why]);
  }
  const s = env.system;
  if (s) rows.push(['System', join([s.kernel, s.cpu_model && `${s.cpu_model}${s.cpus ? ` × ${s.cpus}` : ''}`, !s.cpu_model && s.cpus ? `${s.cpus} CPUs` : null, s.memory_bytes && bytes(s.memory_bytes), s.worker_version || s.spindle_version])]);
  return rows;
}
