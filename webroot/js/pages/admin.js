// SPDX-License-Identifier: ISC
// Administration: users, roles, API tokens, the audit log and analytics retention, one
// tab each (#/admin/users, /roles, /tokens, /audit, /settings). Only for users holding
// user:modify; anyone else who types the address is told what is missing.

import { can } from '../api.js';
import { h } from '../dom.js';

const TABS = [
  ['users', 'Users'],
  ['roles', 'Roles'],
  ['tokens', 'API tokens'],
  ['audit', 'Audit log'],
  ['settings', 'Settings'],
];

export async function render(main, ctx) {
  main.append(h('h1', { text: 'Administration' }));
  if (!can('user:modify')) {
    main.append(
      h(
        'div',
        { class: 'card denied', role: 'alert' },
        h('h2', { text: 'Not for this account' }),
        h('p', { text: 'Administration needs the user:modify authorization, which none of your roles grants. Ask an administrator if you need it.' }),
        h('p', {}, h('a', { href: '#/dashboard', text: 'Back to the dashboard' })),
      ),
    );
    ctx.ready();
    return;
  }
  const tab = TABS.some(([id]) => id === ctx.parts[0]) ? ctx.parts[0] : 'users';
  const nav = h(
    'nav',
    { class: 'tabs', 'aria-label': 'Administration' },
    TABS.map(([id, label]) => h('a', { href: `#/admin/${id}`, 'aria-current': id === tab ? 'page' : null, dataset: { tab: id }, text: label })),
  );
  const section = h('section', { class: 'admin-tab', dataset: { tab }, 'aria-labelledby': `tab-${tab}` });
  section.append(h('h2', { id: `tab-${tab}`, class: 'visually-hidden', text: TABS.find(([id]) => id === tab)[1] }));
  main.append(nav, section);
  const mod = await import(`../admin/${tab}.js`);
  if (ctx.signal.aborted) return;
  await mod.render(section, ctx);
}
