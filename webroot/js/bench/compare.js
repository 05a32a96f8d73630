// SPDX-License-Identifier: ISC
// #/bench/compare?ids=a,b,...&baseline=a: finished runs side by side. The server's
// comparison gives each figure's values and the difference to the baseline in percent;
// here each difference says better or worse by colour and by an arrow and a word. Below,
// the runs' latency percentiles and IOPS per second overlaid. Above the table: what changed
// between the runs (spec and environment) and whether each run's IOPS differ from the
// baseline's beyond the noise; below it, each run's findings side by side.

import { get, qs } from '../api.js';
import { bytes, field, h, num, pct } from '../dom.js';
import { chart } from '../chart.js';
import { go } from '../app.js';
import { BASE, PCTS, activeDirs, chartBox, findingValue, intervalPoint, jobTitle, legend, nsText, progress, result, section } from './common.js';

// Higher is better for rates; lower for latency, CPU time and load.
const HIGHER = new Set(['operations per second', 'bytes per second']);
const LOWER_PATHS = new Set(['device.busy_pct']);

const NAMES = {
  'summary.iops': 'IOPS (read + write)',
  'cpu.user_s': 'Worker CPU user',
  'cpu.system_s': 'Worker CPU system',
  'device.ops_per_s': 'Disk IOPS',
  'device.busy_pct': 'Disk busy',
  'box_cpu.user_pct': 'Box CPU user',
  'box_cpu.system_pct': 'Box CPU system',
};

function figureName(path) {
  if (NAMES[path]) return NAMES[path];
  const m = /^(read|write)\.(iops|bytes_per_s|latency_ns\.(.+))$/.exec(path);
  if (m) {
    const dir = m[1][0].toUpperCase() + m[1].slice(1);
    if (m[2] === 'iops') return `${dir} IOPS`;
    if (m[2] === 'bytes_per_s') return `${dir} throughput`;
    return `${dir} latency ${m[3]}`;
  }
  const z = /^iozone\.(.+)$/.exec(path);
  if (z) return `iozone ${z[1].replace('_', ' ')}`;
  return path;
}

function valueText(unit, v) {
  if (v === null || v === undefined) return '–';
  if (unit === 'operations per second') return num(v);
  if (unit === 'bytes per second') return `${bytes(v)}/s`;
  if (unit === 'nanoseconds') return nsText(v);
  if (unit === 'seconds') return `${v.toFixed(2)} s`;
  if (unit === 'percent') return pct(v);
  return num(v);
}

// The difference to the baseline: sign, arrow and a word, coloured better or worse.
function diffEl(fig, d) {
  if (d === null || d === undefined) return h('span', { class: 'diff', text: '–' });
  const higherBetter = HIGHER.has(fig.unit) && !LOWER_PATHS.has(fig.name);
  if (Math.abs(d) < 0.05) return h('span', { class: 'diff same' }, '= 0.0 %', h('span', { class: 'visually-hidden', text: ' (the same)' }));
  const better = d > 0 === higherBetter;
  const sign = d > 0 ? '+' : '−';
  const arrow = d > 0 ? '▲' : '▼';
  return h(
    'span',
    { class: ['diff', better ? 'better' : 'worse'], dataset: { diff: String(d) }, title: better ? 'better than the baseline' : 'worse than the baseline' },
    h('span', { 'aria-hidden': 'true', text: `${arrow} ` }),
    `${sign}${Math.abs(d).toFixed(1)}\u00a0%`,
    h('span', { class: 'visually-hidden', text: better ? ' (better)' : ' (worse)' }),
  );
}

