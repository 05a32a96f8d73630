// SPDX-License-Identifier: ISC
// orval's fetch client of the API document (DOC, else api/openapi.json), each call made
// through clients/orval-fetch.ts: the box's address in front, and the body read as its
// Content-Type says (fio's logs are text).
module.exports = {
  spindle: {
    input: process.env.DOC || "../../api/openapi.json",
    output: {
      target: "./gen/orval.ts",
      client: "fetch",
      mode: "single",
      override: { mutator: { path: "./clients/orval-fetch.ts", name: "spindleFetch" } },
    },
  },
};
