// The one timing loop of the WASM rows (Node and the browser page): one warm-up forward, then `reps`
// timed eval forwards of `module` on `x`; checksum is the sum of the last output (engines compare it).
export function timeForwards(module, x, reps) {
  let out = module.forward(x, { training: false }).output;
  const samples = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    out = module.forward(x, { training: false }).output;
    samples.push(performance.now() - t0);
  }
  return { samples, checksum: checksum(out.data) };
}

export function checksum(data) {
  let s = 0;
  for (const v of data) s += v;
  return s;
}
