// SPDX-License-Identifier: ISC
// Heat maps: time across, buckets (ranges) up, each cell coloured by its value, as the
// appliance's Analytics draws I/O latency, size, offset and utilization. uPlot gives the
// axes, the time scale, the cursor (synced with the worksheet's other charts) and the
// drag-zoom; the cells are painted on its canvas, one fillRect per non-empty cell (or run
// of neighbours of one colour), grouped by colour, so 600 seconds x 100 buckets cost no
// DOM and one pass.
//
//   const m = heatmap(el, { yRange: () => [lo, hi], yTicks, yText, onCursor, syncKey });
//   m.setData({ xs, step, rows: [{ key, y0, y1, values }] });  // y0, y1: the row's extent
//   m.destroy();
//
// The y scale is in whatever units the caller lays its rows in (log2 of nanoseconds for
// latency); yTicks(min, max, count) and yText(v) label it.

import { css, timeTicks, tzDate, uPlot } from './chart.js';

const LEVELS = 32; // colours of the ramp: finer than the eye tells apart on a cell
const TICK_SPACE = 26; // px between y labels, at least
const DARK = '(prefers-color-scheme: dark)';

// '#rgb' or '#rrggbb' -> [r, g, b]; null for anything else.
function rgb(hex) {
  let m = /^#([0-9a-f]{6})$/i.exec(hex);
  if (m) return [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16));
  m = /^#([0-9a-f]{3})$/i.exec(hex);
  return m ? [...m[1]].map((c) => parseInt(c + c, 16)) : null;
}

// The stylesheet's ramp, few to many (--heat-low, --heat-mid, --heat-high: light to dark
// in the light scheme, as the appliance's, dim to bright in the dark one), in LEVELS
// steps. Level 0 is the least value drawn, still apart from the background.
export function ramp() {
  const stops = ['--heat-low', '--heat-mid', '--heat-high'].map((v) => rgb(css(v)));
  if (stops.some((s) => !s)) stops.splice(0, 3, [222, 235, 247], [66, 146, 198], [8, 48, 107]);
  const out = [];
  for (let l = 0; l < LEVELS; l++) {
    const t = (l / (LEVELS - 1)) * 2;
    const [a, b] = t <= 1 ? [stops[0], stops[1]] : [stops[1], stops[2]];
    const f = t <= 1 ? t : t - 1;
    out.push(`rgb(${a.map((x, i) => Math.round(x + (b[i] - x) * f)).join(',')})`);
  }
  return out;
}

// Paints the ramp across a canvas (the legend's), few at the left.
export function paintRamp(canvas, colours = ramp()) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width / colours.length;
  colours.forEach((c, i) => {
    ctx.fillStyle = c;
    ctx.fillRect(Math.floor(i * w), 0, Math.ceil(w), canvas.height);
  });
}

