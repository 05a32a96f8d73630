// SPDX-License-Identifier: ISC
// The login page: says exactly what went wrong (a wrong password, a throttle and when to
// try again), and goes on to the page the user was sent away from. "Keep me signed in on
// this device" registers this browser's own key (device.js): no password is kept. A
// session another tab takes up meanwhile goes on for this one too.

import { canKeep, deviceWasRefused, login, onJoin } from '../api.js';
import { field, h } from '../dom.js';
import { go } from '../app.js';

function message(e) {
  if (e.status === 401) return 'Wrong user name or password.';
  if (e.status === 429) {
    const s = e.retryAfter || 1;
    return `Too many failed attempts from here: try again in ${s} second${s === 1 ? '' : 's'}.`;
  }
  if (e.status) return `Cannot log in: ${e.details}`;
  if (e.name === 'NotSupportedError' || e.name === 'InvalidStateError' || e.name === 'UnknownError') return `This browser cannot keep you signed in (${e.message}); log in without it.`;
  return 'Cannot reach the server. Check the network and try again.';
}

export function render(main, ctx) {
  const user = field('login-user', 'User name', h('input', { name: 'user', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }));
  const pass = field('login-password', 'Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true }));
  const error = h('p', { id: 'login-error', class: 'error', role: 'alert' });
  // Sent here because the session ended under the user's feet: say so, and that the page
  // (with what was not saved on it) comes back after logging in.
  const next = ctx.query.get('next');
  const expired = ctx.query.get('expired') === '1'
    ? h('p', { class: 'note', id: 'login-expired', role: 'status' },
        'Your session expired. ',
        next ? 'Log in again to go back to where you were, with what you had not saved.' : 'Log in again.')
    : null;
  const refused = deviceWasRefused()
    ? h('p', { class: 'note', id: 'login-device-refused', role: 'status', text: 'This browser is no longer kept signed in (it was revoked, or unused for 30 days). Log in with your password.' })
    : null;
  const keepBox = h('input', { type: 'checkbox', id: 'login-keep', name: 'keep', 'aria-describedby': 'login-keep-hint' });
  const keep = canKeep()
    ? h(
        'div',
        { class: 'field field-check' },
        keepBox,
        h('label', { for: 'login-keep', text: 'Keep me signed in on this device' }),
        h('p', { class: 'hint', id: 'login-keep-hint', text: 'For your own phone or a wall screen. No password is stored: this browser keeps a key that cannot be copied off it, for 30 days after its last use. Anyone using this browser is signed in as you until you log out.' }),
      )
    : null;
  const submit = h('button', { type: 'submit', class: 'primary', text: 'Log in' });
  const form = h('form', { class: 'login card', novalidate: true }, h('h1', { text: 'Spindle' }), h('p', { class: 'muted', text: 'Storage management console' }), expired, refused, user.wrap, pass.wrap, keep, error, submit);
  const onward = () => go(next && !next.startsWith('login') ? next : 'dashboard');
  // logged in from another tab meanwhile: on with that session
  ctx.cleanup(onJoin(onward));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    if (!user.input.value || !pass.input.value) {
      error.textContent = !user.input.value ? 'Enter your user name.' : 'Enter your password.';
      (!user.input.value ? user.input : pass.input).focus();
      return;
    }
    submit.disabled = true;
    try {
      await login(user.input.value, pass.input.value, { keep: keepBox.checked });
      onward();
    } catch (e) {
      error.textContent = message(e);
      pass.input.select();
    } finally {
      submit.disabled = false;
    }
  });
  main.append(h('div', { class: 'login-wrap' }, form));
  user.input.focus();
  ctx.ready();
}
