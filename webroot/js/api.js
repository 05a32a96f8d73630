// SPDX-License-Identifier: ISC
// The API client: the session, requests, and what a fault says.
//
// The session token lives in memory; a copy in sessionStorage lets a reload of the tab
// survive. Never localStorage, a cookie or a URL. The tabs of one browser share it: a new
// tab asks the open ones (BroadcastChannel, same origin only, nothing stored), a login or a
// logout in one is one in all. A browser kept signed in (device.js) logs in by itself when
// no tab has a session, and again when its session ends under a page.

import { available as devicesAvailable, forgetDevice, keepDevice, loadDevice, newDevice, signedLogin } from './device.js';

const KEY = 'spindle.session';
const ASK_MS = 300; // how long a new tab waits for an open one to share its session

export const session = {
  token: null,
  user: null,
  authorizations: [],
  expires: null,
};

const expireHandlers = new Set();
const reachHandlers = new Set();
const joinHandlers = new Set();
const leaveHandlers = new Set();
const tabs = 'BroadcastChannel' in window ? new BroadcastChannel('spindle.session') : null;
let deviceRefused = false; // the kept device was refused: the login page says why
let reachable = true; // the last request got an answer (of any status)
let unreachableSince = null;

function restore() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) || 'null');
    if (saved && typeof saved.token === 'string') Object.assign(session, saved);
  } catch {
    sessionStorage.removeItem(KEY);
  }
}
restore();

function save() {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

function forget() {
  session.token = null;
  session.user = null;
  session.authorizations = [];
  session.expires = null;
  sessionStorage.removeItem(KEY);
}

export function loggedIn() {
  return !!session.token;
}

// A session taken up (from another tab, or by the kept device) while on the login page.
export function onJoin(fn) {
  joinHandlers.add(fn);
  return () => joinHandlers.delete(fn);
}

// Another tab logged out: this one is logged out too.
export function onLeave(fn) {
  leaveHandlers.add(fn);
  return () => leaveHandlers.delete(fn);
}

function adopt(access, token) {
  session.token = access.token || token;
  session.user = access.user;
  session.authorizations = access.authorizations || [];
  session.expires = access.expires || null;
  save();
}

function share() {
  if (tabs && session.token) tabs.postMessage({ type: 'session', session: { ...session } });
}

if (tabs)
  tabs.onmessage = (e) => {
    const m = e.data || {};
    if (m.type === 'ask') share();
    else if (m.type === 'session' && m.session && typeof m.session.token === 'string' && m.session.token !== session.token) {
      const was = !!session.token;
      Object.assign(session, m.session);
      save();
      if (!was) for (const fn of joinHandlers) fn();
    } else if (m.type === 'logout' && session.token) {
      forget();
      for (const fn of leaveHandlers) fn();
    }
  };

// Logs in with the device kept here; true when it did. A device the server refused (401:
// revoked, expired, or its key no longer the one it knows) is forgotten; no answer, a
// throttle or a fault of the server's keeps it for the next try.
async function deviceLogin() {
  const device = await loadDevice();
  if (!device) return false;
  try {
    const ch = await fetch('/api/access/v1/challenge', { method: 'POST', headers: { Accept: 'application/json' }, cache: 'no-store' });
    if (!ch.ok) return false;
    const challenge = (await ch.json()).challenge.value;
    const res = await fetch('/api/access/v1', {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: JSON.stringify(await signedLogin(device, challenge)),
      cache: 'no-store',
    });
    if (res.status === 401) {
      await forgetDevice();
      deviceRefused = true;
      return false;
    }
    if (!res.ok) return false;
    adopt((await res.json()).access, res.headers.get('X-Auth-Session'));
    share();
    return true;
  } catch {
    return false;
  }
}

// At start: the tab's own session, else an open tab's, else the kept device's. True when
// there is one.
export async function resume() {
  if (session.token) return true;
  if (tabs) {
    const got = new Promise((resolve) => {
      const off = onJoin(() => {
        off();
        resolve();
      });
      setTimeout(() => {
        off();
        resolve();
      }, ASK_MS);
    });
    tabs.postMessage({ type: 'ask' });
    await got;
    if (session.token) return true;
  }
  return deviceLogin();
}

// Whether the last start found a kept device that the server refused.
export function deviceWasRefused() {
  return deviceRefused;
}

// Whether this browser can be kept signed in.
export const canKeep = devicesAvailable;

let renewing = null;
// The session ended under a page: the kept device logs in again, once for all the
// requests that found out at the same time (the old token stays until the new one comes,
// so that requests sent meanwhile find out too, and wait for it).
function renew() {
  if (!renewing)
    renewing = deviceLogin().finally(() => {
      renewing = null;
    });
  return renewing;
}

// May this user do `what` (an authorization such as "bench:run")?
export function can(what) {
  return session.authorizations.includes(what);
}

// Called when the server no longer takes the token (expired, revoked, user deleted).
export function onExpire(fn) {
  expireHandlers.add(fn);
  return () => expireHandlers.delete(fn);
}

// Called with true or false when the server stops or starts answering at all (the network,
// the box down): fn(on, since), since the Date of the first unanswered request.
export function onReachable(fn) {
  reachHandlers.add(fn);
  return () => reachHandlers.delete(fn);
}

function setReachable(on) {
  if (on === reachable) return;
  reachable = on;
  unreachableSince = on ? null : new Date();
  for (const fn of reachHandlers) fn(on, unreachableSince);
}

// A fault from the server: {status, code, message ("ERR_..."), details ("field: what")}.
export class ApiError extends Error {
  constructor(status, fault, path, retryAfter) {
    const details = (fault && fault.details) || `HTTP ${status}`;
    super(details);
    this.status = status;
    this.code = fault && fault.message ? fault.message : `HTTP ${status}`;
    this.details = details;
    this.path = path;
    this.retryAfter = retryAfter; // seconds, from Retry-After, or null
    const m = /^([A-Za-z_][\w.[\]-]*):\s/.exec(details);
    this.field = m ? m[1] : null; // the field the fault names, if it names one
  }
}

function headersFor(extra, body) {
  const h = { Accept: 'application/json', ...extra };
  if (session.token) h['X-Auth-Session'] = session.token;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  return h;
}

async function faultOf(res, path) {
  let doc = null;
  try {
    doc = await res.json();
  } catch {
    /* not JSON: the status says enough */
  }
  const ra = res.headers.get('Retry-After');
  return new ApiError(res.status, doc && doc.fault, path, ra === null ? null : Number(ra));
}

function expired() {
  forget();
  for (const fn of expireHandlers) fn();
}

// fetch() with the session; the answer as it came (for streams, ETags, CSV).
// A 401 to a request that carried a token ends the session, unless a kept device logs in
// again (then the request is sent once more).
export async function request(method, path, { body, headers, signal, retried = false } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: headersFor(headers, body),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError' || (signal && signal.aborted)) throw e;
    // no answer at all: not the browser's "Failed to fetch", but what it means
    setReachable(false);
    const err = new Error('the box does not answer (the network, or spindled down)');
    err.unreachable = true;
    err.details = err.message;
    throw err;
  }
  setReachable(true);
  if (res.status === 401 && session.token) {
    const err = await faultOf(res, path);
    const sent = session.token;
    // another request may have renewed it meanwhile; else a kept device logs in again
    if (!retried && (session.token !== sent || (await renew()))) return request(method, path, { body, headers, signal, retried: true });
    expired();
    throw err;
  }
  return res;
}

