// SPDX-License-Identifier: ISC
// A script writer's first client, generated from api/openapi.json by openapi-typescript
// (into gen/schema.d.ts) and called through openapi-fetch: log in with a password in the
// body, read the dashboard, submit a job, wait for it, read its result and one of its fio
// logs, log out. A document that generators type wrongly (unknown[], a JSON answer typed
// `| string`, a dangling $ref) stops it compiling; run.sh then runs it against spindled
// through Prism's validating proxy.
import createClient from "openapi-fetch";
import type { components, paths } from "../gen/schema";

type Job = components["schemas"]["BenchJob"];

export async function run(base: string, user: string, password: string): Promise<number> {
  const api = createClient<paths>({ baseUrl: base });

  // log in: the token comes back in the body and in X-Auth-Session
  const login = await api.POST("/api/access/v1", { body: { user, password } });
  if (!login.data) throw new Error(login.error?.fault.details ?? "login refused");
  const token: string = login.data.access.token;
  const headers = { "X-Auth-Session": token };

  // the phone's dashboard
  const dash = await api.GET("/api/status/v1/dashboard", { headers });
  if (!dash.data) throw new Error(`dashboard: ${dash.response.status}`);
  const busy: number | undefined = dash.data.dashboard.cpu?.busy_pct;
  console.log(`CPU ${busy} % busy, ${dash.data.dashboard.ndisks} disks`);

  // a job, then its state until it ends
  const made = await api.POST("/api/bench/v1/jobs", {
    headers,
    body: { pattern: "randread", size: "8M", block_size: "8k", runtime_s: 1 },
  });
  if (!made.data) {
    const f = made.error?.fault;
    throw new Error(`${f?.message}: ${f?.field ?? "(no field)"}: ${f?.details}`);
  }
  let job: Job = made.data.job;
  while (job.state === "queued" || job.state === "running") {
    await new Promise((done) => setTimeout(done, 1000));
    const got = await api.GET("/api/bench/v1/jobs/{id}", {
      headers,
      params: { path: { id: job.id } },
    });
    if (!got.data) throw new Error(got.error?.fault.details);
    job = got.data.job;
  }

  if (job.state !== "done") throw new Error(`job ${job.id} ${job.state}: ${job.reason}`);

  // its result: JSON only, typed as such
  const res = await api.GET("/api/bench/v1/jobs/{id}/result", {
    headers,
    params: { path: { id: job.id } },
  });
  if (!res.data || !("result" in res.data)) throw new Error(`job ${job.id}: no result`);
  const iops: number = res.data.result.summary.iops;
  console.log(`job ${job.id}: ${iops} IOPS`);

  // and fio's iops log of it, as text
  const log = await api.GET("/api/bench/v1/jobs/{id}/fio-log", {
    headers,
    params: { path: { id: job.id }, query: { log: "iops" } },
    parseAs: "text",
  });
  const lines: string | undefined = log.data;
  if (!lines) throw new Error(`job ${job.id}: no iops log (${log.response.status})`);
  console.log(lines.split("\n").length, "lines of fio's iops log");

  const out = await api.DELETE("/api/access/v1", { headers });
  if (out.response.status !== 204) throw new Error(`logout: ${out.response.status}`);
  return job.id;
}
