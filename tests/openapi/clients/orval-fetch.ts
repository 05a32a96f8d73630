// SPDX-License-Identifier: ISC
// The fetch that orval's generated functions call (orval.config.cjs names it): what a
// script writer adds to orval's client, the base address of the box and a body read by
// its Content-Type.
let base = "";

export function setBase(url: string): void {
  base = url;
}

export async function spindleFetch<T>(url: string, init: RequestInit): Promise<T> {
  const res = await fetch(base + url, init);
  const type = res.headers.get("content-type") ?? "";
  const text = [204, 205, 304].includes(res.status) ? "" : await res.text();
  const data = text && type.includes("json") ? JSON.parse(text) : text;
  return { data, status: res.status, headers: res.headers } as T;
}
