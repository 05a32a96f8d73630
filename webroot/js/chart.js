// SPDX-License-Identifier: ISC
// Charts: uPlot, themed from the stylesheet's colours, sized to their box, with times in
// local time or UTC as the user chose. Every chart of the console goes through here (heat
// maps through heatmap.js, on the same uPlot, theme and time axis, from here).
//
//   const c = chart(el, {series: [{label: 'read', unit: 'ops/s'}], syncKey: 'ws-1'});
//   c.setData([xs, ys1, ...]);   // xs in epoch seconds (or plain numbers with time: false)
//   c.destroy();

import uPlot from '/vendor/uplot-1.6.32.esm.js';
import { append, clear, h, num, prefs, time as timeText } from './dom.js';

export { uPlot };

// Distinct hues that keep contrast on light and dark backgrounds.
const PALETTE = ['#1f77b4', '#e8710a', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
  '#7f7f7f', '#bcbd22', '#17becf', '#3d5a80', '#ee6c4d'];

export function colour(i) {
  return PALETTE[i % PALETTE.length];
}

// A colour (or any value) of the stylesheet's, for the current scheme.
export function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Times in the zone the user chose.
export function tzDate(ts) {
  return prefs.utc ? uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') : new Date(ts * 1e3);
}

// Time axis labels in 24-hour time, as dom.js time() writes them, in the zone the user
// chose; the date under the first tick and wherever the day changes.
export function timeTicks(u, splits, axisIdx, space, incr) {
  const pad = (n) => String(n).padStart(2, '0');
  let lastDay = null;
  return splits.map((ts) => {
    const d = tzDate(ts);
    const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const clock = incr < 60 ? `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    const newDay = day !== lastDay;
    lastDay = day;
    if (incr >= 86400) return day.slice(5) + (newDay && splits[0] === ts ? `\n${d.getFullYear()}` : '');
    return newDay ? `${clock}\n${day.slice(5)}` : clock;
  });
}

const TIP_ROWS = 10; // series named in the readout at most (the largest, when more)

// The readout under the cursor (a tap on a touch screen puts the cursor there and leaves
// it): the time, then each shown series' value at it, in the chart's units. Text only;
// hidden from screen readers, which have the legend's tables.
function readout(u, yFormat, xText) {
  const tip = h('div', { class: 'chart-tip', hidden: true, 'aria-hidden': 'true' });
  u.over.append(tip);
  return () => {
    const i = u.cursor.idx;
    if (i === null || i === undefined || u.cursor.left < 0) {
      tip.hidden = true;
      return;
    }
    const rows = [];
    for (let s = 1; s < u.series.length; s++) {
      const v = u.data[s] ? u.data[s][i] : null;
      if (u.series[s].show && v !== null && v !== undefined) rows.push([s, v]);
    }
    if (rows.length > TIP_ROWS) rows.sort((a, b) => b[1] - a[1]);
    const shown = rows.slice(0, TIP_ROWS);
    append(clear(tip), [
      h('div', { class: 'chart-tip-x', text: xText(u.data[0][i]) }),
      ...shown.map(([s, v]) => {
        const sw = h('span', { class: 'chart-tip-sw' });
        const stroke = u.series[s]._stroke || u.series[s].stroke;
        if (typeof stroke === 'string') sw.style.setProperty('--swatch', stroke);
        return h('div', { class: 'chart-tip-row', dataset: { series: String(s - 1) } }, sw, h('span', { class: 'chart-tip-label', text: u.series[s].label }), h('span', { class: 'chart-tip-value', text: yFormat(v) }));
      }),
      rows.length > shown.length ? h('div', { class: 'chart-tip-more', text: `and ${rows.length - shown.length} more` }) : null,
      rows.length ? null : h('div', { class: 'chart-tip-more', text: 'no sample' }),
    ]);
    tip.hidden = false;
    const w = tip.offsetWidth;
    const room = u.over.clientWidth;
    let left = u.cursor.left + 14;
    if (left + w > room) left = Math.max(0, u.cursor.left - 14 - w);
    tip.style.left = `${left}px`;
    tip.style.top = `${Math.max(0, Math.min(u.cursor.top + 14, u.over.clientHeight - tip.offsetHeight))}px`;
  };
}

// Dashed vertical lines at marks' x inside the plot, each labelled at its top.
function drawMarks(u, marks) {
  if (!marks.length) return;
  const { ctx } = u;
  const { top, height, left, width } = u.bbox;
  const dpr = devicePixelRatio || 1;
  ctx.save();
  ctx.font = `${Math.round(11 * dpr)}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  for (const m of marks) {
    const x = Math.round(u.valToPos(m.x, 'x', true));
    if (x < left || x > left + width) continue;
    const stroke = m.colour || css('--text');
    ctx.strokeStyle = stroke;
    ctx.fillStyle = stroke;
    ctx.lineWidth = 1.5 * dpr;
    ctx.setLineDash([5 * dpr, 4 * dpr]);
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    if (m.label) {
      const w = ctx.measureText(m.label).width;
      ctx.fillText(m.label, Math.min(x + 4 * dpr, left + width - w), top + 2 * dpr);
    }
  }
  ctx.restore();
}

// opts:
//   series   [{label, unit, colour, width, fill, bars, show}]
//   height   px (default 220)
//   time     x is epoch seconds (default true)
//   syncKey  charts with the same key share the cursor
//   onSelect (min, max) after a drag-zoom on x; the chart is not zoomed itself
//   yFormat  value -> text for the axis and tooltips (default num)
//   xFormat  value -> text when time is false
//   bars     draw every series as bars
//   yZero    the y axis starts at 0 unless a value is below it
//   marks    [{x, label, colour}]: dashed vertical lines at those x, labelled at the top
//            (a sweep's knee); setMarks() replaces them
//   onCursor (i) with the index into the data under the cursor (or a tap's pin), null once
//            it leaves; also when new data moves under a still cursor: a legend table can
//            show the values there (cursor() asks the same)
//
// A series may ask for points: true (a few measured points, each shown).
// Beyond setData: setSeries() replaces the series (a drilldown's keys change as disks come
// and go), setWindow() pins x to a time window however the data falls in it, and
// plotWidth() is the drawing area in CSS pixels (to ask the server for as many points).
export function chart(el, opts = {}) {
  const time = opts.time !== false;
  const yFormat = opts.yFormat || ((v) => num(v));
  const axis = { stroke: css('--muted'), grid: { stroke: css('--chart-grid'), width: 1 }, ticks: { stroke: css('--chart-grid') } };
  const barPaths = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 60] }) : undefined;
  let spec = opts.series || [];
  let marks = opts.marks || [];
  let win = null; // [min, max] of x, or null to fit the data
  const width = () => Math.max(200, Math.floor(el.clientWidth || el.getBoundingClientRect().width || 600));
  const seriesOf = (list) => [
    time ? {} : { value: (u, v) => (opts.xFormat ? opts.xFormat(v) : num(v)) },
    ...list.map((s, i) => ({
      label: s.label,
      stroke: s.colour || colour(i),
      width: s.width || (list.length > 12 ? 1 : 1.5), // fractional widths cost: thin lines when many
      fill: s.fill || (opts.bars || s.bars ? `${s.colour || colour(i)}99` : undefined),
      paths: opts.bars || s.bars ? barPaths : undefined,
      show: s.show !== false,
      spanGaps: false,
      points: s.points ? { show: true, size: 7 } : { show: false },
      value: (u, v) => (v === null || v === undefined ? '–' : yFormat(v)),
    })),
  ];
  const cursorAt = (u) => {
    const i = u.cursor.idx;
    return i === null || i === undefined || u.cursor.left < 0 ? null : i;
  };
  const make = (list, data) => {
    let showReadout = () => {};
    const cursorMoved = (u) => {
      showReadout();
      if (opts.onCursor) opts.onCursor(cursorAt(u));
    };
    // A tap leaves the readout where it was tapped (the page moving under the finger, or
    // the browser's own mouse events after a tap, would otherwise hide it) until a tap or
    // click elsewhere.
    let pinned = false;
    let unpin = null;
    return new uPlot(
      {
        width: width(),
        height: opts.height || 220,
        tzDate: time ? tzDate : undefined,
        scales: {
          x: { time, range: (u, min, max) => (win ? win.slice() : [min, max]) },
          y: opts.yZero
            ? {
                range: (u, min, max) => {
                  const lo = Math.min(0, min ?? 0);
                  const hi = Math.max(max ?? 0, lo + 1);
                  return uPlot.rangeNum(lo, hi, 0.1, true);
                },
              }
            : {},
        },
        legend: { show: false },
        cursor: {
          sync: opts.syncKey ? { key: opts.syncKey, setSeries: false } : undefined,
          drag: { x: !!opts.onSelect, y: false, setScale: false },
          bind: {
            mouseleave: (self, targ, handler) => (e) => {
              if (!pinned && e.target === targ) handler(e);
            },
          },
          focus: { prox: 16 },
        },
        focus: { alpha: 0.3 },
        series: seriesOf(list),
        axes: [
          { ...axis, space: time ? 72 : 50, values: time ? timeTicks : (u, vals) => vals.map((v) => (opts.xFormat ? opts.xFormat(v) : num(v))) },
          { ...axis, size: 60, values: (u, vals) => vals.map((v) => yFormat(v)) },
        ],
        hooks: {
          init: [
            (u) => {
              showReadout = readout(u, yFormat, (x) => (time ? timeText(x) : opts.xFormat ? opts.xFormat(x) : num(x)));
              u.over.addEventListener('pointerdown', (e) => {
                pinned = e.pointerType === 'touch';
              });
              unpin = (e) => {
                if (!pinned || u.over.contains(e.target)) return;
                pinned = false;
                u.setCursor({ left: -10, top: -10 });
              };
              document.addEventListener('pointerdown', unpin, true);
            },
          ],
          destroy: [() => document.removeEventListener('pointerdown', unpin, true)],
          draw: [(u) => drawMarks(u, marks)],
          setCursor: [(u) => cursorMoved(u)],
          setData: [(u) => cursorMoved(u)], // live data moves under a still cursor
          setSelect: [
            (u) => {
              if (!opts.onSelect || u.select.width < 5) return;
              const min = u.posToVal(u.select.left, 'x');
              const max = u.posToVal(u.select.left + u.select.width, 'x');
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              opts.onSelect(min, max);
            },
          ],
        },
      },
      data || [[], ...list.map(() => [])],
      el,
    );
  };
  let u = make(spec);
  const ro = new ResizeObserver(() => {
    const w = width();
    if (w !== u.width) u.setSize({ width: w, height: u.height });
  });
  ro.observe(el);
  const same = (a, b) =>
    a.length === b.length && a.every((s, i) => s.label === b[i].label && (s.colour || null) === (b[i].colour || null));
  const api = {
    plot: u,
    setData(data, resetScales = true) {
      u.setData(data, resetScales);
    },
    // New series; the plot is rebuilt only if their labels or colours changed.
    setSeries(list, data) {
      if (same(spec, list)) {
        if (data) u.setData(data);
        return;
      }
      spec = list;
      u.destroy();
      u = make(spec, data);
      api.plot = u;
    },
    setMarks(list) {
      marks = list || [];
      u.redraw(false);
    },
    // Pins the x scale to [min, max] (null: fit the data); applies with the next setData.
    setWindow(min, max) {
      win = min === null || min === undefined ? null : [min, max];
      if (win && u.data && u.data[0]) u.setScale('x', { min: win[0], max: win[1] });
    },
    // The index into the data under the cursor, or null.
    cursor() {
      return cursorAt(u);
    },
    plotWidth() {
      return Math.max(50, width() - 70);
    },
    // Focus one series (index from 0 over opts.series), or none with null.
    focus(i) {
      u.setSeries(i === null ? null : i + 1, { focus: true });
    },
    show(i, on) {
      u.setSeries(i + 1, { show: on });
    },
    setScale(min, max) {
      u.setScale('x', { min, max });
    },
    destroy() {
      ro.disconnect();
      u.destroy();
    },
  };
  return api;
}

// The tiles' sparkline lives in its own module, so the dashboard loads without uPlot.
export { sparkline } from './spark.js';
