// SPDX-License-Identifier: ISC
// The dashboard: the box at a glance, live from the events stream (js/live.js). Each
// headline figure is a tile with its sparkline; a tile opens a worksheet of its dataset,
// the jobs and LEDs tiles open their pages, and problems and capacity are listed here.
//
// The document's newer parts (capacity, problems_recent, spark) may be missing on an older
// server: every figure reads them defensively and shows "–" when they are absent.

import { get } from '../api.js';
import { sparkline } from '../spark.js';
import { bytes, duration, h, ms, num, pct, time, timeEl } from '../dom.js';
import { subscribe } from '../live.js';
import { component, componentLink, loadProblems, locateButton, problemsKey, severityBadge, severityClass } from '../problems.js';

const HISTORY = 60; // samples kept for tiles the server sends no sparkline for (yet)
const STALE_MS = 15000; // no document for this long: say the numbers are old

// Worksheet datasets each tile opens, best first; the list the server has decides.
const DATASETS = {
  iops: ['io.ops[op]', 'io.ops'],
  throughput: ['io.bytes[op]', 'io.bytes'],
  latency: ['io.latency[op]', 'io.latency'],
  cpu: ['cpu.utilization[mode]', 'cpu.utilization'],
  memory: ['mem.bytes[component]', 'mem.bytes'],
  arc: ['arc.accesses[hit/miss]', 'arc.accesses', 'arc.size[component]'],
  nic: ['nic.kilobytes[direction]', 'nic.kilobytes'],
};

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

function rate(bytesPerSecond) {
  return isNum(bytesPerSecond) ? `${bytes(bytesPerSecond)}/s` : '–';
}

// All disks together: the document's io (a box of a thousand disks lists only its
// busiest), or, from an older server, the sum of its disks.
function io(doc) {
  if (doc.io && typeof doc.io === 'object') return doc.io;
  if (!Array.isArray(doc.disks)) return null;
  const d = doc.disks;
  const r = sum(d.map((x) => x.r_ops_s || 0));
  const w = sum(d.map((x) => x.w_ops_s || 0));
  return {
    r_ops_s: r,
    w_ops_s: w,
    r_b_s: sum(d.map((x) => x.r_b_s || 0)),
    w_b_s: sum(d.map((x) => x.w_b_s || 0)),
    r_ms: r ? sum(d.map((x) => (x.r_ops_s || 0) * (x.r_ms || 0))) / r : 0,
    w_ms: w ? sum(d.map((x) => (x.w_ops_s || 0) * (x.w_ms || 0))) / w : 0,
  };
}

