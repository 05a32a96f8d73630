// SPDX-License-Identifier: ISC
// A worksheet chart drawn as a heat map (buckets.js heatKind() says which are): the heat
// map, its colour scale ("ops/s per range: 0 [ramp] max") and a readout of the cell under
// the cursor: its range, time and value. The readout stays when the cursor leaves, so a
// tap on a phone pins it, and it follows the data as the window moves on.

import { h, num, timeEl } from '../dom.js';
import { heatmap, paintRamp } from '../heatmap.js';
import { axisText, rangeText, rowAt, rows, ticks, valueNoun, yRange } from './buckets.js';

const HINT = 'Point at a cell, or tap it, to read its range, time and value.';

// kind: heatKind()'s; name, unit: the dataset's. The heat map goes in plotEl, the scale
// and the readout in foot. Returns the API the worksheet uses for its charts (draw,
// plotWidth, focus, destroy) and colour(v) for the legend's swatches.
export function heatChart(plotEl, foot, { kind, name, unit, syncKey, onSelect, height }) {
  const noun = valueNoun(name, unit);
  const fmt = (v) => `${num(v)}${noun ? `\u00a0${noun}` : ''}`;
  let list = []; // the rows, lowest range first, with their values
  let range = yRange(kind, []);
  let shaped = null;
  let pinned = null; // {t, y}: the second and the place on the bucket axis the readout shows

  const rampEl = h('canvas', { class: 'ws-heat-ramp', width: 128, height: 12, 'aria-hidden': 'true' });
  const maxEl = h('span', { class: 'ws-heat-max', text: '0' });
  // what dark means: the ramp runs light to dark in the light scheme, dim to bright in the
  // dark one (the stylesheet shows the sentence of the scheme in use)
  const scale = h(
    'p',
    { class: 'ws-heat-scale' },
    h('span', { text: `${noun || 'Count'} per range:` }),
    h('span', { class: 'ws-heat-zero', text: '0' }),
    rampEl,
    maxEl,
    h('span', { class: 'ws-heat-more ws-heat-light', text: 'darker: more' }),
    h('span', { class: 'ws-heat-more ws-heat-dark', text: 'brighter: more' }),
  );
  const rangeEl = h('span', { class: 'ws-heat-range' });
  const timeOut = h('span', { class: 'ws-heat-time' });
  const valueEl = h('span', { class: 'ws-heat-value' });
  const hint = h('span', { class: 'ws-heat-hint', text: HINT });
  const readout = h('p', { class: 'ws-heat-readout' }, hint, rangeEl, timeOut, valueEl);
  foot.replaceChildren(scale, readout);

  // The readout of the pinned cell, from the data as it is now.
  function show() {
    const i = pinned && shaped ? Math.floor((pinned.t - shaped.xs[0]) / shaped.step) : -1;
    if (i < 0 || i >= shaped.xs.length) {
      pinned = null;
      hint.hidden = false;
      for (const el of [rangeEl, timeOut, valueEl]) el.replaceChildren();
      return;
    }
    // no row there: no key in the window holds that place, so none of its seconds had any
    const row = rowAt(list, pinned.y);
    const t = shaped.xs[i];
    const v = row ? row.values[i] : null;
    hint.hidden = true;
    rangeEl.textContent = row ? rangeText(kind, row) : `≈\u00a0${axisText(kind, pinned.y)}`;
    timeOut.replaceChildren(
      timeEl(t),
      shaped.step > 1 ? ' – ' : '',
      shaped.step > 1 ? timeEl(t + shaped.step, { date: false }) : '',
    );
    // a bucket without a key in a second that was sampled had nothing in it
    if (v !== null && v !== undefined) valueEl.textContent = fmt(v);
    else valueEl.textContent = shaped.sampled && shaped.sampled[i] ? fmt(0) : 'no sample';
  }

  const m = heatmap(plotEl, {
    yRange: () => range,
    yTicks: (min, max, count) => ticks(kind, min, max, count),
    yText: (v) => axisText(kind, v),
    height,
    syncKey,
    onSelect,
    label: name,
    onCursor: (at) => {
      if (!at) return; // left the heat map, or another chart moved the cursor: kept
      pinned = at;
      show();
    },
    onTheme: () => paintRamp(rampEl, m.colours()),
  });
  paintRamp(rampEl, m.colours());

  return {
    // Draws series.js shape()'s answer in [start, end); returns the rows, lowest first.
    draw(data, window) {
      shaped = data;
      const values = new Map(data.keys.map((k) => [k.key, k.values]));
      list = rows(kind, [...values.keys()]).map((r) => ({ ...r, values: values.get(r.key) }));
      range = yRange(kind, list);
      m.setWindow(window[0], window[1]);
      m.setData({ xs: data.xs, step: data.step, rows: list });
      maxEl.textContent = num(m.max);
      show();
      return list;
    },
    colour: (v) => m.colour(v),
    format: (v) => num(v),
    noun,
    plotWidth: () => m.plotWidth(),
    // i: the index of a row in draw()'s answer (the legend's order), or null
    focus(i) {
      m.focusRow(i === null || !list[i] ? null : list[i].key);
    },
    destroy() {
      m.destroy();
      foot.replaceChildren();
    },
  };
}
