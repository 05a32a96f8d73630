// SPDX-License-Identifier: ISC
// #/bench/jobs/<id>: one run. While it runs: its progress, per-second IOPS and p99 charts
// fed by the progress stream, elapsed and remaining time, and Cancel. Once it has ended:
// why it ended (failed, cancelled), and the result: IOPS and throughput, latency
// percentiles and histogram, CPU, and what the collector saw on the disk and the box
// meanwhile, and what the run found (its findings, computed by the server). The
// environment the target sat on is under the spec. A finished run's charts are drawn from
// the recorded interval lines.

import { can, del } from '../api.js';
import { bytes, clear, duration, h, num, pct, timeEl, toast } from '../dom.js';
import { chart } from '../chart.js';
import { LIVE, PCTS, activeDirs, chartBox, environmentRows, findingsList, legend, histGroups, intervalPoint, jobPath, jobTitle, loadJob, nsText, progress, result, section, stateBadge } from './common.js';

const POLL_MS = 2000;

function tile(label, value, sub, id) {
  return h('div', { class: 'tile', id }, h('span', { class: 'tile-label', text: label }), h('span', { class: 'tile-value', text: value }), sub ? h('span', { class: 'tile-sub', text: sub }) : null);
}

// Which directions the spec moves data in (the live charts' series).
function specDirs(spec) {
  if (!spec) return ['read', 'write'];
  if (spec.pattern === 'iozone') return ['read', 'write'];
  if (spec.pattern === 'slob') {
    const n = spec.sessions || 1;
    const writers = Math.ceil((n * (spec.update_pct || 0)) / 100); // as spec.c rounds
    return [n - writers > 0 ? 'read' : null, writers > 0 ? 'write' : null].filter(Boolean);
  }
  const dirs = [];
  const mix = spec.threads > 0 ? spec.rwmix_read : null;
  if (spec.readers > 0 || (mix !== null && mix > 0)) dirs.push('read');
  if (spec.writers > 0 || (mix !== null && mix < 100)) dirs.push('write');
  return dirs.length ? dirs : ['read', 'write'];
}

function specText(spec) {
  if (!spec) return [];
  const rows = [
    ['Pattern', spec.pattern],
    ['Block size', spec.block_size ? bytes(spec.block_size) : null],
    ['Size', spec.size ? bytes(spec.size) : null],
    ['Sessions', spec.sessions],
    ['Update percent', spec.update_pct !== undefined && spec.pattern === 'slob' ? `${spec.update_pct} %` : null],
    ['Threads', spec.threads],
    ['Readers', spec.readers],
    ['Writers', spec.writers],
    ['Read mix', spec.threads && spec.pattern === 'randrw' ? `${spec.rwmix_read} %` : null],
    ['Passes', spec.passes ? spec.passes.join(', ') : null],
    ['Run time', spec.runtime_s ? duration(spec.runtime_s) : null],
    ['Ramp-up', spec.ramp_s ? duration(spec.ramp_s) : null],
    ['Amount', spec.io_size ? bytes(spec.io_size) : null],
    ['Engine', `${spec.engine}${spec.iodepth > 1 ? `, depth ${spec.iodepth}` : ''}`],
    ['Direct I/O', spec.direct ? 'yes' : 'no'],
    ['fsync every', spec.fsync_every ? `${spec.fsync_every} writes` : null],
  ];
  return rows.filter(([, v]) => v !== null && v !== undefined && v !== 0 && v !== '');
}

// The environment, compact: a line in the summary (filesystem, ZFS recordsize, the disk),
// the facts inside.
function envDetails(env) {
  const rows = environmentRows(env);
  if (!rows.length) return null;
  const z = env.zfs;
  const disks = (env.devices || []).filter((d) => d.kind === 'disk').map((d) => d.name);
  const line = [env.filesystem && env.filesystem.type, z && z.dataset, z && z.recordsize && `recordsize ${bytes(z.recordsize, 0)}`, disks.join(' ')].filter(Boolean).join(' · ');
  return h('details', { class: 'bench-spec bench-env', id: 'bench-env' }, h('summary', { text: line ? `Environment: ${line}` : 'Environment' }), dl(rows, 'bench-env-facts'));
}

