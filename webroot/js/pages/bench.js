// SPDX-License-Identifier: ISC
// Benchmarks: the run list (#/bench), the submit form (#/bench/new, #/bench/sweeps/new), one run
// (#/bench/jobs/<id>), the comparison (#/bench/compare?ids=a,b&baseline=a) and the sweeps
// (#/bench/sweeps, #/bench/sweeps/<id>). Each lives in js/bench/; this picks the one the
// route names.

export async function render(main, ctx) {
  const [first] = ctx.parts;
  const name = first === 'new' || (first === 'sweeps' && ctx.parts[1] === 'new') ? 'form' : first === 'jobs' && ctx.parts.length > 1 ? 'job' : first === 'compare' ? 'compare' : first === 'sweeps' ? 'sweeps' : 'list';
  const mod = await import(`../bench/${name}.js`);
  if (ctx.signal.aborted) return;
  await mod.render(main, ctx);
}
