// Results left unreleased on a small heap, for tests/node/memory.test.mjs: run with
// --wasm-max-mem-pages=N (V8 caps every WebAssembly memory at N x 64 KiB, so the heap fills after a few
// runs instead of 4 GiB) and --expose-gc. argv[2] is the scenario; prints one JSON line.
//   held:    lazy traces and a module kept alive until a run, a forward and a create find the heap full;
//            then disposed, and the same run again
//   dropped: lazy traces dropped and collected (gc()), and a run at once, in the same task: before the
//            FinalizationRegistry's callbacks could run
//   own:     no result alive, and a run bigger than the capped heap
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
/** SelfAttention_v1(1, 1) on 2,500 tokens: its lazy trace keeps ~48 MiB (the (2500, 2500) scores and weights). */
const CONFIG = { d_in: 1, d_out: 1 };
const tokens = (n) => ({ shape: [n, 1], data: lab.seededTokens(n, 1, 1).data });
const x = tokens(2500);
const run = () => lab.run("SelfAttention_v1", CONFIG, x, { trace: "lazy" });
const errorOf = (f) => {
  try {
    f();
    return null;
  } catch (e) {
    return { code: e.code, slot: e.slot, message: e.message, hint: e.hint };
  }
};

/** Runs until the heap refuses one (at most 20): the results kept, and the refusal. */
function fill() {
  const kept = [];
  for (let i = 0; i < 20; i++) {
    const error = errorOf(() => kept.push(run()));
    if (error) return { kept, error };
  }
  throw new Error("20 runs fit: is --wasm-max-mem-pages missing?");
}

const scenario = process.argv[2];
if (scenario === "held") {
  const module = lab.create("SelfAttention_v1", { d_in: 512, d_out: 512 });  // 3 x 512 x 512 float32: 3 MiB
  const wide = { shape: [2500, 512], data: lab.seededTokens(1, 2500 * 512, 2).data };
  const generator = lab.manualSeed(5);
  const dropping = lab.create("CausalAttention", { d_in: 1, d_out: 1, context_length: 2500, dropout: 0.5 }, { generator: lab.manualSeed(1) });
  const { kept, error } = fill();
  const forward = errorOf(() => module.forward(wide, { trace: "lazy" }));
  // a forward that draws dropout masks: refused, it leaves its generator where it was
  const drawsBefore = Array.from(generator._state);
  const dropped = errorOf(() => dropping.forward({ shape: [1, 2500, 1], data: x.data }, { trace: "lazy", generator }));
  const generatorKept = Array.from(generator._state).every((w, i) => w === drawsBefore[i]);
  const create = errorOf(() => lab.create("SelfAttention_v1", { d_in: 4096, d_out: 4096 }));  // 192 MiB of parameters
  const traceBytes = kept[0].trace.bytes;
  for (const r of kept) r.trace.dispose();
  module.dispose();
  // then it runs, and draws what a fresh manualSeed(5) draws
  const masks = dropping.forward({ shape: [1, 2500, 1], data: x.data }, { generator }).output.data;
  const fresh = dropping.forward({ shape: [1, 2500, 1], data: x.data }, { generator: lab.manualSeed(5) }).output.data;
  const sameMasks = masks.every((v, i) => Object.is(v, fresh[i]));
  dropping.dispose();
  const again = run();
  console.log(JSON.stringify({ kept: kept.length, keptBytes: traceBytes, estimate: lab.estimateBytes("SelfAttention_v1", CONFIG, x.shape, { trace: "lazy" }), error, forward, create, dropped: dropped?.code ?? null, generatorKept, sameMasks, again: again.trace.bytes, traceBytes: lab.traceBytesInUse() }));
} else if (scenario === "dropped") {
  let { kept } = fill();
  const count = kept.length;
  await new Promise((resolve) => setTimeout(resolve, 0));  // a task later: nothing of this task keeps them alive
  kept = null;
  globalThis.gc();
  // still in this task: the registry's callbacks have not run, so the handles are all there
  const before = lab.handlesInUse();
  const error = errorOf(() => { kept = [run()]; });
  console.log(JSON.stringify({ count, before, error, after: lab.handlesInUse() }));
} else if (scenario === "own") {
  const error = errorOf(() => lab.run("SelfAttention_v1", CONFIG, tokens(6000), { trace: "lazy" }));  // a ~275 MiB trace
  console.log(JSON.stringify({ error, handles: lab.handlesInUse() }));
}