function dl(rows, cls) {
  return h('dl', { class: ['bench-facts', cls] }, rows.map(([k, v]) => h('div', {}, h('dt', { text: k }), h('dd', {}, v))));
}

// ---- the per-second charts

function perSecond(dirs) {
  const iops = chartBox('IOPS per second', 'bench-iops');
  const p99 = chartBox('p99 latency per second', 'bench-p99');
  iops.fig.append(legend(dirs.map((d) => `${d} IOPS`)));
  p99.fig.append(legend(dirs.map((d) => `${d} p99`)));
  const wrap = h('div', { class: 'bench-charts' }, iops.fig, p99.fig);
  let ci = null;
  let cp = null;
  const pts = [];
  const xFormat = (v) => `${num(v)} s`;
  return {
    el: wrap,
    // after the box is in the page, so the charts take its width
    start() {
      ci = chart(iops.plot, { time: false, xFormat, syncKey: 'bench-job', series: dirs.map((d) => ({ label: `${d} IOPS` })), height: 200 });
      cp = chart(p99.plot, { time: false, xFormat, syncKey: 'bench-job', yFormat: (v) => (v < 1 ? `${(v * 1000).toFixed(0)}µs` : `${num(v)}ms`), series: dirs.map((d) => ({ label: `${d} p99` })), height: 200 });
      // dots while there are too few seconds for a line (the first second of a live run)
      for (const c of [ci, cp]) for (const s of c.plot.series.slice(1)) s.points.show = (u) => u.data[0].length < 3;
      this.draw();
    },
    add(p) {
      pts.push(p);
    },
    get count() {
      return pts.length;
    },
    // span: while it runs, the seconds the run is to take (the axis does not jump)
    draw(span = null) {
      if (!ci) return;
      const xs = pts.map((p) => p.t);
      ci.setData([xs, ...dirs.map((d) => pts.map((p) => p[`${d}Iops`]))]);
      cp.setData([xs, ...dirs.map((d) => pts.map((p) => p[`${d}P99`]))]);
      if (span && xs.length && xs[xs.length - 1] < span) for (const c of [ci, cp]) c.setScale(0, span);
      wrap.dataset.points = String(pts.length);
    },
    destroy() {
      if (ci) ci.destroy();
      if (cp) cp.destroy();
    },
  };
}

// ---- the result

function histChart(dir, hist, ctxCleanup) {
  const groups = histGroups(hist);
  const box = chartBox(`${dir} latency histogram (operations per latency band)`, 'bench-hist');
  box.fig.dataset.dir = dir;
  box.fig.dataset.bars = String(groups.length);
  const rows = groups.map((g) => h('tr', {}, h('td', { text: `${nsText(g.lo)} – ${nsText(g.hi)}` }), h('td', { class: 'num', text: String(g.count) })));
  const table = h('details', { class: 'bench-hist-table' }, h('summary', { text: `${dir} histogram as a table` }), h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Latency' }), h('th', { scope: 'col', class: 'num', text: 'Operations' }))), h('tbody', {}, rows))));
  box.fig.append(table);
  return {
    el: box.fig,
    start() {
      const c = chart(box.plot, {
        time: false,
        bars: true,
        height: 200,
        xFormat: (v) => (groups[Math.round(v)] ? nsText(groups[Math.round(v)].lo) : ''),
        series: [{ label: `${dir} operations` }],
      });
      c.setData([groups.map((g, i) => i), groups.map((g) => g.count)]);
      ctxCleanup(() => c.destroy());
    },
  };
}

function percentiles(r) {
  const dirs = activeDirs(r);
  const cols = [...dirs];
  if (r.sync && r.sync.ops > 0) cols.push('sync');
  const rows = ['min', ...PCTS, 'max', 'mean', 'stddev'];
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'bench-pcts', id: 'bench-percentiles' },
      h('caption', { class: 'visually-hidden', text: 'Latency percentiles per direction' }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Latency' }), cols.map((c) => h('th', { scope: 'col', class: 'num', text: c })))),
      h(
        'tbody',
        {},
        rows.map((k) => h('tr', { dataset: { pct: k } }, h('th', { scope: 'row', text: k }), cols.map((c) => h('td', { class: 'num', text: nsText(r[c] && r[c].latency_ns ? r[c].latency_ns[k] : null) })))),
      ),
    ),
  );
}

