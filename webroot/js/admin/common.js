// SPDX-License-Identifier: ISC
// What the Administration tabs share: a table that stacks on a phone, a confirmation
// dialog, and the words for each authorization.

import { h } from '../dom.js';

// What each authorization lets its holder do, for the role editor and the user list.
export const AUTHORIZATIONS = {
  'stat:read': 'Read the dashboard, analytics data and the retention settings',
  'worksheet:read': 'Open analytics worksheets',
  'worksheet:modify': 'Save, rename and delete analytics worksheets',
  'hardware:read': 'See the chassis, enclosures and disks',
  'hardware:locate': 'Turn locator LEDs on and off',
  'bench:read': 'See benchmark jobs and their results',
  'bench:run': 'Queue and cancel benchmark jobs',
  'user:read': 'See users, roles, API tokens and the audit log',
  'user:modify': 'Create, change and delete users and their API tokens',
  'role:modify': 'Create, change and delete roles',
  'settings:modify': 'Change analytics retention and the collected datasets',
};

// A table with a caption that turns into labelled blocks at phone width (table.stack):
// columns [{label, num, key}], rows of cells (strings, nodes or arrays), one per column.
export function stackTable(caption, columns, rows, { rowData } = {}) {
  const head = h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null, text: c.label }))));
  const body = h(
    'tbody',
    {},
    rows.map((cells, i) =>
      h(
        'tr',
        { dataset: rowData ? rowData[i] : undefined },
        cells.map((cell, j) => h('td', { class: [columns[j].num && 'num', columns[j].key && `col-${columns[j].key}`], 'data-label': columns[j].label }, cell)),
      ),
    ),
  );
  return h('div', { class: 'table-wrap' }, h('table', { class: 'stack admin-table' }, h('caption', { class: 'visually-hidden', text: caption }), head, body));
}

// Asks before something that cannot be undone. Resolves true when the user confirms;
// Escape, Cancel or a click on the backdrop resolve false.
let dialogCount = 0;
export function confirmDialog(title, text, action = 'Delete') {
  const id = `confirm-${++dialogCount}`;
  const yes = h('button', { type: 'button', class: 'danger', text: action });
  const no = h('button', { type: 'button', text: 'Cancel' });
  const dlg = h(
    'dialog',
    { class: 'confirm card', 'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-text` },
    h('h2', { id: `${id}-title`, text: title }),
    h('p', { id: `${id}-text`, text }),
    h('div', { class: 'row end' }, no, yes),
  );
  document.body.append(dlg);
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'yes');
    });
    dlg.addEventListener('click', (e) => {
      if (e.target === dlg) dlg.close('no');
    });
    yes.addEventListener('click', () => dlg.close('yes'));
    no.addEventListener('click', () => dlg.close('no'));
    dlg.showModal();
    no.focus();
  });
}

// A card holding one form at a time above a tab's list (create, edit, reset).
export function formPanel() {
  const panel = h('section', { class: 'card admin-form', hidden: true });
  return {
    panel,
    show(title, form) {
      const headingId = `${form.id || 'admin-form'}-title`;
      panel.replaceChildren(h('h2', { id: headingId, text: title }), form);
      panel.setAttribute('aria-labelledby', headingId);
      panel.hidden = false;
      panel.scrollIntoView({ block: 'nearest' });
      const first = form.querySelector('input:not([type=hidden]):not([disabled]), select, textarea');
      if (first) first.focus();
    },
    hide() {
      panel.hidden = true;
      panel.replaceChildren();
    },
  };
}

// The buttons at the bottom of a form: submit and cancel.
export function formButtons(label, onCancel) {
  return h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', text: label }), h('button', { type: 'button', text: 'Cancel', on: { click: onCancel } }));
}

// A group of checkboxes (roles of a user, authorizations of a role) with one place for
// the fault about the group. items: [{value, label, hint}]. Returns {wrap, input, error,
// values()}; input is the first box (where showFault puts the focus).
export function checkGroup(id, legend, items, checked = []) {
  const error = h('p', { class: 'field-error', id: `${id}-error`, role: 'alert' });
  const boxes = items.map((it, i) => {
    const boxId = `${id}-${i}`;
    const box = h('input', { type: 'checkbox', id: boxId, value: it.value, checked: checked.includes(it.value), 'aria-describedby': it.hint ? `${boxId}-hint` : null });
    return h('div', { class: 'check' }, box, h('label', { for: boxId }, h('span', { class: 'check-name', text: it.label }), it.hint ? h('span', { class: 'hint', id: `${boxId}-hint`, text: it.hint }) : null));
  });
  const wrap = h('fieldset', { class: 'field checks', id, 'aria-describedby': error.id }, h('legend', { text: legend }), boxes, error);
  const inputs = () => [...wrap.querySelectorAll('input[type=checkbox]')];
  return {
    wrap,
    error,
    get input() {
      return inputs()[0] || wrap;
    },
    values: () => inputs().filter((b) => b.checked).map((b) => b.value),
  };
}

export function badges(list, cls = '') {
  if (!list || !list.length) return h('span', { class: 'muted', text: 'none' });
  return h('span', { class: 'badges' }, list.map((x) => h('span', { class: ['badge', cls], text: x })));
}
