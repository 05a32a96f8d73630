// SPDX-License-Identifier: ISC
// Charts: uPlot, themed from the stylesheet's colours, sized to their box, with times in
// local time or UTC as the user chose. Every chart of the console goes through here (heat
// maps through heatmap.js, on the same uPlot, theme and time axis, from here).
//
//   const c = chart(el, {series: [{label: 'read', unit: 'ops/s'}], syncKey: 'ws-1'});
//   c.setData([xs, ys1, ...]);   // xs in epoch seconds (or plain numbers with time: false)
//   c.destroy();

import uPlot from '/vendor/uplot-1.6.32.esm.js';
import { num, prefs } from './dom.js';

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
//
// Beyond setData: setSeries() replaces the series (a drilldown's keys change as disks come
// and go), setWindow() pins x to a time window however the data falls in it, and
// plotWidth() is the drawing area in CSS pixels (to ask the server for as many points).
export function chart(el, opts = {}) {
  const time = opts.time !== false;
  const yFormat = opts.yFormat || ((v) => num(v));
  const axis = { stroke: css('--muted'), grid: { stroke: css('--chart-grid'), width: 1 }, ticks: { stroke: css('--chart-grid') } };
  const barPaths = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 60] }) : undefined;
  let spec = opts.series || [];
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
      points: { show: false },
      value: (u, v) => (v === null || v === undefined ? '–' : yFormat(v)),
    })),
  ];
  const make = (list, data) =>
    new uPlot(
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
          focus: { prox: 16 },
        },
        focus: { alpha: 0.3 },
        series: seriesOf(list),
        axes: [
          { ...axis, space: time ? 72 : 50, values: time ? timeTicks : (u, vals) => vals.map((v) => (opts.xFormat ? opts.xFormat(v) : num(v))) },
          { ...axis, size: 60, values: (u, vals) => vals.map((v) => yFormat(v)) },
        ],
        hooks: {
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
    // Pins the x scale to [min, max] (null: fit the data); applies with the next setData.
    setWindow(min, max) {
      win = min === null || min === undefined ? null : [min, max];
      if (win && u.data && u.data[0]) u.setScale('x', { min: win[0], max: win[1] });
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
