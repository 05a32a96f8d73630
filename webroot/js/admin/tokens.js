// SPDX-License-Identifier: ISC
// API tokens, per user: the list (never a secret), a new token whose secret shows once
// with a Copy button, and revocation; below them the user's browsers kept signed in, each
// of which can be stopped. #/admin/tokens?user=NAME picks the user.

import { del, get, post, seg, session } from '../api.js';
import { field, h, showFault, time, timeEl, toast } from '../dom.js';
import { confirmDialog, formButtons, formPanel, stackTable } from './common.js';

const DEVICE_COLUMNS = [
  { label: 'Browser', key: 'name' },
  { label: 'Last login', key: 'last_used' },
  { label: 'Ends', key: 'expires' },
  { label: 'Made from', key: 'address' },
  { label: 'Actions', key: 'actions' },
];

const COLUMNS = [
  { label: 'Name', key: 'name' },
  { label: 'Id', key: 'id' },
  { label: 'Created', key: 'ctime' },
  { label: 'Expires', key: 'expires' },
  { label: 'Actions', key: 'actions' },
];

// The secret, once: a read-only field to select from, a Copy button, and the warning.
function secretPanel(token, onDone) {
  const out = h('input', { id: 'token-secret', class: 'mono secret', readonly: true, value: token.secret, autocomplete: 'off', spellcheck: 'false' });
  const copied = h('span', { class: 'copied', id: 'token-copied', role: 'status', 'aria-live': 'polite' });
  const copy = h('button', { type: 'button', class: 'primary', id: 'token-copy', text: 'Copy' });
  copy.addEventListener('click', async () => {
    copied.textContent = '';
    try {
      await navigator.clipboard.writeText(token.secret);
      copied.textContent = 'Copied';
    } catch {
      out.select();
      copied.textContent = 'Cannot copy here: the secret is selected, copy it with Ctrl+C.';
    }
  });
  out.addEventListener('focus', () => out.select());
  return h(
    'section',
    { class: 'card secret-panel', 'aria-labelledby': 'token-secret-title' },
    h('h3', { id: 'token-secret-title', text: `The secret of token ${token.name}` }),
    h('p', { class: 'warning', role: 'alert', text: 'Copy it now: it will not be shown again. Anyone holding it acts as this user until the token expires or is revoked.' }),
    h('div', { class: 'field' }, h('label', { for: 'token-secret', text: 'Secret' }), h('div', { class: 'row secret-row' }, out, copy), copied),
    h('p', { class: 'hint' }, 'Send it as ', h('code', { text: 'Authorization: Bearer SECRET' }), ' or ', h('code', { text: 'X-Auth-Session: SECRET' }), `. Expires ${time(token.expires, { seconds: false })}.`),
    h('button', { type: 'button', text: 'Done', on: { click: onDone } }),
  );
}