function directions(r) {
  const dirs = activeDirs(r);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'stack' },
      h('thead', {}, h('tr', {}, ['Direction', 'Operations', 'Bytes', 'IOPS', 'Throughput', 'Mean latency', 'p99'].map((t, i) => h('th', { scope: 'col', class: i ? 'num' : null, text: t })))),
      h(
        'tbody',
        {},
        dirs.map((d) => {
          const x = r[d];
          return h(
            'tr',
            {},
            h('th', { scope: 'row', 'data-label': 'Direction', text: d }),
            h('td', { class: 'num', 'data-label': 'Operations', text: num(x.ops) }),
            h('td', { class: 'num', 'data-label': 'Bytes', text: bytes(x.bytes) }),
            h('td', { class: 'num', 'data-label': 'IOPS', text: num(x.iops) }),
            h('td', { class: 'num', 'data-label': 'Throughput', text: `${bytes(x.bytes_per_s)}/s` }),
            h('td', { class: 'num', 'data-label': 'Mean latency', text: nsText(x.latency_ns.mean) }),
            h('td', { class: 'num', 'data-label': 'p99', text: nsText(x.latency_ns.p99) }),
          );
        }),
      ),
    ),
  );
}

function deviceAndBox(r) {
  const dev = r.device || {};
  const cpu = r.box_cpu || {};
  const out = [];
  if (dev.seconds) {
    out.push(
      h('h3', { text: `Disk ${dev.disk} over ${dev.seconds} s` }),
      dl(
        [
          ['Worker IOPS', num(r.summary ? r.summary.iops : null)],
          ['Disk IOPS', num(dev.ops_per_s)],
          ['Disk reads/s', num(dev.reads_per_s)],
          ['Disk writes/s', num(dev.writes_per_s)],
          ['Disk read throughput', `${bytes(dev.read_bytes_per_s)}/s`],
          ['Disk write throughput', `${bytes(dev.write_bytes_per_s)}/s`],
          ['Disk busy', pct(dev.busy_pct)],
          ['Queue (mean in flight)', num(dev.queue, 2)],
          ['Disk read latency', nsText(dev.read_latency_ms * 1e6)],
          ['Disk write latency', nsText(dev.write_latency_ms * 1e6)],
        ],
        'bench-device',
      ),
    );
  } else {
    out.push(h('p', { class: 'muted', id: 'bench-device-why', text: `No disk figures${dev.disk ? ` for ${dev.disk}` : ''}: ${dev.why || 'none recorded'}.` }));
  }
  const modes = ['user', 'nice', 'system', 'iowait', 'irq', 'softirq', 'steal', 'idle'];
  out.push(
    h('h3', { text: `The box’s CPU over ${cpu.seconds || 0} s` }),
    cpu.seconds ? dl(modes.map((m) => [m, pct(cpu[`${m}_pct`])]), 'bench-boxcpu') : h('p', { class: 'muted', text: 'No CPU sample was taken while the run was measured.' }),
  );
  return out;
}

