// Objects returned to JS need no .delete(): modules and generators live in WASM memory until their JS
// objects are garbage-collected (a FinalizationRegistry releases them) or disposed, so the WASM heap
// stays flat over many create+forward cycles.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { stackTwo, collectGarbage } from "./helpers.mjs";

const lab = await loadAttentionLab();
const heldChild = fileURLToPath(new URL("./children/held-results.mjs", import.meta.url));

/** children/held-results.mjs's `scenario` on a heap capped at 256 MiB (4,096 pages of 64 KiB), its JSON line. */
function onSmallHeap(scenario) {
  return JSON.parse(execFileSync(process.execPath, ["--expose-gc", "--wasm-max-mem-pages=4096", heldChild, scenario], { encoding: "utf8" }));
}

test("1,000 create+forward cycles leave the WASM heap flat", async () => {
  const x = stackTwo(lab.bookTokens());
  const config = { d_in: 3, d_out: 2, context_length: 6, dropout: 0.5, num_heads: 2 };
  const cycle = () => {
    const m = lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(1) });
    m.forward(x, { trace: true });
  };
  // Garbage collection every 100 cycles, as a page would see it; the warm-up lets the allocator and
  // the handle table reach the size 100 cycles of live modules need.
  for (let i = 0; i < 100; i++) cycle();
  await collectGarbage();
  const before = lab.heapInUse();
  const handles = lab.handlesInUse();
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 100; i++) cycle();
    await collectGarbage();
  }
  const after = lab.heapInUse();
  assert.ok(before > 0);
  assert.equal(lab.handlesInUse(), handles, "every module and generator of the cycles was released");
  assert.equal(after, before, `heap in use grew from ${before} to ${after} bytes`);
});

test("2,000 create -> forward -> discard cycles at GPT-2 width, with garbage collection in between, keep the heap within 1 MiB", async () => {
  const config = { d_in: 64, d_out: 64, context_length: 16, dropout: 0.1, num_heads: 4 };
  const x = { shape: [1, 16, 64], data: lab.seededTokens(16, 64, 5).data };
  const cycle = () => lab.create("MultiHeadAttention", config, { generator: lab.manualSeed(2) }).forward(x, { trace: true });
  for (let i = 0; i < 20; i++) cycle();
  await collectGarbage();
  const before = lab.heapInUse();
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 100; i++) cycle();
    await collectGarbage();
  }
  const after = lab.heapInUse();
  assert.ok(Math.abs(after - before) <= 1024 * 1024, `heap in use went from ${before} to ${after} bytes`);
});

test("2,000 forwards of one module keep the heap flat, and dispose() frees the module at once", () => {
  const m = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 12, dropout: 0.0, num_heads: 2 });
  const x = { shape: [2, 12, 8], data: lab.seededTokens(24, 8, 3).data };
  for (let i = 0; i < 10; i++) m.forward(x, { trace: true });
  const before = lab.heapInUse();
  for (let i = 0; i < 2000; i++) m.forward(x, { trace: i % 2 === 0 });
  assert.equal(lab.heapInUse(), before);
  const handles = lab.handlesInUse();
  m.dispose();
  assert.equal(lab.handlesInUse(), handles - 1);
  assert.ok(lab.heapInUse() < before, "the module's parameters were freed");
  assert.throws(() => m.forward(x), (e) => e instanceof AttentionError && e.code === "disposed" && e.slot === "module");
  m.dispose();  // twice is harmless
});

test("errors leave the heap flat too", async () => {
  const refusals = () => {
    try {
      lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 });
    } catch {
      // refused
    }
    try {
      lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }).forward({ shape: [1, 7, 3], data: new Float32Array(21) });
    } catch {
      // refused
    }
  };
  // One refusal first: the threaded build's C++ runtime allocates its per-thread exception state (16
  // bytes) at a thread's first exception, once, not per error.
  refusals();
  await collectGarbage();
  const before = lab.heapInUse();
  for (let i = 0; i < 200; i++) {
    try {
      lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 });
    } catch {
      // refused, as it must be: what matters is that nothing is left behind
    }
    try {
      lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0 }).forward({ shape: [1, 7, 3], data: new Float32Array(21) });
    } catch {
      // likewise
    }
  }
  await collectGarbage();
  assert.equal(lab.heapInUse(), before);
});

test("MultiHeadAttention(100000, 100000, 1024, 0.0, 10) is refused before allocating, with the bytes; the lab keeps working", () => {
  const before = lab.heapInUse();
  const config = { d_in: 100000, d_out: 100000, context_length: 1024, dropout: 0.0, num_heads: 10 };
  let error;
  try {
    lab.create("MultiHeadAttention", config);
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof AttentionError);
  assert.equal(error.code, "too_large");
  assert.equal(error.slot, "d_in");
  // 3 x 100000^2 + 100000^2 + 100000 float32 = 160,000,400,000 bytes
  assert.match(error.message, /160,000,400,000 bytes/);
  assert.equal(lab.heapInUse(), before, "nothing was allocated");
  const m = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: lab.manualSeed(123) });
  const { output } = m.forward(stackTwo(lab.bookTokens()));
  assert.deepEqual(output.shape, [2, 6, 2]);
  assert.equal(Math.round(output.data[0] * 1e4) / 1e4, 0.319);
});