function table(cmp) {
  const { jobs, figures, baseline } = cmp;
  // a direction no run did (the writes of reads-only runs) says nothing: left out
  const direction = (f) => /^(read|write)\./.test(f.name);
  const shown = figures.filter((f) => f.values.some((v) => v !== null && v !== undefined && !(direction(f) && v === 0)));
  const head = (j) => h('th', { scope: 'col', class: 'num' }, h('a', { href: `#/bench/jobs/${j.id}`, text: jobTitle(j) }), j.id === baseline ? h('span', { class: 'badge bench-base', text: 'baseline' }) : null);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'stack bench-compare', id: 'bench-compare-table' },
      h('caption', { class: 'visually-hidden', text: `Runs side by side; differences in percent to run #${baseline}` }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Figure' }), jobs.map(head))),
      h(
        'tbody',
        {},
        shown.map((f) =>
          h(
            'tr',
            { dataset: { figure: f.name } },
            h('th', { scope: 'row', text: figureName(f.name) }),
            jobs.map((j, i) => h('td', { class: 'num', 'data-label': jobTitle(j) }, h('span', { class: 'cell' }, h('span', { class: 'value', text: valueText(f.unit, f.values[i]) }), j.id === baseline ? null : diffEl(f, f.diff_pct[i])))),
          ),
        ),
      ),
    ),
  );
}

// What changed, in a line, and a note per run on its IOPS against the baseline's noise.
function explain(cmp) {
  const d = cmp.differences;
  const title = new Map(cmp.jobs.map((j) => [j.id, jobTitle(j)]));
  const notes = cmp.significance || [];
  return h(
    'div',
    { class: 'bench-explain' },
    d
      ? h('p', { class: 'bench-differences', id: 'bench-differences' }, h('strong', { text: 'What changed: ' }), d.text || 'nothing in the spec or the environment but the names.')
      : null,
    notes.length
      ? h(
          'ul',
          { class: 'bench-significance', id: 'bench-significance' },
          notes.map((n) =>
            h(
              'li',
              { class: n.beyond_noise === true ? 'beyond' : n.beyond_noise === false ? 'within' : 'unknown', dataset: { job: String(n.job), beyond: String(n.beyond_noise) } },
              h('strong', { text: `${title.get(n.job) || `#${n.job}`}: ` }),
              n.summary || n.text,
              n.summary && n.text ? h('details', { class: 'bench-stats' }, h('summary', { text: 'The statistics' }), h('p', { text: n.text })) : null,
            ),
          ),
        )
      : null,
  );
}

// Each run's findings side by side: a row per finding, flagged values marked.
function findingsTable(cmp) {
  const per = cmp.findings || [];
  const ids = [];
  const titles = new Map();
  for (const list of per)
    for (const f of list || []) {
      if (!titles.has(f.id)) ids.push(f.id);
      titles.set(f.id, f.title);
    }
  if (!ids.length) return h('p', { class: 'muted', text: 'No findings: their inputs were not measured.' });
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'stack bench-compare bench-cmp-findings', id: 'bench-cmp-findings' },
      h('caption', { class: 'visually-hidden', text: 'Each run’s findings' }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Finding' }), cmp.jobs.map((j) => h('th', { scope: 'col', class: 'num', text: jobTitle(j) })))),
      h(
        'tbody',
        {},
        ids.map((id) =>
          h(
            'tr',
            { dataset: { finding: id } },
            h('th', { scope: 'row', text: titles.get(id) }),
            cmp.jobs.map((j, i) => {
              const f = (per[i] || []).find((x) => x.id === id);
              if (!f) return h('td', { class: 'num', 'data-label': jobTitle(j), text: '–' });
              return h(
                'td',
                { class: ['num', f.flag ? 'flagged' : null], 'data-label': jobTitle(j), title: f.text },
                h('span', { class: 'value', text: findingValue(f) }),
                f.flag ? h('span', { class: 'bench-flag-mark', 'aria-hidden': 'true', text: ' ⚑' }) : null,
                f.flag ? h('span', { class: 'visually-hidden', text: ' (worth a look)' }) : null,
              );
            }),
          ),
        ),
      ),
    ),
  );
}

