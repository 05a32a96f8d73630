// SPDX-License-Identifier: ISC
// #/bench/sweeps: the sweeps, newest first; #/bench/sweeps/<id>: one sweep's table (a row
// per combination of its axes, with the run's state, IOPS and p99), the knee of its threads
// axis per group of the other axes' values, IOPS and p99 charted against that axis with the
// knee marked, a link comparing its finished runs, and Cancel while it runs. Both refresh
// while a sweep is live. (#/bench/sweeps/new, the form, is bench/form.js.)

import { can, del, get, seg } from '../api.js';
import { append, clear, h, num, timeEl, toast } from '../dom.js';
import { chart, colour } from '../chart.js';
import { BASE, chartBox, legend, nsText, stateBadge } from './common.js';

const REFRESH_MS = 3000;
const LIVE = new Set(['queued', 'running']);

const valueText = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
const sweepTitle = (s) => `Sweep #${s.id} ${s.label || s.name}`;

export async function render(main, ctx) {
  if (ctx.parts.length > 1) await one(main, ctx, ctx.parts[1]);
  else await list(main, ctx);
}

// Calls load now and again while live() says so, until the page goes.
function refresh(ctx, load, live) {
  let timer = 0;
  const run = async () => {
    clearTimeout(timer);
    await load();
    if (!ctx.signal.aborted && live()) timer = setTimeout(run, REFRESH_MS);
  };
  ctx.cleanup(() => clearTimeout(timer));
  return run;
}

async function list(main, ctx) {
  const tbody = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true, id: 'sweeps-empty', text: can('bench:run') ? 'No sweeps yet: make one with New sweep, or POST one to /api/bench/v1/sweeps (README: Benchmarks).' : 'No sweeps yet.' });
  const error = h('p', { class: 'error', role: 'alert' });
  main.append(
    h('p', {}, h('a', { href: '#/bench', text: 'Benchmarks' })),
    h('div', { class: 'toolbar' }, h('h1', { text: 'Sweeps' }), h('span', { class: 'spacer' }), can('bench:run') ? h('a', { class: 'button primary', href: '#/bench/sweeps/new', id: 'sweep-new', text: 'New sweep' }) : null),
    h('p', { class: 'hint', text: 'A sweep runs one spec over a matrix of values, each combination a run of its own, and finds the knee of its thread counts.' }),
    error,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'stack', id: 'sweeps' },
        h('caption', { class: 'visually-hidden', text: 'Sweeps, newest first' }),
        h('thead', {}, h('tr', {}, ['Sweep', 'Label', 'Axes', 'State', 'Runs done', 'Created'].map((t) => h('th', { scope: 'col', text: t })))),
        tbody,
      ),
    ),
    empty,
  );
  let sweeps = [];
  const load = async () => {
    try {
      sweeps = (await get(`${BASE}/sweeps`, { signal: ctx.signal })).sweeps;
      error.textContent = '';
    } catch (e) {
      if (e.name === 'AbortError' || ctx.signal.aborted) return;
      error.textContent = `Cannot list the sweeps: ${e.details || e.message}`;
      return;
    }
    clear(tbody);
    for (const s of sweeps) {
      tbody.append(
        h(
          'tr',
          { dataset: { id: String(s.id), state: s.state } },
          h('td', { 'data-label': 'Sweep' }, h('a', { href: `#/bench/sweeps/${s.id}`, text: `#${s.id} ${s.name}` })),
          h('td', { 'data-label': 'Label', text: s.label || '–' }),
          h('td', { 'data-label': 'Axes', text: Object.entries(s.axes).map(([k, v]) => `${k} × ${v.length}`).join(', ') }),
          h('td', { 'data-label': 'State' }, stateBadge(s.state)),
          h('td', { 'data-label': 'Runs done', text: `${s.counts.done} of ${s.runs}` }),
          h('td', { 'data-label': 'Created' }, timeEl(s.ctime)),
        ),
      );
    }
    empty.hidden = sweeps.length > 0;
  };
  await refresh(ctx, load, () => sweeps.some((s) => LIVE.has(s.state)))();
  ctx.ready();
}

