// SPDX-License-Identifier: ISC
// Runs each compiled client (build/clients/*.js) against SPINDLE_URL as SPINDLE_USER
// with SPINDLE_PASSWORD, one after another; exits 1 at the first that throws.
"use strict";
const clients = ["openapi-fetch", "orval", "hey"];
(async () => {
  const { SPINDLE_URL: base, SPINDLE_USER: user, SPINDLE_PASSWORD: password } = process.env;
  for (const name of clients) {
    const { run } = require(`./build/clients/${name}.js`);
    try {
      await run(base, user, password);
      console.log(`${name}: ok`);
    } catch (e) {
      console.log(`${name}: FAILED: ${e && e.stack ? e.stack : e}`);
      process.exit(1);
    }
  }
})();