export async function render(main, ctx) {
  const ids = (ctx.query.get('ids') || '').split(',').filter((x) => /^\d+$/.test(x));
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/bench', text: 'Benchmarks' })), h('h1', { text: 'Compare runs' }));
  if (ids.length < 2) {
    main.append(h('p', { class: 'muted', text: 'Pick two or more finished runs in the run list to compare them.' }), h('p', {}, h('a', { href: '#/bench', text: 'Back to the runs' })));
    ctx.ready();
    return;
  }
  const baseline = ctx.query.get('baseline') || ids[0];
  let cmp;
  try {
    cmp = (await get(`${BASE}/compare${qs({ jobs: ids.join(','), baseline })}`, { signal: ctx.signal })).comparison;
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    main.append(h('p', { class: 'error', role: 'alert', text: `Cannot compare these runs: ${e.details || e.message}` }), h('p', {}, h('a', { href: '#/bench', text: 'Back to the runs' })));
    ctx.ready();
    return;
  }
  const { jobs } = cmp;
  const base = field(
    'bench-baseline',
    'Baseline',
    h('select', {}, jobs.map((j) => h('option', { value: String(j.id), text: jobTitle(j), selected: j.id === cmp.baseline }))),
    'the run the others are measured against',
  );
  base.input.addEventListener('change', () => go(`bench/compare?ids=${ids.join(',')}&baseline=${base.input.value}`));

  const lat = chartBox('Latency percentiles (log scale), the busier direction of each run', 'bench-cmp-lat');
  const iops = chartBox('IOPS per second', 'bench-cmp-iops');
  const labels = jobs.map((j) => jobTitle(j));
  lat.fig.append(legend(labels));
  iops.fig.append(legend(labels));

  main.append(
    h('div', { class: 'bench-filters' }, base.wrap),
    explain(cmp),
    table(cmp),
    section('bench-cmp-findings-title', 'Findings', findingsTable(cmp)),
    section('bench-cmp-charts', 'Overlaid', h('div', { class: 'bench-charts' }, lat.fig, iops.fig)),
  );
  ctx.ready();

  // latency: each run's percentiles of its busier direction
  const results = await Promise.all(jobs.map((j) => result(j.id, ctx.signal).catch(() => null)));
  const busier = (r) => {
    const d = activeDirs(r);
    return d.length > 1 && r.write.ops > r.read.ops ? 'write' : d[0];
  };
  // on a log scale (log10 of ms, labelled in ms): the tail is orders above the median
  const logMs = (ns) => (ns > 0 ? Math.log10(ns / 1e6) : null);
  const msText = (v) => {
    const x = 10 ** v;
    const us = x * 1000;
    if (x < 1) return `${us >= 10 ? Math.round(us) : us.toFixed(1)}µs`;
    if (x >= 1000) return `${num(x / 1000)}s`;
    return `${x >= 10 ? Math.round(x) : x.toFixed(1)}ms`;
  };
  const lc = chart(lat.plot, {
    time: false,
    height: 240,
    xFormat: (v) => PCTS[Math.round(v)] || '',
    yFormat: msText,
    series: jobs.map((j, i) => ({ label: `${labels[i]} ${results[i] ? busier(results[i]) : ''}` })),
  });
  ctx.cleanup(() => lc.destroy());
  lc.setData([PCTS.map((p, i) => i), ...results.map((r) => PCTS.map((p) => (r ? logMs(r[busier(r)].latency_ns[p]) : null)))]);
  lat.fig.dataset.series = String(results.filter(Boolean).length);

  // IOPS per second: each run's recorded intervals, on seconds since its worker started
  const perJob = await Promise.all(
    jobs.map(async (j) => {
      const m = new Map();
      try {
        await progress(j.id, (o) => {
          if (o.type === 'interval') {
            const p = intervalPoint(o);
            m.set(Math.round(p.t), p.iops);
          }
        }, ctx.signal);
      } catch (e) {
        if (e.name === 'AbortError') throw e;
      }
      return m;
    }),
  );
  const xs = [...new Set(perJob.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  const ic = chart(iops.plot, { time: false, height: 240, xFormat: (v) => `${num(v)} s`, series: labels.map((l) => ({ label: l })) });
  ctx.cleanup(() => ic.destroy());
  ic.setData([xs, ...perJob.map((m) => xs.map((x) => (m.has(x) ? m.get(x) : null)))]);
  iops.fig.dataset.points = String(xs.length);
}