// A JSON request; resolves to the parsed answer (null for 204), rejects with ApiError.
export async function api(method, path, opts = {}) {
  const res = await request(method, path, opts);
  if (!res.ok) throw await faultOf(res, path);
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => api('GET', path, opts);

// A page of a listing: {doc, next}, next the path its Link header names rel="next" (null on
// the last page).
export async function getPaged(path, opts = {}) {
  const res = await request('GET', path, opts);
  if (!res.ok) throw await faultOf(res, path);
  const link = res.headers.get('Link') || '';
  const m = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link);
  return { doc: await res.json(), next: m ? m[1] : null };
}
export const post = (path, body, opts = {}) => api('POST', path, { ...opts, body });
export const put = (path, body, opts = {}) => api('PUT', path, { ...opts, body });
export const del = (path, opts) => api('DELETE', path, opts);

// Logs in with a password; the server answers 201 with the token and the authorizations.
// keep: keep this browser signed in (a new key pair, its public half registered with the
// login; a device kept before is replaced).
export async function login(user, password, { keep = false } = {}) {
  const made = keep ? await newDevice() : null;
  const res = await fetch('/api/access/v1', {
    method: 'POST',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify(made ? { user, password, device: made.device } : { user, password }),
    cache: 'no-store',
  });
  if (!res.ok) throw await faultOf(res, '/api/access/v1');
  const a = (await res.json()).access;
  // a device kept here before is replaced (or, without keep, ended): one per browser
  const before = await loadDevice();
  await forgetDevice();
  if (before && before.user === a.user)
    fetch(`/api/user/v1/users/${seg(a.user)}/devices/${seg(before.id)}`, { method: 'DELETE', headers: { 'X-Auth-Session': a.token }, cache: 'no-store' }).catch(() => {});
  if (made && a.device) await keepDevice(a, made.keys);
  deviceRefused = false;
  adopt(a, res.headers.get('X-Auth-Session'));
  share();
  return session;
}

// Ends the session on the server (best effort) and here, in every tab. A browser kept
// signed in is kept no longer: its sessions are named after its device, whose logout the
// server takes for the device's end, and its key is forgotten here.
export async function logout() {
  const token = session.token;
  forget();
  if (tabs) tabs.postMessage({ type: 'logout' });
  await forgetDevice();
  if (!token) return;
  try {
    await fetch('/api/access/v1', { method: 'DELETE', headers: { 'X-Auth-Session': token }, cache: 'no-store' });
  } catch {
    /* the token is forgotten here either way */
  }
}

// Path segment, escaped: names may hold '/', '[' or spaces.
export function seg(s) {
  return encodeURIComponent(String(s));
}

// A query string from an object, leaving out null and undefined.
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
