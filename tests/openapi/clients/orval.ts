// SPDX-License-Identifier: ISC
// A curl-like script on orval's fetch client (gen/orval.ts): HTTP Basic on every call, no
// session. It reads the version, lists the roles and asks again with the ETag it got (a
// 304, with no body), submits a job and pages the job list to it by the `next` cursor,
// reads the job's result and fio's iops log (text), and reads a job that does not exist:
// a 404 whose fault says so. (A request the document forbids, a typo of a field, Prism
// refuses itself with a 422 before spindled sees it: the API suite tests those.)
import {
  createBenchJob,
  getBenchJob,
  getBenchJobFioLog,
  getBenchJobResult,
  getVersion,
  listBenchJobs,
  listRoles,
} from "../gen/orval";
import { setBase } from "./orval-fetch";

export async function run(base: string, user: string, password: string): Promise<number> {
  setBase(base);
  const auth = { headers: { Authorization: "Basic " + btoa(`${user}:${password}`) } };

  const version = await getVersion(auth);
  if (version.status !== 200) throw new Error(`version: ${version.status}`);
  console.log(`${version.data.version.mkt_product} ${version.data.version.version}`);

  const roles = await listRoles(auth);
  if (roles.status !== 200) throw new Error(`roles: ${roles.status}`);
  const tag = roles.headers.get("etag") ?? "";
  const again = await listRoles({ headers: { ...auth.headers, "If-None-Match": tag } });
  if (again.status !== 304) throw new Error(`roles with If-None-Match ${tag}: ${again.status}`);
  console.log(`${roles.data.roles.length} roles; asked again with their ETag: 304`);

  const none = await getBenchJob(999999, auth);
  if (none.status !== 404 || none.data.fault.message !== "ERR_NOT_FOUND")
    throw new Error(`job 999999: ${none.status} ${JSON.stringify(none.data)}`);
  console.log(`job 999999: ${none.data.fault.details}`);

  const made = await createBenchJob(
    { pattern: "randrw", size: "8M", block_size: "4k", runtime_s: 1 },
    auth,
  );
  if (made.status !== 201) throw new Error(`submit: ${made.status} ${JSON.stringify(made.data)}`);
  const id = made.data.job.id;
  if (made.headers.get("location") !== `/api/bench/v1/jobs/${id}`)
    throw new Error(`submit: Location ${made.headers.get("location")}`);

  // the newest first, one a page: the job is on the first page, the cursor goes on
  const page = await listBenchJobs({ limit: 1 }, auth);
  if (page.status !== 200 || page.data.jobs[0]?.id !== id)
    throw new Error(`list: ${page.status} ${JSON.stringify(page.data).slice(0, 200)}`);
  if (page.data.next) {
    const next = await listBenchJobs({ limit: 1, next: page.data.next }, auth);
    if (next.status !== 200 || next.data.jobs.some((j) => j.id >= id))
      throw new Error(`the page after: ${next.status}`);
  }

  let state = made.data.job.state;
  while (state === "queued" || state === "running") {
    await new Promise((done) => setTimeout(done, 500));
    const got = await getBenchJob(id, auth);
    if (got.status !== 200) throw new Error(`job ${id}: ${got.status}`);
    state = got.data.job.state;
  }
  if (state !== "done") throw new Error(`job ${id}: ${state}`);
  const result = await getBenchJobResult(id, undefined, auth);
  if (result.status !== 200 || !("result" in result.data))
    throw new Error(`result: ${result.status}`);
  const log = await getBenchJobFioLog(id, { log: "iops" }, auth);
  if (log.status !== 200 || typeof log.data !== "string" || !log.data.includes(","))
    throw new Error(`fio log: ${log.status}`);
  console.log(`job ${id}: ${result.data.result.summary.iops} IOPS, ${log.data.split("\n").length} log lines`);
  return id;
}
