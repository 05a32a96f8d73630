// SPDX-License-Identifier: ISC
// The list of saved worksheets: name, owner, when made and changed, how many charts.
// Open any; with worksheet:modify, make a new one and clone any; rename and delete your
// own (or anyone's, with user:modify). Monitor users see the list without those controls.

import { can, del, get, getPaged, post, put, seg, session } from '../api.js';
import { clear, h, timeEl } from '../dom.js';
import { askName, confirmDialog } from './dialog.js';

export const BASE = '/api/analytics/v1/worksheets';

export function mayModify() {
  return can('worksheet:modify');
}

// May this user change or delete that worksheet?
export function mayEdit(ws) {
  return mayModify() && (ws.owner === session.user || can('user:modify'));
}

// Every summary, following the Link header's rel="next" page by page.
async function all(signal) {
  const out = [];
  let path = `${BASE}?limit=1000`;
  while (path) {
    const { doc, next } = await getPaged(path, { signal });
    out.push(...doc.worksheets);
    path = next;
  }
  return out;
}

// Clones a worksheet under a name the user gives; resolves to the new one or null.
export async function cloneWorksheet(uuid, name, datasets) {
  return askName({
    title: 'Clone worksheet',
    label: 'Name of the copy',
    value: `${name} (copy)`,
    ok: 'Clone',
    action: async (newName) => {
      let ds = datasets;
      if (!ds) ds = (await get(`${BASE}/${seg(uuid)}`)).worksheet.datasets;
      return (await post(BASE, { name: newName, datasets: ds })).worksheet;
    },
  });
}

export function renameWorksheet(uuid, name) {
  return askName({
    title: 'Rename worksheet',
    label: 'New name',
    value: name,
    ok: 'Rename',
    action: async (newName) => (await put(`${BASE}/${seg(uuid)}`, { name: newName })).worksheet,
  });
}

export function deleteWorksheet(uuid, name) {
  return confirmDialog({
    title: 'Delete worksheet',
    text: `Delete the worksheet “${name}”? Its charts' settings are lost; the analytics data stays.`,
    ok: 'Delete',
    action: async () => {
      await del(`${BASE}/${seg(uuid)}`);
      return true;
    },
  });
}

export async function renderList(main, ctx) {
  const modify = mayModify();
  const body = h('div', { class: 'ws-list' }, h('p', { class: 'loading', text: 'Loading…' }));
  main.append(
    h(
      'div',
      { class: 'toolbar' },
      h('h1', { class: 'ws-title', text: 'Analytics worksheets' }),
      h('span', { class: 'spacer' }),
      modify ? h('a', { class: 'button primary', href: '#/worksheets/new', text: 'New worksheet' }) : null,
    ),
    body,
  );

  const show = async () => {
    const list = await all(ctx.signal);
    clear(body);
    if (!list.length) {
      body.append(
        h('p', { class: 'muted ws-empty', text: 'No worksheets yet.' }),
        modify ? h('p', {}, h('a', { href: '#/worksheets/new', text: 'Make the first one' }), ': pick statistics and watch them live.') : null,
      );
      return;
    }
    const rows = list.map((ws) => {
      const edit = mayEdit(ws);
      const actions = h(
        'div',
        { class: 'row ws-actions' },
        h('a', { class: 'button small', href: `#/worksheets/${seg(ws.uuid)}`, text: 'Open', 'aria-label': `Open ${ws.name}` }),
        edit
          ? h('button', {
              type: 'button',
              class: 'small',
              text: 'Rename',
              'aria-label': `Rename ${ws.name}`,
              on: { click: async () => (await renameWorksheet(ws.uuid, ws.name)) && show() },
            })
          : null,
        modify
          ? h('button', {
              type: 'button',
              class: 'small',
              text: 'Clone',
              'aria-label': `Clone ${ws.name}`,
              on: { click: async () => (await cloneWorksheet(ws.uuid, ws.name)) && show() },
            })
          : null,
        edit
          ? h('button', {
              type: 'button',
              class: 'small danger',
              text: 'Delete',
              'aria-label': `Delete ${ws.name}`,
              on: { click: async () => (await deleteWorksheet(ws.uuid, ws.name)) && show() },
            })
          : null,
      );
      return h(
        'tr',
        { dataset: { uuid: ws.uuid } },
        h('td', { 'data-label': 'Name', class: 'ws-name' }, h('a', { href: `#/worksheets/${seg(ws.uuid)}`, text: ws.name })),
        h('td', { 'data-label': 'Owner', text: ws.owner }),
        h('td', { 'data-label': 'Created' }, timeEl(ws.ctime, { seconds: false })),
        h('td', { 'data-label': 'Modified' }, timeEl(ws.mtime, { seconds: false })),
        h('td', { 'data-label': 'Charts', class: 'num', text: ws.dataset_count }),
        h('td', { 'data-label': 'Actions', class: 'ws-actions-cell' }, actions),
      );
    });
    body.append(
      h(
        'table',
        { class: 'stack ws-table' },
        h('caption', { class: 'visually-hidden', text: 'Saved worksheets' }),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Name', 'Owner', 'Created', 'Modified'].map((t) => h('th', { scope: 'col', text: t })),
            h('th', { scope: 'col', class: 'num', text: 'Charts' }),
            h('th', { scope: 'col', text: 'Actions' }),
          ),
        ),
        h('tbody', {}, rows),
      ),
    );
  };
  await show();
  ctx.ready();
}