test("a forward whose trace is over the budget is refused before allocating (check with inputShape, and forward itself)", () => {
  const config = { d_in: 768, d_out: 768, context_length: 100000, dropout: 0.0, num_heads: 12 };
  const checked = lab.check("MultiHeadAttention", config, { inputShape: [1, 20000, 768] }).find((d) => d.severity === "error");
  assert.equal(checked.code, "too_large");
  assert.deepEqual(checked.slots, []);
  // 4 x 12 x 20000^2 float32 of scores, masked scores, weights and dropped weights alone: ~77 GB
  assert.match(checked.message, /needs about [\d,]+ bytes/);
  assert.ok(Number(checked.message.match(/about ([\d,]+) bytes/)[1].replaceAll(",", "")) > 7.6e10);
  const m = lab.create("MultiHeadAttention", config);  // 2,362,368 parameters: fine on its own
  const x = { shape: [1, 20000, 768], data: new Float32Array(20000 * 768) };  // 61 MB of zeros, made lazily by the OS
  const before = lab.heapInUse();
  let error;
  try {
    m.forward(x, { trace: true });
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof AttentionError);
  assert.equal(error.code, "too_large");
  assert.equal(error.slot, "x");
  assert.equal(lab.heapInUse(), before, "the input copy was freed and nothing else was allocated");
  const small = m.forward({ shape: [1, 4, 768], data: new Float32Array(4 * 768).fill(0.01) }, { training: false });
  assert.deepEqual(small.output.shape, [1, 4, 768]);
});

test("a run, a forward or a create that finds the heap full of results not released says so, names them, and runs once they are disposed", () => {
  const r = onSmallHeap("held");
  // 4 lazy traces of SelfAttention_v1(1, 1) on 2,500 tokens (2 x 2500^2 float32 each: scores and weights) and a 3 MiB module fill the 256 MiB heap
  assert.equal(r.kept, 4);
  assert.equal(r.keptBytes, 50060000);
  const mib = (bytes) => Math.round(bytes / 1048576).toLocaleString("en-US");
  // the modules: SelfAttention_v1(512, 512)'s 3 MiB and a CausalAttention(1, 1, 2500, 0.5)
  const held = `6 results not released hold 194 MiB of it (4 lazy traces: 191 MiB; 2 modules: 3 MiB)`;
  assert.deepEqual(r.error, {
    code: "results_not_released", slot: "trace",
    message: `this run needs about ${mib(r.estimate.bytes)} MiB, and the WebAssembly heap is full: ${held}`,
    hint: "Call dispose() on the results you are done with (trace.dispose(), module.dispose()), or drop them: a dropped result is freed once the garbage collector finds it, which can be long after its memory is needed (a loop of runs should dispose each one). This run alone is within the 1,536 MiB budget.",
  });
  assert.equal(r.forward.code, "results_not_released");
  assert.match(r.forward.message, new RegExp(`^this forward needs about [\\d,]+ MiB, and the WebAssembly heap is full: ${held.replace(/[()]/g, "\\$&")}$`));
  assert.equal(r.create.code, "results_not_released");
  assert.match(r.create.message, /^this module needs about 192 MiB, and the WebAssembly heap is full: 6 results not released/);
  // a forward drawing dropout masks is refused the same way and leaves its generator as it was: called
  // again once there is room, it draws what a fresh manualSeed(5) draws
  assert.equal(r.dropped, "results_not_released");
  assert.equal(r.generatorKept, true);
  assert.equal(r.sameMasks, true);
  // disposed, the same run fits again, and only its trace is alive
  assert.equal(r.again, 50060000);
  assert.equal(r.traceBytes, 50060000);
});

test("results dropped and collected are released before a run is refused, even before the FinalizationRegistry's callbacks ran", () => {
  const r = onSmallHeap("dropped");
  assert.equal(r.count, 4, "4 lazy traces filled the heap");
  assert.equal(r.before, 4, "collected, but their handles not yet released by the registry");
  assert.equal(r.error, null, "the run found their memory");
  assert.equal(r.after, 1, "the 4 were released; the new run's trace is the one handle");
});

test("with no result alive, a run bigger than the heap is refused for its own size (too_large), as before", () => {
  const r = onSmallHeap("own");
  assert.deepEqual(r.error, { code: "too_large", slot: "x", message: "not enough memory for a forward pass of SelfAttention_v1(1, 1) on (6000, 1)", hint: "Use fewer tokens, a smaller batch, or turn the trace off." });
  assert.equal(r.handles, 0);
});
