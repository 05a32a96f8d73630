// SPDX-License-Identifier: ISC
// Problems: every open problem, worst first, with what it means (impact), what to do
// (action), since when, and its component: a link to that disk on the Hardware page and a
// Locate button for whoever may light its LED. The list follows the dashboard document:
// a problem raised or cleared shows up within a second or two.

import { h, timeEl } from '../dom.js';
import { subscribe } from '../live.js';
import { component, componentLink, loadProblems, locateButton, problemsKey, severityBadge } from '../problems.js';

function card(p, signal) {
  const c = component(p);
  const link = componentLink(c);
  return h(
    'li',
    { class: 'card problem-card', dataset: { problem: p.uuid, severity: p.severity } },
    h('div', { class: 'problem-head' }, severityBadge(p.severity), h('h2', { class: 'problem-title', text: p.description })),
    h(
      'dl',
      { class: 'problem-facts' },
      p.impact && p.impact !== p.description ? [h('dt', { text: 'Impact' }), h('dd', { text: p.impact })] : null,
      p.action && p.action !== 'None.' ? [h('dt', { text: 'Action' }), h('dd', { text: p.action })] : null,
      link ? [h('dt', { text: 'Component' }), h('dd', {}, link)] : null,
      [h('dt', { text: 'Since' }), h('dd', {}, timeEl(p.first_seen), p.last_seen && p.last_seen !== p.first_seen ? [' · last seen ', timeEl(p.last_seen)] : null)],
      [h('dt', { text: 'Code' }), h('dd', { class: 'mono muted', text: [p.code, p.type].filter(Boolean).join(' · ') })],
    ),
    c ? locateButton(c.href, link ? link.textContent : 'the component', signal) : null,
  );
}

export async function render(main, ctx) {
  const summary = h('span', { id: 'problems-summary' });
  const checkedEl = h('span', { id: 'problems-checked' });
  const list = h('ul', { class: 'problem-cards', id: 'problem-cards' });
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  main.append(h('h1', { text: 'Problems' }), h('p', { class: 'muted' }, summary, ' ', checkedEl), error, list);

  let key = null;
  const draw = (problems) => {
    list.replaceChildren(...problems.map((p) => card(p, ctx.signal)));
    const n = problems.length;
    summary.textContent = n ? `${n} open problem${n === 1 ? '' : 's'}, the worst first.` : 'No open problems: all good.';
  };
  const load = async () => {
    try {
      const problems = await loadProblems(ctx.signal);
      error.hidden = true;
      draw(problems);
    } catch (e) {
      if (e.name === 'AbortError' || e.status === 401) return;
      error.hidden = false;
      error.textContent = `Cannot read the problems: ${e.details || e.message}`;
    }
  };
  await load();
  ctx.ready();
  // The dashboard document names the newest open problems and counts them all: a change
  // in either is a problem raised or cleared.
  ctx.cleanup(
    subscribe((doc) => {
      if (doc.time) checkedEl.replaceChildren('Checked ', timeEl(doc.time), '.');
      const now = problemsKey(doc);
      if (key !== null && now !== key) load();
      key = now;
    }),
  );
}