// The figures of one document, by tile: {value, sub, point (for local history)}.
const FIGURES = {
  iops(doc) {
    const t = io(doc);
    if (!t) return null;
    const r = t.r_ops_s || 0;
    const w = t.w_ops_s || 0;
    return { value: num(r + w), sub: `read ${num(r)} · write ${num(w)}`, point: r + w };
  },
  throughput(doc) {
    const t = io(doc);
    if (!t) return null;
    const r = t.r_b_s || 0;
    const w = t.w_b_s || 0;
    return { value: rate(r + w), sub: `read ${rate(r)} · write ${rate(w)}`, point: r + w };
  },
  latency(doc) {
    const t = io(doc);
    if (!t) return null;
    // Mean over all I/Os of the second: reads' and writes' means weighted by their counts.
    const rOps = t.r_ops_s || 0;
    const wOps = t.w_ops_s || 0;
    const all = rOps + wOps ? (rOps * (t.r_ms || 0) + wOps * (t.w_ms || 0)) / (rOps + wOps) : null;
    return {
      value: all === null ? 'idle' : ms(all),
      sub: `read ${rOps ? ms(t.r_ms) : '–'} · write ${wOps ? ms(t.w_ms) : '–'}`,
      point: all,
    };
  },
  cpu(doc) {
    const c = doc.cpu;
    if (!c) return null;
    const n = isNum(doc.ncpus) ? ` · ${doc.ncpus} CPUs` : '';
    // Waiting on I/O is idle time here (the CPU could run something); cpu.utilization, the
    // worksheet this tile opens, counts it as not idle: say so when it makes a difference.
    const wait = isNum(c.iowait_pct) && c.iowait_pct >= 0.5 ? ` · iowait ${pct(c.iowait_pct, 0)}, not counted` : '';
    return { value: pct(c.busy_pct, 0), sub: `user ${pct(c.user_pct, 0)} · sys ${pct(c.system_pct, 0)}${wait}${n}`, point: c.busy_pct };
  },
  memory(doc) {
    const m = doc.mem_bytes;
    if (!m || !m.total) return null;
    return {
      value: pct((100 * m.used) / m.total, 0),
      sub: `${bytes(m.used)} of ${bytes(m.total)} · cache ${bytes(m.cache)}`,
      point: (100 * m.used) / m.total,
    };
  },
  capacity(doc) {
    const fs = Array.isArray(doc.capacity) ? doc.capacity : null;
    if (!fs || !fs.length) return null;
    const size = sum(fs.map((f) => f.size || 0));
    const used = sum(fs.map((f) => f.used || 0));
    const avail = sum(fs.map((f) => f.avail || 0));
    const share = used + avail ? (100 * used) / (used + avail) : null;
    const n = fs.length;
    return {
      value: pct(share, 0),
      sub: `${bytes(avail)} free of ${bytes(size)} · ${n} filesystem${n === 1 ? '' : 's'}`,
      point: share,
    };
  },
  arc(doc) {
    if (!isNum(doc.arc_hit_pct)) return null;
    return { value: pct(doc.arc_hit_pct), sub: 'ZFS ARC hits', point: doc.arc_hit_pct };
  },
  nic(doc) {
    const n = doc.nic_kb_s;
    if (!n) return null;
    return {
      value: rate(((n.rx || 0) + (n.tx || 0)) * 1024),
      sub: `in ${rate((n.rx || 0) * 1024)} · out ${rate((n.tx || 0) * 1024)}`,
      point: (n.rx || 0) + (n.tx || 0),
    };
  },
  jobs(doc) {
    const j = doc.jobs;
    if (!j) return null;
    return { value: num(j.running), sub: `running · ${num(j.queued)} queued`, point: j.running };
  },
  leds(doc) {
    if (!isNum(doc.leds_lit)) return null;
    return { value: num(doc.leds_lit), sub: doc.leds_lit ? 'Locating' : 'all off', point: doc.leds_lit };
  },
  problems(doc) {
    if (!isNum(doc.problems)) return null;
    return { value: num(doc.problems), sub: doc.problems ? 'open' : 'none open', point: doc.problems };
  },
};

// The server's 60-minute series for a tile, if it sends one.
function serverSpark(doc, name) {
  const s = doc.spark;
  if (!s || typeof s !== 'object') return null;
  const pick = (...keys) => {
    for (const k of keys) if (Array.isArray(s[k])) return s[k];
    return null;
  };
  switch (name) {
    case 'iops':
      return pick('iops', 'ops');
    case 'throughput':
      return pick('kb_s', 'mb_s', 'b_s', 'throughput', 'bytes');
    case 'cpu':
      return pick('cpu', 'cpu_pct', 'cpu_busy');
    case 'nic':
      return pick('nic_kb_s', 'nic');
    default:
      return null;
  }
}

function tileDefs() {
  return [
    { name: 'iops', label: 'IOPS' },
    { name: 'throughput', label: 'Throughput' },
    { name: 'latency', label: 'Latency' },
    { name: 'cpu', label: 'CPU busy' },
    { name: 'memory', label: 'Memory used' },
    { name: 'capacity', label: 'Capacity used', section: 'capacity' },
    { name: 'arc', label: 'ARC hit rate', optional: true },
    { name: 'nic', label: 'Network' },
    { name: 'jobs', label: 'Benchmark jobs', href: '#/bench' },
    { name: 'leds', label: 'Locator LEDs lit', href: '#/hardware' },
    { name: 'problems', label: 'Problems', href: '#/problems' },
  ];
}

function worksheetHref(dataset) {
  return `#/worksheets/new?dataset=${encodeURIComponent(dataset)}`;
}