function iozoneTable(r) {
  if (!r.passes || !r.passes.length) return null;
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'stack' },
      h('thead', {}, h('tr', {}, ['Pass', 'Elapsed', 'IOPS', 'Throughput', 'Mean latency', 'p99'].map((t, i) => h('th', { scope: 'col', class: i ? 'num' : null, text: t })))),
      h(
        'tbody',
        {},
        r.passes.map((p) =>
          h(
            'tr',
            {},
            h('th', { scope: 'row', 'data-label': 'Pass', text: p.pass.replace('_', ' ') }),
            h('td', { class: 'num', 'data-label': 'Elapsed', text: `${p.elapsed_s.toFixed(2)} s` }),
            h('td', { class: 'num', 'data-label': 'IOPS', text: num(p.iops) }),
            h('td', { class: 'num', 'data-label': 'Throughput', text: `${bytes(p.bytes_per_s)}/s` }),
            h('td', { class: 'num', 'data-label': 'Mean latency', text: nsText(p.latency_ns.mean) }),
            h('td', { class: 'num', 'data-label': 'p99', text: nsText(p.latency_ns.p99) }),
          ),
        ),
      ),
    ),
  );
}

function resultView(r, cleanup) {
  const s = r.summary || {};
  const thru = (r.read ? r.read.bytes_per_s : 0) + (r.write ? r.write.bytes_per_s : 0);
  const el = r.elapsed_s || 0;
  const cpuShare = (v) => (el > 0 ? `${pct((v / el) * 100)} of one CPU` : '');
  const hists = activeDirs(r)
    .filter((d) => r[d].hist && r[d].ops > 0)
    .map((d) => histChart(d, r[d].hist, cleanup));
  const box = h(
    'div',
    { class: 'bench-result', id: 'bench-result' },
    r.partial ? h('p', { class: 'note', text: 'A partial result: what the run did before it stopped.' }) : null,
    h(
      'div',
      { class: 'tiles bench-tiles' },
      tile('IOPS', num(s.iops), `${activeDirs(r).join(' + ')} over ${el.toFixed(1)} s`, 'bench-iops-tile'),
      tile('Throughput', `${bytes(thru)}/s`, null, 'bench-thru-tile'),
      tile('Disk IOPS', num(s.disk_iops), s.disk ? `${s.disk}, as the collector saw it` : 'no single disk behind the target', 'bench-disk-tile'),
      tile('Worker CPU', `${(r.cpu ? r.cpu.user_s : 0).toFixed(2)} s user`, `${(r.cpu ? r.cpu.system_s : 0).toFixed(2)} s system · ${cpuShare((r.cpu ? r.cpu.user_s : 0) + (r.cpu ? r.cpu.system_s : 0))}`, 'bench-cpu-tile'),
      tile('Box CPU', `${pct(s.cpu_user_pct)} user`, `${pct(s.cpu_system_pct)} system`, 'bench-boxcpu-tile'),
    ),
    section('bench-findings-title', 'Findings', findingsList(r.findings)),
    directions(r),
    section('bench-lat-title', 'Latency', h('div', { class: 'bench-lat' }, percentiles(r), h('div', { class: 'bench-hists' }, hists.map((x) => x.el)))),
    r.passes && r.passes.length ? section('bench-passes-title', 'iozone passes', iozoneTable(r)) : null,
    section('bench-during-title', 'The disk and the box during the run', deviceAndBox(r)),
    h('p', {}, h('a', { href: '#/bench', text: 'Pick runs to compare in the run list' })),
  );
  return { el: box, start: () => hists.forEach((x) => x.start()) };
}

// ---- the page

