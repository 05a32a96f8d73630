// SPDX-License-Identifier: ISC
// The sparkline of the dashboard's tiles, apart from chart.js so that the dashboard (the
// page a phone opens first) does not load uPlot: about 145 KB of its cold load of 225 KB.

// A sparkline as a small SVG path (no axes; for tiles): values oldest first, nulls skipped.
export function sparkline(values, { width = 120, height = 32, label = '' } = {}) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const path = document.createElementNS(ns, 'path');
  svg.append(path);
  const set = (vals) => {
    const v = (vals || []).map((x) => (typeof x === 'number' ? x : null));
    const max = Math.max(1, ...v.filter((x) => x !== null));
    const step = v.length > 1 ? width / (v.length - 1) : width;
    let d = '';
    let pen = false;
    v.forEach((x, i) => {
      if (x === null) {
        pen = false;
        return;
      }
      const y = height - 1 - (x / max) * (height - 2);
      d += `${pen ? 'L' : 'M'}${(i * step).toFixed(1)} ${y.toFixed(1)}`;
      pen = true;
    });
    path.setAttribute('d', d);
  };
  set(values);
  return { el: svg, set };
}
