// SPDX-License-Identifier: ISC
// Users: the list, a new user with roles, a user's roles and name changed, a password
// reset, and deletion after a confirmation. Faults show next to the field they name.

import { del, get, post, put, seg, session } from '../api.js';
import { field, h, showFault, timeEl, toast } from '../dom.js';
import { badges, checkGroup, confirmDialog, formButtons, formPanel, stackTable } from './common.js';

const COLUMNS = [
  { label: 'Name', key: 'name' },
  { label: 'Full name', key: 'fullname' },
  { label: 'Roles', key: 'roles' },
  { label: 'Session timeout', key: 'timeout', num: true },
  { label: 'Created', key: 'ctime' },
  { label: 'Actions', key: 'actions' },
];

function roleItems(roles) {
  return roles.map((r) => ({ value: r.name, label: r.name, hint: r.description || null }));
}

export async function render(section, ctx) {
  const forms = formPanel();
  const list = h('div', { class: 'admin-list' });
  const status = h('p', { class: 'error', role: 'alert' });
  const add = h('button', { type: 'button', class: 'primary', id: 'user-new', text: 'New user' });
  section.append(h('div', { class: 'toolbar' }, add), forms.panel, status, list);

  let roles = [];

  async function load() {
    const [u, r] = await Promise.all([get('/api/user/v1/users', { signal: ctx.signal }), get('/api/role/v1/roles', { signal: ctx.signal })]);
    roles = r.roles;
    const users = u.users.slice().sort((a, b) => a.name.localeCompare(b.name));
    const rows = users.map((user) => [
      h('strong', { text: user.name }),
      user.fullname || h('span', { class: 'muted', text: '–' }),
      badges(user.roles),
      `${user.session_timeout_min} min`,
      timeEl(user.ctime, { seconds: false }),
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'button', class: 'small', text: 'Edit', 'aria-label': `Edit ${user.name}`, on: { click: () => edit(user) } }),
        h('button', { type: 'button', class: 'small', text: 'Password', 'aria-label': `Reset the password of ${user.name}`, on: { click: () => password(user) } }),
        h('a', { class: 'button small', href: `#/admin/tokens?user=${encodeURIComponent(user.name)}`, text: 'Tokens', 'aria-label': `API tokens of ${user.name}` }),
        h('button', {
          type: 'button',
          class: 'small danger',
          text: 'Delete',
          'aria-label': `Delete ${user.name}`,
          disabled: user.name === session.user,
          title: user.name === session.user ? 'You cannot delete yourself' : null,
          on: { click: () => remove(user) },
        }),
      ),
    ]);
    list.replaceChildren(
      users.length ? stackTable('Users', COLUMNS, rows, { rowData: users.map((x) => ({ user: x.name })) }) : h('p', { class: 'muted', text: 'No users.' }),
    );
  }

  async function attempt(fn, fields, fallback, done) {
    const submit = fallback.closest('form').querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      await fn();
      forms.hide();
      toast(done);
      await load();
    } catch (e) {
      if (e.name === 'AbortError') return;
      showFault(e, fields, fallback);
    } finally {
      submit.disabled = false;
    }
  }

  function createForm() {
    const name = field('user-name', 'User name', h('input', { name: 'name', required: true, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', maxlength: 64 }), 'Letters, digits, . _ and -; up to 64 characters.');
    const fullname = field('user-fullname', 'Full name', h('input', { name: 'fullname', autocomplete: 'off', maxlength: 128 }), 'Optional.');
    const pass = field('user-password', 'Password', h('input', { name: 'password', type: 'password', required: true, autocomplete: 'new-password' }), 'At least 8 characters.');
    const timeout = field('user-timeout', 'Session timeout', h('input', { name: 'session_timeout_min', type: 'number', inputmode: 'numeric', min: 1, max: 1440, step: 1 }), 'Minutes of inactivity before a login ends, 1 to 1440. Empty: the server default.');
    const roleBox = checkGroup('user-roles', 'Roles', roleItems(roles), roles.some((r) => r.name === 'monitor') ? ['monitor'] : []);
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { id: 'user-create', novalidate: true }, name.wrap, fullname.wrap, pass.wrap, roleBox.wrap, timeout.wrap, error, formButtons('Create user', forms.hide));
    const fields = { name, fullname, password: pass, roles: roleBox, session_timeout_min: timeout };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const body = { name: name.input.value.trim(), password: pass.input.value, roles: roleBox.values() };
      if (fullname.input.value.trim()) body.fullname = fullname.input.value.trim();
      if (timeout.input.value !== '') body.session_timeout_min = Number(timeout.input.value);
      attempt(() => post('/api/user/v1/users', body), fields, error, `User ${body.name} created`);
    });
    forms.show('New user', form);
  }

  function edit(user) {
    const fullname = field('user-fullname', 'Full name', h('input', { name: 'fullname', autocomplete: 'off', maxlength: 128, value: user.fullname || '' }));
    const timeout = field('user-timeout', 'Session timeout', h('input', { name: 'session_timeout_min', type: 'number', inputmode: 'numeric', min: 1, max: 1440, step: 1, value: user.session_timeout_min }), 'Minutes of inactivity before a login ends, 1 to 1440.');
    const roleBox = checkGroup('user-roles', 'Roles', roleItems(roles), user.roles);
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { id: 'user-edit', novalidate: true }, fullname.wrap, roleBox.wrap, timeout.wrap, error, formButtons('Save', forms.hide));
    const fields = { fullname, roles: roleBox, session_timeout_min: timeout };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const body = { fullname: fullname.input.value.trim(), roles: roleBox.values() };
      if (timeout.input.value !== '') body.session_timeout_min = Number(timeout.input.value);
      attempt(() => put(`/api/user/v1/users/${seg(user.name)}`, body), fields, error, `User ${user.name} saved`);
    });
    forms.show(`Edit ${user.name}`, form);
  }

  function password(user) {
    const pass = field('user-password', 'New password', h('input', { name: 'password', type: 'password', required: true, autocomplete: 'new-password' }), 'At least 8 characters.');
    const again = field('user-password-again', 'New password again', h('input', { name: 'password_again', type: 'password', required: true, autocomplete: 'new-password' }));
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h(
      'form',
      { id: 'user-password-form', novalidate: true },
      h('p', { class: 'muted', text: `A new password ends every session and API token of ${user.name} at once (for your own, this session stays).` }),
      pass.wrap,
      again.wrap,
      error,
      formButtons('Set password', forms.hide),
    );
    const fields = { password: pass, password_again: again };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (pass.input.value !== again.input.value) {
        showFault({ field: 'password_again', details: 'password_again: the two passwords differ' }, fields, error);
        return;
      }
      attempt(() => put(`/api/user/v1/users/${seg(user.name)}`, { password: pass.input.value }), fields, error, `Password of ${user.name} set`);
    });
    forms.show(`Reset the password of ${user.name}`, form);
  }

  async function remove(user) {
    const ok = await confirmDialog(`Delete ${user.name}?`, `The user ${user.name} is deleted, and their sessions and API tokens stop working at once. This cannot be undone.`, 'Delete user');
    if (!ok) return;
    status.textContent = '';
    try {
      await del(`/api/user/v1/users/${seg(user.name)}`);
      forms.hide();
      toast(`User ${user.name} deleted`);
      await load();
    } catch (e) {
      status.textContent = `Cannot delete ${user.name}: ${e.details || e.message}`;
    }
  }

  add.addEventListener('click', createForm);
  await load();
  ctx.ready();
}
