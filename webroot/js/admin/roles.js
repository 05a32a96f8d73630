// SPDX-License-Identifier: ISC
// Roles: each with its authorizations; new roles, changes and deletion of the roles that
// are not built in (admin, operator and monitor cannot change). Changing a role needs
// role:modify, which user:modify does not imply: without it the list is read-only.

import { can, del, get, post, put, seg } from '../api.js';
import { field, h, showFault, toast } from '../dom.js';
import { AUTHORIZATIONS, badges, checkGroup, confirmDialog, formButtons, formPanel, stackTable } from './common.js';

const COLUMNS = [
  { label: 'Name', key: 'name' },
  { label: 'Description', key: 'description' },
  { label: 'Authorizations', key: 'authorizations' },
  { label: 'Actions', key: 'actions' },
];

// Every authorization there is: the server's (the union of the roles' — admin holds
// them all) and the ones this console knows, in the console's order.
function allAuthorizations(roles) {
  const known = Object.keys(AUTHORIZATIONS);
  const extra = new Set(roles.flatMap((r) => r.authorizations).filter((a) => !known.includes(a)));
  return [...known, ...[...extra].sort()];
}

export async function render(section, ctx) {
  const forms = formPanel();
  const list = h('div', { class: 'admin-list' });
  const status = h('p', { class: 'error', role: 'alert' });
  const mayModify = can('role:modify');
  const add = h('button', { type: 'button', class: 'primary', id: 'role-new', text: 'New role', hidden: !mayModify });
  section.append(
    h('div', { class: 'toolbar' }, add, mayModify ? null : h('p', { class: 'muted', text: 'Changing roles needs the role:modify authorization.' })),
    forms.panel,
    status,
    list,
  );
  let roles = [];

  async function load() {
    roles = (await get('/api/role/v1/roles', { signal: ctx.signal })).roles;
    const rows = roles.map((role) => [
      h('span', {}, h('strong', { text: role.name }), role.builtin ? h('span', { class: 'badge builtin', text: 'built in' }) : null),
      role.description || h('span', { class: 'muted', text: '–' }),
      badges(role.authorizations, 'auth'),
      role.builtin || !mayModify
        ? h('span', { class: 'muted', text: role.builtin ? 'cannot change' : '–' })
        : h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', class: 'small', text: 'Edit', 'aria-label': `Edit role ${role.name}`, on: { click: () => edit(role) } }),
            h('button', { type: 'button', class: 'small danger', text: 'Delete', 'aria-label': `Delete role ${role.name}`, on: { click: () => remove(role) } }),
          ),
    ]);
    list.replaceChildren(stackTable('Roles', COLUMNS, rows, { rowData: roles.map((r) => ({ role: r.name })) }));
  }

  function authItems() {
    return allAuthorizations(roles).map((a) => ({ value: a, label: a, hint: AUTHORIZATIONS[a] || null }));
  }

  function roleForm(role) {
    const name = role ? null : field('role-name', 'Role name', h('input', { name: 'name', required: true, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', maxlength: 64 }), 'Letters, digits, . _ and -; up to 64 characters.');
    const description = field('role-description', 'Description', h('input', { name: 'description', autocomplete: 'off', maxlength: 256, value: role ? role.description : '' }), 'Optional, up to 256 characters.');
    const auths = checkGroup('role-authorizations', 'Authorizations', authItems(), role ? role.authorizations : []);
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { id: role ? 'role-edit' : 'role-create', novalidate: true }, name && name.wrap, description.wrap, auths.wrap, error, formButtons(role ? 'Save' : 'Create role', forms.hide));
    const fields = { description, authorizations: auths };
    if (name) fields.name = name;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const submit = form.querySelector('button[type=submit]');
      const body = { description: description.input.value.trim(), authorizations: auths.values() };
      if (name) body.name = name.input.value.trim();
      submit.disabled = true;
      try {
        if (role) await put(`/api/role/v1/roles/${seg(role.name)}`, body);
        else await post('/api/role/v1/roles', body);
        forms.hide();
        toast(role ? `Role ${role.name} saved` : `Role ${body.name} created`);
        await load();
      } catch (e) {
        showFault(e, fields, error);
      } finally {
        submit.disabled = false;
      }
    });
    forms.show(role ? `Edit role ${role.name}` : 'New role', form);
  }

  const edit = (role) => roleForm(role);

  async function remove(role) {
    const ok = await confirmDialog(`Delete role ${role.name}?`, `The role ${role.name} is deleted. A role that a user still holds cannot be deleted: take it from them first.`, 'Delete role');
    if (!ok) return;
    status.textContent = '';
    try {
      await del(`/api/role/v1/roles/${seg(role.name)}`);
      forms.hide();
      toast(`Role ${role.name} deleted`);
      await load();
    } catch (e) {
      status.textContent = `Cannot delete role ${role.name}: ${e.details || e.message}`;
    }
  }

  add.addEventListener('click', () => roleForm(null));
  await load();
  ctx.ready();
}
