// SPDX-License-Identifier: ISC
// Keeping this browser signed in (a phone on the home screen, a wall screen): no password
// and no token is kept. At a login with "Keep me signed in" the browser makes an ECDSA
// P-256 key pair with WebCrypto as not extractable, gives the server its public half, and
// keeps the pair in IndexedDB, from where no script can read the private key out: it
// signs, here, and nowhere else. To log in again it signs the server's challenge
// (README: browsers kept signed in).

const DB = 'spindle';
const STORE = 'device';
const KEY = 'this';
const PREFIX = 'spindle-device-login\n';

// Whether this browser can (WebCrypto needs HTTPS; IndexedDB may be off in private modes).
export function available() {
  return !!(window.isSecureContext && window.crypto && crypto.subtle && window.indexedDB);
}

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// One transaction on the store; resolves to what fn's request gave.
function tx(mode, fn) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const t = db.transaction(STORE, mode);
      const req = fn(t.objectStore(STORE));
      t.oncomplete = () => {
        db.close();
        resolve(req ? req.result : undefined);
      };
      t.onerror = t.onabort = () => {
        db.close();
        reject(t.error);
      };
    };
  });
}

// {id, user, name, privateKey} of the device kept here, or null.
export async function loadDevice() {
  if (!available()) return null;
  try {
    return (await tx('readonly', (s) => s.get(KEY))) || null;
  } catch {
    return null;
  }
}

export async function forgetDevice() {
  if (!available()) return;
  try {
    await tx('readwrite', (s) => s.delete(KEY));
  } catch {
    /* nothing kept, or nowhere to keep it */
  }
}

// A new key pair and what the login sends of it: {keys, device: {name, public_key}}.
export async function newDevice() {
  const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  const spki = await crypto.subtle.exportKey('spki', keys.publicKey);
  return { keys, device: { name: deviceName(), public_key: b64url(spki) } };
}

// The device the server registered, kept with the private key it goes with.
export function keepDevice(access, keys) {
  return tx('readwrite', (s) => s.put({ id: access.device.id, user: access.user, name: access.device.name, privateKey: keys.privateKey }, KEY));
}

// The login body for a device: the challenge signed with the key kept here.
export async function signedLogin(device, challenge) {
  const data = new TextEncoder().encode(`${PREFIX}${device.id}\n${challenge}`);
  const sig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, device.privateKey, data);
  return { device_id: device.id, challenge, signature: b64url(sig) };
}

// "Chrome on Android": what a list of devices calls this one.
export function deviceName() {
  const ua = navigator.userAgent;
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? (/Chromium\//.test(ua) ? 'Chromium' : 'Chrome') : /Safari\//.test(ua) ? 'Safari' : 'A browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad|iPod/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /CrOS/.test(ua) ? 'ChromeOS' : /Linux/.test(ua) ? 'Linux' : 'an unknown system';
  return `${browser} on ${os}`;
}