// One tile: a link with its label, value, sub-line and sparkline.
function tile(def, focusSection) {
  const value = h('span', { class: 'tile-value', text: '–' });
  const sub = h('span', { class: 'tile-sub', text: '\u00a0' });
  const spark = sparkline([], { label: `${def.label}: recent history` });
  const href = def.href || (def.section ? `#/dashboard?focus=${def.section}` : worksheetHref(DATASETS[def.name][0]));
  const el = h(
    'a',
    { class: 'tile', href, dataset: { tile: def.name }, hidden: def.optional },
    h('span', { class: 'tile-label', text: def.label }),
    value,
    sub,
    spark.el,
  );
  if (def.section) {
    // Opens the list on this page without a trip through the router.
    el.addEventListener('click', (ev) => {
      ev.preventDefault();
      focusSection(def.section);
    });
  }
  const history = [];
  return {
    def,
    el,
    setDataset(name) {
      if (!def.href && !def.section) el.setAttribute('href', worksheetHref(name));
    },
    update(doc) {
      const f = FIGURES[def.name](doc);
      if (def.optional) el.hidden = !f;
      value.textContent = f ? f.value : '–';
      sub.textContent = f ? f.sub : '\u00a0';
      if (def.name === 'problems') el.classList.toggle('alert', !!(f && doc.problems > 0));
      if (def.name === 'leds') el.classList.toggle('led-lit', !!(f && doc.leds_lit > 0));
      history.push(f && isNum(f.point) ? f.point : null);
      if (history.length > HISTORY) history.shift();
      // The server's hour, once it holds a line; the minutes before its data began are
      // left out, so a box started ten minutes ago draws ten minutes across the tile.
      const series = serverSpark(doc, def.name);
      const start = series ? series.findIndex(isNum) : -1;
      if (start >= 0 && series.length - start >= 2) {
        const minutes = series.slice(start);
        spark.set(minutes);
        spark.el.setAttribute('aria-label', `${def.label}: the last ${minutes.length} minutes`);
        return;
      }
      spark.set(history);
      spark.el.setAttribute('aria-label', `${def.label}: the last ${history.length} samples`);
    },
  };
}