async function one(main, ctx, id) {
  const path = `${BASE}/sweeps/${seg(id)}`;
  const head = h('div');
  const knees = h('ul', { class: 'sweep-knees', id: 'sweep-knees' });
  const tableWrap = h('div', { class: 'table-wrap' });
  const error = h('p', { class: 'error', role: 'alert' });
  const charts = sweepCharts(ctx);
  main.append(h('p', {}, h('a', { href: '#/bench/sweeps', text: 'Sweeps' })), head, error, h('h2', { text: 'The knee' }), knees, charts.el, h('h2', { text: 'Runs' }), tableWrap);

  let sweep = null;
  const cancel = can('bench:run')
    ? h('button', {
        type: 'button',
        id: 'sweep-cancel',
        text: 'Cancel sweep',
        on: {
          click: async () => {
            if (!window.confirm(`Cancel sweep #${sweep.id}? Its queued runs are dropped and the running one stops; what they did is kept.`)) return;
            cancel.disabled = true;
            try {
              await del(path, { signal: ctx.signal });
              toast(`Sweep #${sweep.id} is being cancelled.`);
              run();
            } catch (err) {
              if (err.name !== 'AbortError') toast(`Cannot cancel: ${err.details || err.message}`, 'error');
              cancel.disabled = false;
            }
          },
        },
      })
    : null;

  const draw = () => {
    const axes = Object.keys(sweep.axes);
    clear(head);
    head.append(
      h('div', { class: 'toolbar' }, h('h1', {}, sweepTitle(sweep), ' ', stateBadge(sweep.state)), h('span', { class: 'spacer' }), LIVE.has(sweep.state) ? cancel : null),
      h('p', { class: 'muted', text: `Owner ${sweep.owner} · created ` }, timeEl(sweep.ctime), ` · ${sweep.counts.done} of ${sweep.runs} runs done`),
      h('p', { text: `Axes: ${axes.map((a) => `${a} ${sweep.axes[a].map(valueText).join(', ')}`).join(' × ')}` }),
    );
    clear(knees);
    for (const k of sweep.knee) {
      const group = Object.entries(k.group).map(([a, v]) => `${a} ${valueText(v)}`).join(', ');
      const what = k.threads === null ? 'No knee' : `Knee at ${k.threads} ${k.axis}: ${num(k.iops)} IOPS, p99 ${nsText(k.p99_ns)}`;
      knees.append(h('li', { dataset: { threads: String(k.threads) } }, h('strong', { text: group ? `${group}: ` : '' }), `${what}. `, h('span', { class: 'muted', text: k.why })));
    }
    const done = sweep.table.filter((r) => r.state === 'done').map((r) => r.job);
    const kneeJobs = new Set(
      sweep.knee
        .filter((k) => k.threads !== null)
        .map((k) => sweep.table.find((r) => r.values && r.values[k.axis] === k.threads && Object.entries(k.group).every(([a, v]) => r.values[a] === v)))
        .filter(Boolean)
        .map((r) => r.job),
    );
    charts.draw(sweep);
    clear(tableWrap);
    append(tableWrap, [
      h(
        'table',
        { class: 'stack sweep-table', id: 'sweep-table' },
        h('caption', { class: 'visually-hidden', text: 'One run per combination of the axes; the knee is marked' }),
        h('thead', {}, h('tr', {}, axes.map((a) => h('th', { scope: 'col', text: a })), ['Run', 'State'].map((t) => h('th', { scope: 'col', text: t })), h('th', { scope: 'col', class: 'num', text: 'IOPS' }), h('th', { scope: 'col', class: 'num', text: 'p99' }))),
        h(
          'tbody',
          {},
          sweep.table.map((r) =>
            h(
              'tr',
              { class: kneeJobs.has(r.job) ? 'knee' : null, dataset: { job: String(r.job), state: r.state } },
              axes.map((a) => h('td', { 'data-label': a, text: r.values ? valueText(r.values[a]) : '–' })),
              h('td', { 'data-label': 'Run' }, h('a', { href: `#/bench/jobs/${r.job}`, text: `#${r.job}` }), kneeJobs.has(r.job) ? h('span', { class: 'badge', text: 'knee' }) : null),
              h('td', { 'data-label': 'State' }, stateBadge(r.state)),
              h('td', { class: 'num', 'data-label': 'IOPS', text: r.iops === null ? '–' : num(r.iops) }),
              h('td', { class: 'num', 'data-label': 'p99', text: nsText(r.p99_ns) }),
            ),
          ),
        ),
      ),
      done.length >= 2 ? h('p', {}, h('a', { href: `#/bench/compare?ids=${done.join(',')}&baseline=${done[0]}`, id: 'sweep-compare', text: `Compare its ${done.length} finished runs` })) : null,
    ]);
  };

  const load = async () => {
    try {
      sweep = (await get(path, { signal: ctx.signal })).sweep;
      error.textContent = '';
      draw();
    } catch (e) {
      if (e.name === 'AbortError' || ctx.signal.aborted) return;
      error.textContent = `Cannot read sweep ${id}: ${e.details || e.message}`;
    }
  };
  const run = refresh(ctx, load, () => sweep && LIVE.has(sweep.state));
  await run();
  ctx.ready();
}