export async function render(section, ctx) {
  const users = (await get('/api/user/v1/users', { signal: ctx.signal })).users.map((u) => u.name).sort();
  const wanted = ctx.query.get('user');
  let user = users.includes(wanted) ? wanted : users.includes(session.user) ? session.user : users[0];
  let shown = null; // the id of the token whose secret is on screen

  const pick = field('token-user', 'User', h('select', { name: 'user' }, users.map((u) => h('option', { value: u, selected: u === user, text: u }))));
  // Another user's tokens in place (the select keeps the focus); the address follows
  // without a new page, so a reload or a bookmark opens the same user.
  pick.input.addEventListener('change', async () => {
    user = pick.input.value;
    history.replaceState(null, '', `#/admin/tokens?user=${encodeURIComponent(user)}`);
    forms.hide();
    hideSecret();
    status.textContent = '';
    try {
      await load();
    } catch (e) {
      if (e.name !== 'AbortError') status.textContent = `Cannot list ${user}'s tokens: ${e.details || e.message}`;
    }
  });
  const forms = formPanel();
  const secret = h('div', { class: 'secret-slot' });
  const list = h('div', { class: 'admin-list' });
  const devices = h('div', { class: 'admin-list', id: 'devices' });
  const status = h('p', { class: 'error', role: 'alert' });
  const add = h('button', { type: 'button', class: 'primary', id: 'token-new', text: 'New token' });
  section.append(
    h('div', { class: 'toolbar' }, h('div', { class: 'token-user' }, pick.wrap), add),
    forms.panel,
    secret,
    status,
    list,
    h('h2', { id: 'devices-title', text: 'Browsers kept signed in' }),
    h('p', { class: 'hint', text: 'Each logs in by itself with a key it cannot give away, until it is stopped here, logs out, or goes 30 days unused. A password change stops them all.' }),
    devices,
  );
  if (wanted && !users.includes(wanted)) status.textContent = `There is no user ${wanted}; showing ${user}'s tokens.`;

  function hideSecret() {
    secret.replaceChildren();
    shown = null;
  }

  async function load() {
    const tokens = (await get(`/api/user/v1/users/${seg(user)}/tokens`, { signal: ctx.signal })).tokens;
    const rows = tokens.map((t) => [
      h('strong', { text: t.name }),
      h('code', { text: t.id }),
      timeEl(t.ctime, { seconds: false }),
      h('span', { class: new Date(t.expires) < new Date() ? 'worse' : null }, timeEl(t.expires, { seconds: false })),
      h('button', { type: 'button', class: 'small danger', text: 'Revoke', 'aria-label': `Revoke token ${t.name}`, on: { click: () => revoke(t) } }),
    ]);
    list.replaceChildren(
      tokens.length ? stackTable(`API tokens of ${user}`, COLUMNS, rows, { rowData: tokens.map((t) => ({ token: t.id })) }) : h('p', { class: 'muted empty', text: `${user} has no API tokens.` }),
    );
    const kept = (await get(`/api/user/v1/users/${seg(user)}/devices`, { signal: ctx.signal })).devices;
    const drows = kept.map((d) => [
      h('strong', { text: d.name }),
      timeEl(d.last_used, { seconds: false }),
      timeEl(d.expires, { seconds: false }),
      h('span', { text: d.address || '–' }),
      h('button', { type: 'button', class: 'small danger', text: 'Stop', 'aria-label': `Stop keeping ${d.name} signed in`, on: { click: () => stop(d) } }),
    ]);
    devices.replaceChildren(
      kept.length ? stackTable(`Browsers kept signed in as ${user}`, DEVICE_COLUMNS, drows, { rowData: kept.map((d) => ({ device: d.id })) }) : h('p', { class: 'muted empty', text: `No browser is kept signed in as ${user}.` }),
    );
  }

  async function stop(d) {
    const ok = await confirmDialog(`Stop keeping ${d.name} signed in?`, `${d.name} (last login ${time(d.last_used, { seconds: false })}) is logged out at once and must log in with the password again.`, 'Stop');
    if (!ok) return;
    status.textContent = '';
    try {
      await del(`/api/user/v1/users/${seg(user)}/devices/${seg(d.id)}`);
      toast(`${d.name} is no longer kept signed in`);
      await load();
    } catch (e) {
      status.textContent = `Cannot stop ${d.name}: ${e.details || e.message}`;
    }
  }

  function create() {
    hideSecret();
    const name = field('token-name', 'Token name', h('input', { name: 'name', required: true, autocomplete: 'off', maxlength: 64 }), 'What it is for, e.g. "prometheus" or "backup script".');
    const days = field('token-expires', 'Valid for', h('input', { name: 'expires_days', type: 'number', inputmode: 'numeric', min: 1, max: 3650, step: 1, value: 365 }), 'Days, 1 to 3650.');
    const error = h('p', { class: 'error', role: 'alert' });
    const form = h('form', { id: 'token-create', novalidate: true }, name.wrap, days.wrap, error, formButtons('Create token', forms.hide));
    const fields = { name, expires_days: days };
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body = { name: name.input.value.trim() };
      if (days.input.value !== '') body.expires_days = Number(days.input.value);
      const submit = form.querySelector('button[type=submit]');
      submit.disabled = true;
      try {
        const t = (await post(`/api/user/v1/users/${seg(user)}/tokens`, body)).token;
        forms.hide();
        const panel = secretPanel(t, () => {
          hideSecret();
          add.focus();
        });
        secret.replaceChildren(panel);
        shown = t.id;
        panel.querySelector('#token-copy').focus();
        await load();
      } catch (e) {
        showFault(e, fields, error);
      } finally {
        submit.disabled = false;
      }
    });
    forms.show(`New API token for ${user}`, form);
  }

  async function revoke(t) {
    const ok = await confirmDialog(`Revoke token ${t.name}?`, `Programs using the token ${t.name} of ${user} lose access at once. This cannot be undone.`, 'Revoke token');
    if (!ok) return;
    status.textContent = '';
    try {
      await del(`/api/user/v1/users/${seg(user)}/tokens/${seg(t.id)}`);
      if (shown === t.id) hideSecret();
      toast(`Token ${t.name} revoked`);
      await load();
    } catch (e) {
      status.textContent = `Cannot revoke ${t.name}: ${e.details || e.message}`;
    }
  }

  add.addEventListener('click', create);
  await load();
  ctx.ready();
}
