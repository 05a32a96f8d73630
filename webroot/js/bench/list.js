// SPDX-License-Identifier: ISC
// #/bench: the runs, newest first, filtered by label and state, with checkboxes to pick
// runs for a comparison. The list refreshes while a run is live.

import { can, get, qs } from '../api.js';
import { clear, duration, field, h, num, timeEl } from '../dom.js';
import { go } from '../app.js';
import { BASE, LIVE, STATES, jobSeconds, nsText, result, stateBadge, worstP99 } from './common.js';

const REFRESH_MS = 3000;

export async function render(main, ctx) {
  const picked = new Set((ctx.query.get('ids') || '').split(',').filter(Boolean).map(Number));
  const label = field('bench-filter-label', 'Label contains', h('input', { type: 'search', value: ctx.query.get('label') || '', autocomplete: 'off' }));
  const state = field(
    'bench-filter-state',
    'State',
    h('select', {}, h('option', { value: '', text: 'Any state' }), STATES.map((s) => h('option', { value: s, text: s, selected: ctx.query.get('state') === s }))),
  );
  const compare = h('button', { type: 'button', class: 'primary', id: 'bench-compare', text: 'Compare' });
  const pickNote = h('p', { class: 'hint', id: 'bench-pick-note', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const empty = h('p', { class: 'muted', hidden: true, id: 'bench-empty' });
  const error = h('p', { class: 'error', role: 'alert' });
  const table = h(
    'table',
    { class: 'stack bench-runs', id: 'bench-runs' },
    h('caption', { class: 'visually-hidden', text: 'Benchmark runs, newest first. p99 is the slower direction’s.' }),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Pick' })), ['Run', 'Label', 'Pattern', 'State', 'Started', 'Duration'].map((t) => h('th', { scope: 'col', text: t })), h('th', { scope: 'col', class: 'num', text: 'IOPS' }), h('th', { scope: 'col', class: 'num', text: 'p99' }))),
    tbody,
  );

  main.append(
    h(
      'div',
      { class: 'toolbar' },
      h('h1', { text: 'Benchmarks' }),
      h('span', { class: 'spacer' }),
      h('a', { class: 'button', href: '#/bench/sweeps', id: 'bench-sweeps-link', text: 'Sweeps' }),
      can('bench:run') ? h('a', { class: 'button primary', href: '#/bench/new', id: 'bench-new-link', text: 'New run' }) : null,
    ),
    h('form', { class: 'bench-filters', role: 'search', 'aria-label': 'Filter runs', on: { submit: (e) => e.preventDefault() } }, label.wrap, state.wrap, h('div', { class: 'bench-compare-box' }, compare, pickNote)),
    error,
    h('div', { class: 'table-wrap' }, table),
    empty,
  );

  let jobs = [];
  let timer = 0;

  const updatePick = () => {
    compare.disabled = picked.size < 2;
    pickNote.textContent = picked.size < 2 ? `Pick two or more finished runs to compare (${picked.size} picked).` : `${picked.size} runs picked.`;
  };
  compare.addEventListener('click', () => {
    const ids = [...picked].sort((a, b) => a - b);
    if (ids.length >= 2) go(`bench/compare?ids=${ids.join(',')}&baseline=${ids[0]}`);
  });

  // The filters live in the route, so a reload or a link keeps them.
  const keepRoute = () => {
    const q = {};
    if (label.input.value) q.label = label.input.value;
    if (state.input.value) q.state = state.input.value;
    history.replaceState(null, '', `#/bench${qs(q)}`);
  };

  const p99Cell = (job, td) => {
    if (!job.summary) return; // no result kept: nothing to ask for
    result(job.id, ctx.signal)
      .then((r) => {
        td.textContent = nsText(worstP99(r));
      })
      .catch(() => {
        /* no result kept (a run cancelled before its first second) */
      });
  };

  const draw = () => {
    const want = label.input.value.trim().toLowerCase();
    const shown = jobs.filter((j) => !want || (j.label || '').toLowerCase().includes(want) || (j.name || '').toLowerCase().includes(want));
    clear(tbody);
    for (const j of shown) {
      const comparable = j.state === 'done';
      const box = h('input', {
        type: 'checkbox',
        checked: picked.has(j.id),
        disabled: !comparable,
        'aria-label': `Pick run ${j.id}${j.label ? ` (${j.label})` : ''} to compare`,
        dataset: { id: String(j.id) },
        on: {
          change: (e) => {
            if (e.target.checked) picked.add(j.id);
            else picked.delete(j.id);
            updatePick();
          },
        },
      });
      const p99 = h('td', { class: 'num', 'data-label': 'p99', text: '–' });
      const iops = j.summary && typeof j.summary.iops === 'number' ? num(j.summary.iops) : '–';
      tbody.append(
        h(
          'tr',
          { dataset: { id: String(j.id), state: j.state } },
          h('td', { 'data-label': 'Pick', class: 'pick' }, h('label', { class: 'pick-tap' }, box)),
          h('td', { 'data-label': 'Run' }, h('a', { href: `#/bench/jobs/${j.id}`, text: `#${j.id}` }),
            can('bench:run') && j.spec ? [' ', h('a', { class: 'again', href: `#/bench/new?from=${j.id}`, 'aria-label': `Run #${j.id} again with changes`, text: 'again' })] : null),
          h('td', { 'data-label': 'Label', text: j.label || j.name || '–' }),
          h('td', { 'data-label': 'Pattern', text: j.spec ? j.spec.pattern : '–' }),
          h('td', { 'data-label': 'State' }, stateBadge(j.state)),
          h('td', { 'data-label': 'Started' }, j.started ? timeEl(j.started) : '–'),
          h('td', { 'data-label': 'Duration', text: duration(jobSeconds(j)) }),
          h('td', { class: 'num', 'data-label': 'IOPS', text: iops }),
          p99,
        ),
      );
      p99Cell(j, p99);
    }
    empty.hidden = shown.length > 0;
    empty.textContent = jobs.length ? 'No run matches these filters.' : can('bench:run') ? 'No runs yet. Start one with “New run”.' : 'No runs yet.';
    updatePick();
  };

  const load = async () => {
    clearTimeout(timer);
    try {
      const doc = await get(`${BASE}/jobs${qs({ limit: 1000, state: state.input.value || null })}`, { signal: ctx.signal });
      jobs = doc.jobs.slice().sort((a, b) => b.id - a.id);
      error.textContent = '';
      draw();
    } catch (e) {
      if (e.name === 'AbortError' || ctx.signal.aborted) return;
      error.textContent = `Cannot list the runs: ${e.details || e.message}`;
    }
    if (!ctx.signal.aborted && jobs.some((j) => LIVE.has(j.state))) timer = setTimeout(load, REFRESH_MS);
  };

  label.input.addEventListener('input', () => {
    keepRoute();
    draw();
  });
  state.input.addEventListener('change', () => {
    keepRoute();
    load();
  });
  const onVisible = () => {
    if (!document.hidden) load();
    else clearTimeout(timer);
  };
  document.addEventListener('visibilitychange', onVisible);
  ctx.cleanup(() => {
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
  });

  updatePick();
  await load();
  ctx.ready();
}