// What a sweep's charts draw, from its document: the axis (the knee's: threads, readers,
// writers or sessions; else the first), its values (xs), the groups of the other axes'
// values and their labels, a group's column of a figure (null: a run not done), and a mark
// at each knee the server found ({x: the index into xs, label, colour}).
export function chartModel(sweep) {
  const axes = Object.keys(sweep.axes);
  const kneed = sweep.knee.find((k) => k.axis);
  const axis = kneed ? kneed.axis : axes[0];
  const xs = sweep.axes[axis];
  const others = axes.filter((a) => a !== axis);
  const groupOf = (values) => JSON.stringify(others.map((a) => values[a]));
  const groups = [];
  for (const r of sweep.table) if (r.values && !groups.includes(groupOf(r.values))) groups.push(groupOf(r.values));
  const groupText = (g) => JSON.parse(g).map((v, i) => `${others[i]} ${valueText(v)}`).join(', ');
  const labels = groups.length > 1 || others.length ? groups.map(groupText) : ['this sweep'];
  const column = (g, pick) =>
    xs.map((x) => {
      const r = sweep.table.find((row) => row.values && row.state === 'done' && JSON.stringify(row.values[axis]) === JSON.stringify(x) && groupOf(row.values) === g);
      return r ? pick(r) : null;
    });
  const marks = sweep.knee
    .filter((k) => k.threads !== null && k.axis === axis)
    .map((k) => {
      const i = groups.indexOf(groupOf(k.group));
      return { x: xs.findIndex((x) => x === k.threads), label: groups.length > 1 ? `knee ${labels[i]}` : `knee: ${k.threads} ${axis}`, colour: groups.length > 1 ? colour(i) : undefined };
    })
    .filter((m) => m.x >= 0);
  return { axis, xs, groups, labels, column, marks };
}

// IOPS and p99 against the knee's axis (threads, readers, writers or sessions; else the first
// axis), a line per group of the other axes' values, each knee the server found marked.
// The axis' values stand evenly spaced in the order given (1, 2, 4, 8 ... as on a log
// scale); a run not done yet is a gap.
function sweepCharts(ctx) {
  const iops = chartBox('IOPS', 'sweep-iops');
  const p99 = chartBox('p99 latency', 'sweep-p99');
  const key = h('div');
  const el = h('section', { class: 'bench-section', 'aria-labelledby': 'sweep-charts-title' }, h('h2', { id: 'sweep-charts-title', class: 'visually-hidden', text: 'IOPS and p99 against the swept axis' }), key, h('div', { class: 'bench-charts' }, iops.fig, p99.fig));
  let xs = [];
  const xFormat = (v) => (Number.isInteger(v) && v >= 0 && v < xs.length ? valueText(xs[v]) : '');
  const ic = chart(iops.plot, { time: false, height: 220, yZero: true, xFormat, series: [] });
  const pc = chart(p99.plot, { time: false, height: 220, yZero: true, xFormat, yFormat: nsText, series: [] });
  ctx.cleanup(() => {
    ic.destroy();
    pc.destroy();
  });
  let last = '';
  const draw = (sweep) => {
    const model = chartModel(sweep);
    const { axis, groups, labels, column, marks } = model;
    xs = model.xs; // (the axis' formatter reads it)
    const data = (pick) => [xs.map((x, i) => i), ...groups.map((g) => column(g, pick))];
    const series = labels.map((l) => ({ label: l, points: true }));
    const state = JSON.stringify([axis, labels, sweep.table, marks]);
    if (state === last) return;
    last = state;
    iops.fig.querySelector('figcaption').textContent = `IOPS by ${axis}`;
    p99.fig.querySelector('figcaption').textContent = `p99 latency by ${axis}`;
    clear(key);
    if (labels.length > 1) key.append(legend(labels));
    ic.setSeries(series);
    pc.setSeries(series);
    ic.setData(data((r) => r.iops));
    pc.setData(data((r) => r.p99_ns));
    ic.setMarks(marks);
    pc.setMarks(marks);
    const points = groups.reduce((n, g) => n + column(g, (r) => r.iops).filter((v) => v !== null).length, 0);
    iops.fig.dataset.points = String(points);
    iops.fig.dataset.knees = JSON.stringify(marks.map((m) => xs[m.x]));
    iops.fig.dataset.axis = axis;
  };
  return { el, draw };
}
