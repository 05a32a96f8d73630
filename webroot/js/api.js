// SPDX-License-Identifier: ISC
// The API client: the session, requests, and what a fault says.
//
// The session token lives in memory; a copy in sessionStorage lets a reload of the tab
// survive. Never localStorage, a cookie or a URL: closing the tab ends the session here.

const KEY = 'spindle.session';

export const session = {
  token: null,
  user: null,
  authorizations: [],
  expires: null,
};

const expireHandlers = new Set();
const reachHandlers = new Set();
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
// A 401 to a request that carried a token ends the session.
export async function request(method, path, { body, headers, signal } = {}) {
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
export async function login(user, password) {
  const res = await fetch('/api/access/v1', {
    method: 'POST',
    headers: { Accept: 'application/json', 'X-Auth-User': user, 'X-Auth-Key': password },
    cache: 'no-store',
  });
  if (!res.ok) throw await faultOf(res, '/api/access/v1');
  const doc = await res.json();
  const a = doc.access;
  session.token = a.token || res.headers.get('X-Auth-Session');
  session.user = a.user;
  session.authorizations = a.authorizations || [];
  session.expires = a.expires || null;
  save();
  return session;
}

// Ends the session on the server (best effort) and here.
export async function logout() {
  const token = session.token;
  forget();
  if (!token) return;
  try {
    await fetch('/api/access/v1', {
      method: 'DELETE',
      headers: { 'X-Auth-Session': token },
      cache: 'no-store',
    });
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
