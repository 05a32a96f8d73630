// SPDX-License-Identifier: ISC
// Open problems as the dashboard's status line and the Problems page show them: the list,
// the worst of it, where its component lives in the console, and a Locate button for a
// component with a locator LED.

import { can, get, put } from './api.js';
import { h, toast } from './dom.js';

export const PROBLEMS = '/api/problem/v1/problems';
const HW = '/api/hardware/v1/chassis/';
const RANK = { Critical: 3, Major: 2, Minor: 1 };

export function severityClass(sev) {
  return `sev-${String(sev || '').toLowerCase().replace(/[^a-z]/g, '')}`;
}

export function severityBadge(sev) {
  return h('span', { class: ['badge', 'sev-fill', severityClass(sev)], text: sev || 'Unknown' });
}

// Worst first (severity, then the newest): the order of the page and of the status line.
export function ordered(problems) {
  return problems
    .slice()
    .sort((a, b) => (RANK[b.severity] || 0) - (RANK[a.severity] || 0) || String(b.first_seen || '').localeCompare(String(a.first_seen || '')));
}

export async function loadProblems(signal) {
  const doc = await get(PROBLEMS, { signal });
  return ordered(doc.problems || []);
}

// The component of a problem: {label, chassis, href} (the appliance's "components").
export function component(p) {
  const c = p.components;
  return Array.isArray(c) ? c[0] || null : c || null;
}

// What tells that the open problems changed, from the dashboard document: their count
// and the newest ones' ids (a problem raised or cleared changes one or the other).
export function problemsKey(doc) {
  return JSON.stringify([doc.problems, (doc.problems_recent || []).map((p) => p.id)]);
}

// The component's name, linked to its place on the Hardware page when it has one; null
// for a problem without a component.
export function componentLink(c) {
  const where = c && (c.label || c.chassis);
  if (!where) return null;
  const route = hardwareRoute(c.href);
  return route ? h('a', { href: route, class: 'mono', text: where }) : h('span', { class: 'mono', text: where });
}

// The console's place for a hardware API path: the Hardware page with that disk (or
// chassis) opened. null for a component that is not hardware.
function hardwareRoute(href) {
  if (typeof href !== 'string' || !href.startsWith(HW)) return null;
  const [chassis, kind, disk] = href.slice(HW.length).split('/').map(decodeURIComponent);
  if (!chassis) return null;
  const q = new URLSearchParams({ chassis });
  if (kind === 'disk' && disk) q.set('disk', disk);
  return `#/hardware?${q}`;
}

// A button lighting (or putting out) the locator of the component at `href`, for a user
// who may; null otherwise. It reads the LED's state first, so it says what a tap will do.
export function locateButton(href, name, signal) {
  if (!can('hardware:locate') || !hardwareRoute(href)) return null;
  let lit = null;
  const btn = h('button', { type: 'button', class: 'locate-btn', text: 'Locate', 'aria-pressed': 'false' });
  const show = () => {
    btn.textContent = lit ? 'Stop locating' : 'Locate';
    btn.setAttribute('aria-pressed', String(!!lit));
    btn.classList.toggle('led-on', !!lit);
  };
  get(href, { signal })
    .then((doc) => {
      const obj = doc && (doc.disk || doc.chassis);
      if (obj && typeof obj.locate === 'boolean') {
        lit = obj.locate;
        show();
      }
    })
    .catch(() => {});
  btn.addEventListener('click', async () => {
    const want = !lit;
    btn.disabled = true;
    try {
      const ans = await put(href, { locate: want });
      const obj = ans && (ans.disk || ans.chassis);
      lit = obj ? obj.locate === true : want;
      show();
      toast(`${name}: locator ${lit ? 'lit' : 'off'}`);
    } catch (e) {
      if (e.status !== 401) toast(`Cannot turn the locator of ${name} ${want ? 'on' : 'off'}: ${e.details || e.message}`, 'error');
    } finally {
      btn.disabled = false;
    }
  });
  return btn;
}
