// SPDX-License-Identifier: ISC
// Makes the README's two pictures, docs/console-desktop.png (1280x800) and
// docs/console-phone.png (390x844), of the dashboard on the fake box after a minute of
// figures, so the sparklines have something to draw. Not a test: run it by hand after a
// change that shows on the dashboard:  node tests/e2e/docs-screenshots.mjs
import { join } from 'node:path';
import { DESKTOP, PHONE, launch, login, newContext, startBox } from './harness.mjs';

const DOCS = join(import.meta.dirname || new URL('.', import.meta.url).pathname, '..', '..', 'docs');
const box = await startBox();
const browser = await launch();
try {
  await new Promise((r) => setTimeout(r, 65000)); // a whole minute for the sparklines
  for (const [name, phone, size] of [['console-desktop', false, DESKTOP], ['console-phone', true, PHONE]]) {
    const context = await newContext(browser, { phone, scale: phone ? 2 : 1 });
    const page = await context.newPage();
    await login(page, box.https, 'admin', box.admin_password);
    await page.waitForSelector('body[data-ready="dashboard"]');
    await page.waitForTimeout(1500); // a second live document
    await page.screenshot({ path: join(DOCS, `${name}.png`), clip: { x: 0, y: 0, ...size } });
    await context.close();
  }
} finally {
  await browser.close();
  await box.stop();
}