// Picks each tile's dataset from the ones the server collects.
function chooseDatasets(list) {
  const names = new Set(list.map((d) => d.name));
  const stats = list.map((d) => ({ name: d.name, stat: d.statistic || d.name.replace(/\[.*$/, '') }));
  const out = {};
  for (const [tileName, wanted] of Object.entries(DATASETS)) {
    let found = wanted.find((n) => names.has(n));
    if (!found) {
      for (const w of wanted) {
        const s = stats.find((x) => x.stat === w.replace(/\[.*$/, ''));
        if (s) {
          found = s.name;
          break;
        }
      }
    }
    if (found) out[tileName] = found;
  }
  return out;
}

// The line above everything: the worst open problem whole, with its component and a Locate
// button, or "All good" and when the box was last looked at. On a phone it is the first
// thing on the screen, so bad news is never below the fold.
function statusLine(signal) {
  const headline = h('div', { class: 'status-main', 'aria-live': 'polite' });
  const extra = h('div', { class: 'status-extra' });
  const el = h('section', { class: 'status-line', id: 'dash-status', 'aria-label': 'Health' }, headline, extra);
  let key = null;
  let loading = false;
  let again = false;

  const good = () => {
    el.dataset.state = 'ok';
    delete el.dataset.severity;
    headline.replaceChildren(h('span', { class: 'status-ok', 'aria-hidden': 'true', text: '✓' }), h('strong', { text: 'All good' }), ' · no open problems');
  };
  const bad = (worst, total) => {
    el.dataset.state = 'problem';
    el.dataset.severity = worst.severity || '';
    const c = component(worst);
    const link = componentLink(c);
    headline.replaceChildren(
      severityBadge(worst.severity),
      h('span', { class: 'status-text', id: 'dash-status-text', text: worst.description }),
    );
    extra.replaceChildren(
      link ? h('span', { class: 'status-where' }, link) : null,
      c ? locateButton(c.href, link ? link.textContent : 'the component', signal) : null,
      h('a', { href: '#/problems', id: 'dash-status-more', text: total > 1 ? `All ${total} problems` : 'Details' }),
    );
  };
  const load = async (total) => {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const list = await loadProblems(signal);
      if (list.length) bad(list[0], list.length);
      else good();
    } catch (e) {
      if (e.name !== 'AbortError' && e.status !== 401) {
        // the count is known even when the list is not
        el.dataset.state = 'problem';
        headline.replaceChildren(h('strong', { text: `${total} open problem${total === 1 ? '' : 's'}` }));
        extra.replaceChildren(h('a', { href: '#/problems', text: 'Details' }));
      }
    } finally {
      loading = false;
      if (again) {
        again = false;
        load(total);
      }
    }
  };
  return {
    el,
    update(doc) {
      if (!isNum(doc.problems)) return;
      const now = problemsKey(doc);
      if (now !== key) {
        key = now;
        if (doc.problems === 0) {
          good();
          extra.replaceChildren(h('span', { class: 'muted', id: 'dash-status-checked' }));
        } else load(doc.problems);
      }
      const checked = el.querySelector('#dash-status-checked');
      if (checked && doc.time) checked.replaceChildren('checked ', timeEl(doc.time, { date: false }));
    },
  };
}

// The newest open problems: from the document when it lists them, else asked for.
function problemsSection(signal) {
  const count = h('span', { class: 'muted' });
  const list = h('ul', { class: 'problem-list' });
  const moreLink = h('a', { href: '#/problems' });
  const more = h('p', { class: 'muted', hidden: true }, moreLink);
  const heading = h('h2', { id: 'dash-problems-h' }, 'Open problems ', count);
  const el = h('section', { class: 'dash-section', id: 'dash-problems', tabindex: '-1', 'aria-labelledby': heading.id }, heading, list, more);
  let shownFor = null; // the count the list was fetched for, when the document has no list
  let fetching = false;

  function show(items, total) {
    count.textContent = isNum(total) ? `(${total})` : '';
    list.replaceChildren(
      ...(items.length
        ? items.map((p) =>
            h(
              'li',
              { class: 'problem', dataset: { problem: p.id } },
              h('span', { class: ['badge', severityClass(p.severity)], text: p.severity || 'Unknown' }),
              h('a', { class: 'problem-summary', href: '#/problems', text: p.summary || '–' }),
            ),
          )
        : [h('li', { class: 'muted', text: total ? 'The list is not available.' : 'No open problems.' })]),
    );
    const rest = isNum(total) ? total - items.length : 0;
    more.hidden = !(rest > 0 && items.length);
    moreLink.textContent = `and ${rest} more on the Problems page`;
  }

  async function fetchList(total) {
    if (fetching) return;
    fetching = true;
    shownFor = total;
    try {
      const doc = await get('/api/problem/v1/problems', { signal });
      const items = (doc.problems || [])
        .slice()
        .sort((a, b) => String(b.first_seen || '').localeCompare(String(a.first_seen || '')))
        .slice(0, 5)
        .map((p) => ({ id: p.uuid, severity: p.severity, summary: p.description }));
      show(items, total);
    } catch (e) {
      if (e.name !== 'AbortError') show([], total);
    } finally {
      fetching = false;
    }
  }

  return {
    el,
    update(doc) {
      if (Array.isArray(doc.problems_recent)) {
        show(doc.problems_recent, doc.problems);
      } else if (isNum(doc.problems) && doc.problems !== shownFor) {
        if (doc.problems === 0) {
          shownFor = 0;
          show([], 0);
        } else fetchList(doc.problems);
      }
    },
  };
}

// Each filesystem (and pool) with a meter of its use.
function capacitySection() {
  const body = h('div', { class: 'cap-list' });
  const heading = h('h2', { id: 'dash-capacity-h', text: 'Capacity' });
  const el = h('section', { class: 'dash-section', id: 'dash-capacity', tabindex: '-1', 'aria-labelledby': heading.id }, heading, body);
  let key = '';
  return {
    el,
    update(doc) {
      const fs = Array.isArray(doc.capacity) ? doc.capacity : [];
      const pools = Array.isArray(doc.pools) ? doc.pools : [];
      const next = JSON.stringify([fs, pools]);
      if (next === key) return;
      key = next;
      const rows = fs.map((f) => {
        const name = f.n || f.name || '–';
        const share = f.used + f.avail ? (100 * f.used) / (f.used + f.avail) : 0;
        return h(
          'div',
          { class: 'cap-row', dataset: { fs: name } },
          h('span', { class: 'cap-name mono', text: name }),
          h('span', { class: 'cap-type muted', text: f.type || '' }),
          h('meter', { class: 'cap-meter', min: 0, max: 100, low: 80, high: 90, optimum: 0, value: share.toFixed(1), 'aria-label': `${name} used` }),
          h('span', { class: 'cap-fig', text: `${pct(share, 0)} · ${bytes(f.avail)} free of ${bytes(f.size)}` }),
        );
      });
      const poolRows = pools.map((p) => {
        const name = p.n || p.name || '–';
        const state = p.state || p.health || '';
        return h(
          'div',
          { class: 'cap-row', dataset: { pool: name } },
          h('span', { class: 'cap-name mono', text: name }),
          h('span', { class: 'cap-type muted', text: 'ZFS pool' }),
          h('span', { class: ['badge', `state-${state.toLowerCase()}`], text: state || 'unknown' }),
          h('span', { class: 'cap-fig', text: isNum(p.size) ? `${bytes(p.avail)} free of ${bytes(p.size)}` : '' }),
        );
      });
      body.replaceChildren(...rows, ...poolRows);
      if (!rows.length && !poolRows.length) body.append(h('p', { class: 'muted', text: 'No filesystem reported.' }));
    },
  };
}

export function render(main, ctx) {
  const ident = h('p', { class: 'ident muted' }, 'Waiting for the first sample…');
  const stale = h('p', { class: 'stale', role: 'status', hidden: true });
  const sections = {};
  const focusSection = (name) => {
    const s = sections[name];
    if (!s) return;
    s.el.scrollIntoView({ block: 'start' });
    s.el.focus({ preventScroll: true });
  };
  const tiles = tileDefs().map((d) => tile(d, focusSection));
  sections.problems = problemsSection(ctx.signal);
  sections.capacity = capacitySection();
  const status = statusLine(ctx.signal);

  main.append(
    h('div', { class: 'dash-head' }, h('h1', { text: 'Dashboard' }), ident),
    stale,
    status.el,
    h('div', { class: 'tiles' }, tiles.map((t) => t.el)),
    h('div', { class: 'dash-sections' }, sections.problems.el, sections.capacity.el),
  );

  // Tiles open the datasets the server really has (names can carry a drilldown).
  get('/api/analytics/v1/datasets', { signal: ctx.signal })
    .then((doc) => {
      const chosen = chooseDatasets((doc && doc.datasets) || []);
      for (const t of tiles) if (chosen[t.def.name]) t.setDataset(chosen[t.def.name]);
    })
    .catch(() => {
      /* the preferred names stay: the worksheet page says if one is missing */
    });

  let first = true;
  let lastSeen = 0;
  const onDoc = (doc) => {
    if (!doc) return;
    lastSeen = Date.now();
    stale.hidden = true;
    const parts = [`Spindle ${doc.version || ''}`.trim(), `up ${duration(doc.uptime_s)}`];
    parts.push(doc.time ? `sample ${time(doc.time)}` : 'waiting for the first sample');
    ident.textContent = parts.join(' · ');
    status.update(doc);
    for (const t of tiles) t.update(doc);
    sections.problems.update(doc);
    sections.capacity.update(doc);
    if (first) {
      first = false;
      ctx.ready();
      const focus = ctx.query.get('focus');
      if (focus) focusSection(focus);
    }
  };
  ctx.cleanup(subscribe(onDoc));

  // A wall screen must not show old numbers as if they were live.
  const timer = setInterval(() => {
    if (!lastSeen || document.hidden) return;
    const age = Date.now() - lastSeen;
    stale.hidden = age < STALE_MS;
    if (!stale.hidden) stale.textContent = `No update for ${duration(age / 1000)}: the numbers below are old.`;
  }, 5000);
  ctx.cleanup(() => clearInterval(timer));
  // The feed pauses while the page is hidden: coming back is not staleness.
  const onVisible = () => {
    if (!document.hidden && lastSeen) lastSeen = Date.now();
  };
  document.addEventListener('visibilitychange', onVisible);
  ctx.cleanup(() => document.removeEventListener('visibilitychange', onVisible));
}