export async function render(main, ctx) {
  const id = ctx.parts[1];
  if (!/^[1-9]\d*$/.test(id || '')) {
    main.append(h('h1', { text: 'No such run' }), h('p', {}, h('a', { href: '#/bench', text: 'Back to the runs' })));
    return;
  }
  let job = await loadJob(id, ctx.signal);

  const badge = h('span', { id: 'bench-state' }, stateBadge(job.state));
  let shownState = job.state;
  const showState = () => {
    if (job.state === shownState) return;
    shownState = job.state;
    badge.replaceChildren(stateBadge(job.state));
  };
  const times = h('p', { class: 'muted bench-times' });
  const status = h('div', { class: 'bench-status', id: 'bench-status' });
  const resultBox = h('div', { id: 'bench-result-box' });
  const dirs = specDirs(job.spec);
  const charts = perSecond(dirs);
  ctx.cleanup(() => charts.destroy());

  const drawTimes = () => {
    clear(times);
    times.append(`Owner ${job.owner} · created `, timeEl(job.ctime));
    if (job.started) times.append(' · started ', timeEl(job.started));
    if (job.ended) times.append(' · ended ', timeEl(job.ended));
    times.append(` · target ${job.target}`);
  };
  drawTimes();

  // The environment is resolved while the job waits to start: a page opened on a queued
  // job shows it once a later load of the job has it.
  const spec = h('details', { class: 'bench-spec' }, h('summary', { text: 'Spec' }), dl(specText(job.spec)));
  let env = null;
  const drawEnv = () => {
    if (env || !job.environment) return;
    env = envDetails(job.environment);
    if (env) spec.after(env);
  };

  main.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/bench', text: 'Benchmarks' })),
    h('div', { class: 'toolbar' }, h('h1', { text: `Run ${jobTitle(job)}` }), badge, h('span', { class: 'spacer' }),
      can('bench:run') && job.spec ? h('a', { class: 'button', id: 'bench-again', href: `#/bench/new?from=${job.id}`, text: 'Run again with changes' }) : null),
    times,
    spec,
    status,
    section('bench-ps-title', 'Per second', charts.el),
    resultBox,
  );
  charts.start();

  // ---- while it is live: progress, times, cancel
  const bar = h('progress', { max: '100', value: String(job.progress_pct || 0), id: 'bench-progress', 'aria-labelledby': 'bench-progress-label' });
  const elapsed = h('span', { id: 'bench-elapsed' });
  const remaining = h('span', { id: 'bench-remaining' });
  let eta = job.eta_s;
  let etaAt = Date.now();
  const cancel = can('bench:run')
    ? h('button', {
        type: 'button',
        class: 'danger',
        id: 'bench-cancel',
        text: 'Cancel run',
        on: {
          click: async (e) => {
            // eslint-disable-next-line no-alert
            if (!window.confirm(`Cancel run #${job.id}? What it did so far is kept as a partial result.`)) return;
            e.currentTarget.disabled = true;
            try {
              await del(jobPath(job.id), { signal: ctx.signal });
              toast(`Run #${job.id} is being cancelled.`);
            } catch (err) {
              if (err.name !== 'AbortError') toast(`Cannot cancel: ${err.details || err.message}`, 'error');
              cancel.disabled = false;
            }
          },
        },
      })
    : null;
  const tick = () => {
    const sec = job.started ? (Date.now() - Date.parse(job.started)) / 1000 : null;
    elapsed.textContent = job.started ? duration(sec) : 'waiting in the queue';
    const left = typeof eta === 'number' ? Math.max(0, eta - (Date.now() - etaAt) / 1000) : null;
    remaining.textContent = left === null ? (job.started ? 'unknown' : '–') : duration(left);
  };
  let ticker = 0;
  const showLive = () => {
    clear(status);
    status.append(
      h(
        'div',
        { class: 'card bench-live' },
        h('label', { id: 'bench-progress-label', for: 'bench-progress', text: `Progress ${num(job.progress_pct || 0)} %` }),
        bar,
        h('p', { class: 'bench-clock' }, 'Elapsed ', elapsed, ' · remaining ', remaining),
        cancel,
      ),
    );
    tick();
    clearInterval(ticker);
    ticker = setInterval(tick, 1000);
  };
  ctx.cleanup(() => clearInterval(ticker));

  const showEnd = async () => {
    clearInterval(ticker);
    clear(status);
    showState();
    drawTimes();
    drawEnv();
    if (job.reason) {
      const what = { failed: 'Failed', cancelled: 'Cancelled', interrupted: 'Interrupted' }[job.state] || 'Ended';
      status.append(h('p', { class: job.state === 'failed' ? 'error' : 'note', id: 'bench-reason', role: 'status', text: `${what}: ${job.reason}` }));
    }
    // the job carries its result (a partial one when cancelled); a done one is asked for
    // on its own should it not
    let r = job.result || null;
    if (!r && job.state === 'done') {
      try {
        r = await result(job.id, ctx.signal);
      } catch (e) {
        if (e.name === 'AbortError') return;
        r = null;
      }
    }
    clear(resultBox);
    if (!r) {
      resultBox.append(h('p', { class: 'muted', id: 'bench-no-result', text: job.state === 'failed' ? 'A failed run keeps no result.' : 'This run kept no result.' }));
      return;
    }
    const v = resultView(r, ctx.cleanup);
    resultBox.append(section('bench-result-title', job.state === 'done' ? 'Result' : 'Partial result', v.el));
    v.start();
  };

  drawEnv();
  const live = LIVE.has(job.state);
  if (live) showLive();
  else await showEnd();

  // the recorded seconds, then (while it runs) each new one; a finished run's stream is
  // answered whole
  let ended = !live;
  let envAsked = false;
  const onLine = (o) => {
    if (o.type === 'interval') {
      const p = intervalPoint(o);
      charts.add(p);
      if (!ended) {
        job.progress_pct = o.progress_pct;
        bar.value = o.progress_pct || 0;
        const lab = document.getElementById('bench-progress-label');
        if (lab) lab.textContent = `Progress ${num(o.progress_pct || 0)} %${o.pass ? ` · pass ${o.pass.replace('_', ' ')}` : ''}${o.phase === 'ramp' ? ' · ramping up' : ''}`;
        eta = o.eta_s;
        etaAt = Date.now();
        if (!job.started) job.started = new Date(Date.now() - o.t_s * 1000).toISOString();
        if (job.state === 'queued') {
          // its seconds come in: it runs (the job's own record says so at its next load)
          job.state = 'running';
          showState();
          drawTimes();
        }
        if (!job.environment && !envAsked) {
          // it has started, so its environment is stored
          envAsked = true;
          loadJob(id, ctx.signal)
            .then((j) => {
              job.environment = j.environment;
              drawEnv();
            })
            .catch(() => {});
        }
        tick();
        charts.draw(job.spec && job.spec.runtime_s ? (job.spec.ramp_s || 0) + job.spec.runtime_s + 0.5 : null);
      }
    } else if (o.type === 'end') {
      ended = true;
    }
  };
  ctx.ready();

  const poll = async () => {
    while (!ctx.signal.aborted && LIVE.has(job.state)) {
      await new Promise((res) => setTimeout(res, POLL_MS));
      if (ctx.signal.aborted) return;
      job = await loadJob(id, ctx.signal);
      eta = job.eta_s;
      etaAt = Date.now();
      bar.value = job.progress_pct || 0;
      showState();
      drawEnv();
      tick();
    }
  };

  try {
    await progress(job.id, onLine, ctx.signal);
  } catch (e) {
    if (e.name === 'AbortError' || ctx.signal.aborted) return;
    if (live) await poll(); // the stream is refused or broke: ask every 2 s instead
  }
  charts.draw();
  if (live && !ctx.signal.aborted) {
    job = await loadJob(id, ctx.signal);
    // the end line comes as the job's end is stored; a moment later at worst
    for (let i = 0; i < 5 && LIVE.has(job.state) && !ctx.signal.aborted; i++) {
      await new Promise((res) => setTimeout(res, 500));
      job = await loadJob(id, ctx.signal);
    }
    await showEnd();
  }
}
