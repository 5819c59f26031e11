// loadAttentionLab({checkpoints: false}): the lean binaries (attention_core_lean[_fma].wasm, the
// bindings without the checkpoint and GPT-2 readers), in a process of its own (node --test runs each
// file in one) so that the first load happens here: what loads, that its forwards and parameters are
// the full binary's bits, that the checkpoint methods (and checkModule of a file) refuse with no_checkpoints, and the
// once-per-realm rule with the option.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { AttentionError, loadAttentionLab } from "attention-lab";

const ROOT = new URL("../..", import.meta.url);
const CONFIG = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

/** GPT-2 small's attention under seed 123 on 64 seeded tokens: the SHA-256 of its output's and each parameter's float32 bits. */
const PROBE = `
  const m = lab.create("MultiHeadAttention", ${JSON.stringify(CONFIG)}, { generator: lab.manualSeed(123) });
  const y = m.forward({ shape: [1, 64, 768], data: lab.seededTokens(64, 768, 1).data }, { training: false }).output;
  const sha = (a) => createHash("sha256").update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest("hex");
  const bits = { output: sha(y.data), parameters: m.parameters().map((p) => p.name + ":" + sha(p.data)).join(",") };`;

/** What a fresh Node process loads with `options` (a JS expression), and its probe's bits. */
async function child(options) {
  const script = `
    import { loadAttentionLab } from "attention-lab";
    import { createHash } from "node:crypto";
    const lab = await loadAttentionLab(${options});
    ${PROBE}
    console.log(JSON.stringify({ hasCheckpoints: lab.hasCheckpoints, threads: lab.threads, kernel: lab.kernel, bits }));
    process.exit(0);`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

/** The AttentionError a promise rejects with, as {code, slot, message, hint}. */
async function refusal(promise) {
  const err = await promise.then(() => assert.fail("it resolved"), (e) => e);
  assert.ok(err instanceof AttentionError, String(err));
  return { code: err.code, slot: err.slot, message: err.message, hint: err.hint };
}

describe("loadAttentionLab({checkpoints: false})", () => {
  test("checkpoints that is not a boolean is wasm_options naming it (and nothing is loaded)", async () => {
    const r = await refusal(loadAttentionLab({ checkpoints: "no", threads: 1 }));
    assert.deepEqual([r.code, r.slot], ["wasm_options", "checkpoints"]);
    assert.match(r.message, /checkpoints must be true or false, got "no"/);
  });

  let lab;
  test("on one thread it loads the lean binary: no checkpoint readers, the full binary's bits for the same module and input", async () => {
    lab = await loadAttentionLab({ checkpoints: false, threads: 1 });
    assert.equal(lab.hasCheckpoints, false);
    assert.equal(lab.threads, 1);
    assert.equal(lab.kernel, "simd128");  // Node 20 without --experimental-wasm-relaxed-simd
    const bits = new Function("lab", "createHash", `${PROBE}; return bits;`)(lab, createHash);
    const full = await child("{ threads: 1 }");
    assert.deepEqual([full.hasCheckpoints, full.threads, full.kernel], [true, 1, "simd128"]);
    assert.equal(bits.output, full.bits.output);
    assert.equal(bits.parameters, full.bits.parameters);
  });

  test("the lean binary is the smaller download it is for: at most three quarters of the full one, gzipped", () => {
    const gz = (name) => gzipSync(readFileSync(new URL(`web/lib/${name}`, ROOT)), { level: 9 }).length;
    for (const [lean, full] of [["attention_core_lean.wasm", "attention_core.wasm"], ["attention_core_lean_fma.wasm", "attention_core_fma.wasm"]]) {
      assert.ok(gz(lean) <= 0.75 * gz(full), `${lean} ${gz(lean)} bytes gzip, ${full} ${gz(full)}`);
    }
  });

  test("openCheckpoint, loadCheckpoint, checkpointInput, loadGPT2 and checkModule of a file reject with no_checkpoints naming the method", async () => {
    const file = new Uint8Array(16);
    for (const [method, call] of [
      ["openCheckpoint", () => lab.openCheckpoint(file)],
      ["loadCheckpoint", () => lab.loadCheckpoint(file, { layer: 0 })],
      ["checkpointInput", () => lab.checkpointInput(file, { tokenIds: [1, 2] })],
      ["loadGPT2", () => lab.loadGPT2(file)],
      ["checkModule", () => lab.checkModule(file)],
    ]) {
      const r = await refusal(call());
      assert.deepEqual([r.code, r.slot], ["no_checkpoints", method]);
      assert.match(r.message, new RegExp(`lab\\.${method} needs the checkpoint readers`));
      assert.match(r.hint, /without \{checkpoints: false\}/);
    }
  });

  test("the head split's methods refuse with no_head_split naming the method; a head split runs such a module's forward whole, with its bits", async () => {
    const { createHeadSplit } = await import("attention-lab/head-split");
    const m = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 6, dropout: 0.0, num_heads: 2 });
    const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 1).data };
    for (const [method, call] of [
      ["headShares", () => m.headShares(2)],
      ["forwardShare", () => m.forwardShare(x, { first: 0, count: 1 })],
      ["projectHeads", () => m.projectHeads(x, [])],
      ["revision", () => m.revision],
    ]) {
      assert.throws(call, (e) => e.code === "no_head_split" && e.slot === method && /without \{checkpoints: false\}/.test(e.hint), method);
    }
    const y = (await createHeadSplit({ workers: 0 }).forward(m, x, { training: false })).output;
    assert.deepEqual(Array.from(y.data), Array.from(m.forward(x, { training: false }).output.data));
  });

  test("reserveMemory takes nothing on the lean binary (it has no reserve) and still names the budget; the setup's errors still come", () => {
    const config = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
    const before = lab.heapPeak();
    const r = lab.reserveMemory("MultiHeadAttention", config, [1, 256, 768], { trace: "lazy" });
    assert.deepEqual(r, { bytes: 0, budget: lab.estimateBytes("MultiHeadAttention", config, [1, 256, 768], { trace: "lazy" }).budget });
    assert.ok(lab.heapPeak() - before < 1048576);
    assert.throws(() => lab.reserveMemory("MultiHeadAttention", { ...config, num_heads: 5 }, [1, 8, 768]), (e) => e.code === "heads_divisibility");
  });

  test("loaded once: a later call with nothing or checkpoints: false shares the lean lab; checkpoints: true is wasm_loaded", async () => {
    assert.equal(await loadAttentionLab(), lab);
    assert.equal(await loadAttentionLab({ checkpoints: false }), lab);
    const r = await refusal(loadAttentionLab({ checkpoints: true }));
    assert.deepEqual([r.code, r.slot], ["wasm_loaded", "checkpoints"]);
  });

  test("a threaded load has no lean binary: checkpoints: false there loads the full threaded one, readers and all", async () => {
    const r = await child("{ checkpoints: false, threads: 2 }");
    assert.deepEqual([r.hasCheckpoints, r.threads], [true, 2]);
  });
});

// npm start serves the page's first view before the single-thread binary is linked (scripts/build.sh
// --first-view), with the lean link's glue renamed as attention_core.mjs: that holds only while the
// glues differ in nothing but the .wasm name they would fetch by default.
test("the lean links' glue is attention_core.mjs but for the default .wasm name", { skip: !existsSync(new URL("build/wasm/attention_core_lean.mjs", ROOT)) && "no WebAssembly build" }, () => {
  const glue = readFileSync(new URL("build/wasm/attention_core.mjs", ROOT), "utf8");
  assert.ok(glue.includes('"attention_core.wasm"'), "the glue names its default .wasm");
  for (const lean of ["attention_core_lean", "attention_core_lean_fma"]) {
    const text = readFileSync(new URL(`build/wasm/${lean}.mjs`, ROOT), "utf8");
    assert.notEqual(text, glue, `${lean}.mjs names its own .wasm`);
    assert.equal(text.replaceAll(`${lean}.wasm`, "attention_core.wasm"), glue, `${lean}.mjs, renamed`);
  }
});
