// SPDX-License-Identifier: ISC
// Analytics retention: how long second, minute and hour data are kept, in hours, each
// with its limits and the same span in days. The server checks the values; its fault
// shows next to the field it names.

import { can, get, put } from '../api.js';
import { field, h, showFault, toast } from '../dom.js';

const MAX = 87600;
const SETTINGS = [
  ['retain_second_data', 'Second data', 'Per-second samples: the live charts and the last minutes in detail.', 24],
  ['retain_minute_data', 'Minute data', 'One-minute rollups: hours to weeks.', 336],
  ['retain_hour_data', 'Hour data', 'One-hour rollups: months to years.', 8760],
];

// 336 -> "14 days"; 30 -> "1 day 6 hours".
export function span(hours) {
  if (!Number.isInteger(hours) || hours < 1) return '';
  const d = Math.floor(hours / 24);
  const hh = hours % 24;
  const parts = [];
  if (d >= 365 && d % 365 === 0 && !hh) return `${d / 365} year${d === 365 ? '' : 's'}`;
  if (d) parts.push(`${d} day${d === 1 ? '' : 's'}`);
  if (hh) parts.push(`${hh} hour${hh === 1 ? '' : 's'}`);
  return parts.join(' ');
}

export async function render(section, ctx) {
  const current = (await get('/api/analytics/v1/settings', { signal: ctx.signal })).settings;
  const mayChange = can('settings:modify');
  const fields = {};
  const wraps = SETTINGS.map(([key, label, what, dflt]) => {
    const input = h('input', { name: key, type: 'number', inputmode: 'numeric', min: 1, max: MAX, step: 1, value: current[key], disabled: !mayChange, class: 'hours' });
    const f = field(`set-${key}`, label, input, `${what} Hours, 1 to ${MAX}; default ${dflt} (${span(dflt)}).`);
    const equals = h('span', { class: 'muted equals', id: `set-${key}-span`, 'aria-live': 'polite' });
    const show = () => {
      const v = Number(input.value);
      equals.textContent = input.value !== '' && Number.isInteger(v) && v >= 1 ? `hours = ${span(v)}` : 'hours';
    };
    input.addEventListener('input', show);
    show();
    // The control and its unit side by side, the hint and fault below.
    const row = h('div', { class: 'row unit' });
    input.replaceWith(row);
    row.append(input, equals);
    fields[key] = f;
    return f.wrap;
  });
  const error = h('p', { class: 'error', role: 'alert' });
  const save = h('button', { type: 'submit', class: 'primary', text: 'Save', disabled: !mayChange });
  const form = h(
    'form',
    { id: 'retention', class: 'card settings', novalidate: true, 'aria-labelledby': 'retention-title' },
    h('h3', { id: 'retention-title', text: 'Analytics retention' }),
    h('p', { class: 'muted', text: 'Data older than this is pruned soon after a change, in small steps. Longer retention costs disk space in the state directory.' }),
    wraps,
    mayChange ? null : h('p', { class: 'muted', text: 'Changing these needs the settings:modify authorization.' }),
    error,
    h('div', { class: 'row' }, save),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {};
    for (const [key, label] of SETTINGS) {
      const input = fields[key].input;
      const v = Number(input.value);
      if (input.value === '' || !Number.isInteger(v)) {
        // Not a number at all (a number input holds '' then): the server never sees it.
        showFault({ field: key, details: `${key}: ${label.toLowerCase()} needs a whole number of hours, 1 to ${MAX}` }, fields, error);
        return;
      }
      body[key] = v;
    }
    save.disabled = true;
    try {
      const now = (await put('/api/analytics/v1/settings', body)).settings;
      for (const [key] of SETTINGS) fields[key].input.value = now[key];
      showFault(null, fields, error);
      toast('Retention saved');
    } catch (e) {
      showFault(e, fields, error);
    } finally {
      save.disabled = false;
    }
  });
  section.append(form);
  ctx.ready();
}
