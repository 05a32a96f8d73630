// SPDX-License-Identifier: ISC
// Analytics worksheets: #/worksheets lists them; #/worksheets/<uuid> shows one;
// #/worksheets/new starts one, with ?dataset=<name> (the dashboard's tiles) as its first
// chart. The list and the worksheet live in js/ws/.

import { renderList } from '../ws/list.js';
import { renderSheet } from '../ws/sheet.js';

export function render(main, ctx) {
  return ctx.parts.length ? renderSheet(main, ctx) : renderList(main, ctx);
}