// opts:
//   yRange   () -> [min, max] of the y scale
//   yTicks   (min, max, count) -> tick values
//   yText    value -> axis label
//   height   px (default 240)
//   syncKey  charts with the same key share the cursor's time
//   onSelect (min, max) after a drag-zoom on x; the heat map is not zoomed itself
//   onCursor ({ t, y }) the second (a column's start) and the y value under the cursor, or
//            null when the cursor is not over this heat map (left it, or another chart
//            moved it)
//   onTheme  () after the colour scheme changed and the heat map was redrawn in it
//   label    the series' name (uPlot wants one)
//
// The element gets data-cells (how many cells the last paint drew) and data-rows.
export function heatmap(el, opts = {}) {
  let data = { xs: [], step: 1, rows: [], max: 0 };
  let win = null;
  let focusKey = null;
  let colours = ramp();
  const width = () => Math.max(200, Math.floor(el.clientWidth || el.getBoundingClientRect().width || 600));
  const level = (v) => Math.min(LEVELS - 1, Math.floor((v / data.max) * LEVELS));

  // The cells, behind the grid and the axes' lines.
  function paint(u) {
    const { rows, xs, step } = data;
    const n = xs.length;
    let cells = 0;
    if (n && rows.length && data.max > 0) {
      const { ctx } = u;
      const { left, top, width: w, height: hgt } = u.bbox;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, top, w, hgt);
      ctx.clip();
      // column edges once; rounded, so neighbours share an edge without seams
      const xe = new Float64Array(n + 1);
      for (let i = 0; i <= n; i++) xe[i] = Math.round(u.valToPos(xs[0] + i * step, 'x', true));
      const groups = Array.from({ length: LEVELS }, () => []);
      for (const r of rows) {
        const yt = Math.round(u.valToPos(r.y1, 'b', true));
        const h = Math.max(1, Math.round(u.valToPos(r.y0, 'b', true)) - yt);
        if (yt > top + hgt || yt + h < top) continue;
        // a run of neighbouring cells of one colour is one rectangle
        let runLevel = -1;
        let runFrom = 0;
        const flush = (to) => {
          if (runLevel >= 0) groups[runLevel].push(runFrom, yt, Math.max(1, to - runFrom), h);
          runLevel = -1;
        };
        for (let i = 0; i < n; i++) {
          const v = r.values[i];
          if (!(v > 0) || xe[i + 1] < left || xe[i] > left + w) {
            flush(xe[i]);
            continue;
          }
          const l = level(v);
          if (l !== runLevel) {
            flush(xe[i]);
            runLevel = l;
            runFrom = xe[i];
          }
          cells++;
        }
        flush(xe[n]);
      }
      for (let l = 0; l < LEVELS; l++) {
        const g = groups[l];
        if (!g.length) continue;
        ctx.fillStyle = colours[l];
        for (let j = 0; j < g.length; j += 4) ctx.fillRect(g[j], g[j + 1], g[j + 2], g[j + 3]);
      }
      ctx.restore();
    }
    el.dataset.cells = String(cells);
    el.dataset.rows = String(rows.length);
  }

  // The focused row (from the legend), outlined over the cells.
  function outline(u) {
    const r = focusKey === null ? null : data.rows.find((x) => x.key === focusKey);
    if (!r) return;
    const { ctx } = u;
    const { left, width: w } = u.bbox;
    const yt = Math.round(u.valToPos(r.y1, 'b', true));
    const yb = Math.round(u.valToPos(r.y0, 'b', true));
    ctx.save();
    ctx.strokeStyle = css('--text');
    ctx.lineWidth = Math.max(1, uPlot.pxRatio || 1);
    ctx.strokeRect(left + 0.5, yt - 1.5, w - 1, Math.max(1, yb - yt) + 3);
    ctx.restore();
  }

  // Where the cursor is, for the readout.
  function cursorMoved(u) {
    if (!opts.onCursor) return;
    const { left, top } = u.cursor;
    if (left === undefined || left < 0 || top < 0 || !data.xs.length) return opts.onCursor(null);
    const i = Math.floor((u.posToVal(left, 'x') - data.xs[0]) / data.step);
    if (i < 0 || i >= data.xs.length) return opts.onCursor(null);
    return opts.onCursor({ t: data.xs[i], y: u.posToVal(top, 'b') });
  }

  const make = () => {
    const axis = { stroke: css('--muted'), grid: { stroke: css('--chart-grid'), width: 1 }, ticks: { stroke: css('--chart-grid') } };
    return new uPlot(
      {
        width: width(),
        height: opts.height || 240,
        tzDate,
        scales: {
          x: { time: true, range: (u, min, max) => (win ? win.slice() : [min, max]) },
          b: { range: () => opts.yRange() },
        },
        legend: { show: false },
        cursor: {
          // the time is shared; the other charts' y means something else, so ours is not
          sync: opts.syncKey ? { key: opts.syncKey, setSeries: false, scales: ['x', null] } : undefined,
          drag: { x: !!opts.onSelect, y: false, setScale: false },
          points: { show: false },
        },
        series: [{}, { label: opts.label || 'cells', scale: 'b', paths: () => null, points: { show: false } }],
        axes: [
          { ...axis, space: 72, values: timeTicks },
          {
            ...axis,
            scale: 'b',
            size: 66,
            splits: (u, i, min, max) => opts.yTicks(min, max, Math.floor(u.bbox.height / (uPlot.pxRatio || 1) / TICK_SPACE)),
            values: (u, vals) => vals.map((v) => opts.yText(v)),
          },
        ],
        hooks: {
          drawClear: [paint],
          draw: [outline],
          setCursor: [cursorMoved],
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
      [data.xs, data.xs.map(() => null)],
      el,
    );
  };
  let u = make();
  const ro = new ResizeObserver(() => {
    const w = width();
    if (w !== u.width) u.setSize({ width: w, height: u.height });
  });
  ro.observe(el);
  // A change of scheme changes every colour: made again in the new one.
  const scheme = window.matchMedia(DARK);
  const onScheme = () => {
    colours = ramp();
    u.destroy();
    u = make();
    api.plot = u;
    if (opts.onTheme) opts.onTheme();
  };
  scheme.addEventListener('change', onScheme);

  const api = {
    plot: u,
    // rows: [{key, y0, y1, values}] with values on xs (null or 0: nothing drawn).
    setData({ xs, step, rows }) {
      let max = 0;
      for (const r of rows) for (const v of r.values) if (v > max) max = v;
      data = { xs, step: step || 1, rows, max };
      u.setData([xs, xs.map(() => null)], true);
    },
    get max() {
      return data.max;
    },
    // The ramp's colour of value v on the current scale (legend swatches).
    colour(v) {
      return v > 0 && data.max > 0 ? colours[level(v)] : 'transparent';
    },
    colours: () => colours,
    setWindow(min, max) {
      win = min === null || min === undefined ? null : [min, max];
      if (win && u.data && u.data[0]) u.setScale('x', { min: win[0], max: win[1] });
    },
    plotWidth() {
      return Math.max(50, width() - 76);
    },
    // Outlines the row of key (null: none).
    focusRow(key) {
      focusKey = key;
      u.redraw(false, false);
    },
    destroy() {
      scheme.removeEventListener('change', onScheme);
      ro.disconnect();
      u.destroy();
    },
  };
  return api;
}
