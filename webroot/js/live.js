// SPDX-License-Identifier: ISC
// The live dashboard document: one feed shared by every view that shows it.
//
// It reads /api/status/v1/events with fetch() and a stream reader, since EventSource
// cannot send the X-Auth-Session header. If the stream cannot be had (a proxy that buffers,
// a refusal) it polls /api/status/v1/dashboard with If-None-Match instead. While the page is
// hidden nothing is fetched; the feed picks up again when it is shown.

import { request, session } from './api.js';

const POLL_MS = 5000;
const RETRY_MS = 2000;
const MAX_RETRY_MS = 30000;

const subscribers = new Set();
let current = null; // the newest document ({dashboard: {...}}'s inner object)
let abort = null; // stops the running stream or poll loop
let running = false;

export function latest() {
  return current;
}

// fn(doc) is called with each new dashboard document (at once if one is known).
// Returns the unsubscribe function; the feed stops when nobody listens.
export function subscribe(fn) {
  subscribers.add(fn);
  if (current) fn(current);
  start();
  return () => {
    subscribers.delete(fn);
    if (!subscribers.size) stop();
  };
}

function publish(doc) {
  current = doc;
  for (const fn of subscribers) {
    try {
      fn(doc);
    } catch (e) {
      console.error(e);
    }
  }
}

function start() {
  if (running || document.hidden || !session.token) return;
  running = true;
  abort = new AbortController();
  run(abort.signal);
}

function stop() {
  running = false;
  if (abort) abort.abort();
  abort = null;
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) stop();
  else if (subscribers.size) start();
});

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

async function run(signal) {
  let streamFailures = 0;
  let unanswered = 0; // tries in a row the box did not answer at all: each waits longer
  const backoff = () => Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** Math.max(0, unanswered - 1));
  while (!signal.aborted) {
    if (streamFailures < 3) {
      try {
        await stream(signal);
        streamFailures = 0; // it ended cleanly (server restart, idle close): reconnect
        unanswered = 0;
      } catch (e) {
        if (signal.aborted || e.status === 401) return;
        if (e.unreachable) unanswered++;
        else streamFailures++; // a refusal or a proxy that buffers: poll instead
      }
      await sleep(backoff(), signal);
    } else {
      try {
        await poll(signal);
      } catch (e) {
        if (signal.aborted || e.status === 401) return;
        unanswered = e.unreachable ? unanswered + 1 : 0;
        await sleep(backoff(), signal);
      }
    }
  }
}

// One SSE connection: blocks until it ends; throws if it could not be opened.
async function stream(signal) {
  const res = await request('GET', '/api/status/v1/events', {
    headers: { Accept: 'text/event-stream' },
    signal,
  });
  if (!res.ok || !res.body) {
    const err = new Error(`events: HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        event(block);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function event(block) {
  let name = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue; // heartbeat
    const colon = line.indexOf(':');
    const key = colon < 0 ? line : line.slice(0, colon);
    const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (key === 'event') name = val;
    else if (key === 'data') data.push(val);
  }
  if (name !== 'dashboard' || !data.length) return;
  const doc = JSON.parse(data.join('\n'));
  publish(doc.dashboard);
}

let etag = null;
// One poll round, then a pause; 304 leaves the document as it was.
async function poll(signal) {
  const headers = etag ? { 'If-None-Match': etag } : {};
  const res = await request('GET', '/api/status/v1/dashboard', { headers, signal });
  if (res.status === 200) {
    etag = res.headers.get('ETag');
    publish((await res.json()).dashboard);
  } else if (res.status !== 304) {
    const err = new Error(`dashboard: HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  await sleep(POLL_MS, signal);
}
