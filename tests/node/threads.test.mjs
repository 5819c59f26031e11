// The threaded core (issue 21.2): in Node a default load runs the products on a pool of the machine's
// cores (at most 4), {threads: n} asks for n, and every result has the same bits at any count. Each
// core loads once per realm, so each thread count runs in its own child process
// (children/threads-run.mjs), which must also exit by itself with the pool's workers alive.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";

const child = fileURLToPath(new URL("./children/threads-run.mjs", import.meta.url));
/** The child's report for a job; a child that does not exit on its own fails the test at the timeout. */
const run = (job) => JSON.parse(execFileSync(process.execPath, [child, JSON.stringify(job)], { encoding: "utf8", timeout: 240_000 }));

test("Node's default is the threaded core on the machine's cores, at most 4; the same lab again for a second call", async () => {
  const lab = await loadAttentionLab();
  assert.equal(lab.threads, Math.min(availableParallelism(), 4));
  assert.equal(lab.kernel, "simd128");
  assert.equal(await loadAttentionLab(), lab);
  assert.equal(await loadAttentionLab({ threads: lab.threads }), lab, "the thread count it runs on: the same lab");
  await assert.rejects(loadAttentionLab({ threads: lab.threads === 1 ? 2 : 1 }), (e) => e.code === "wasm_loaded" && e.slot === "threads" && /loaded once/.test(e.message));
});

test("threads that are not a whole number from 1 to 16 are refused before anything loads, naming the slot", async () => {
  for (const threads of [0, -1, 1.5, 17, Number.NaN, Infinity, "2", true, {}]) {
    await assert.rejects(loadAttentionLab({ threads }), (e) => e.code === "bad_threads" && e.slot === "threads" && /whole number from 1 to 16/.test(e.message), String(threads));
  }
});

test("1, 2 and 3 threads give the same bits: GPT-2-small attention on 256 tokens (eval; training, traced, with dropout), and the GPT-2-small-shaped model's run and generations", () => {
  const one = run({ threads: 1, gpt2: true });
  assert.equal(one.threads, 1, "{threads: 1}: the single-thread binary");
  for (const threads of [2, 3]) {
    const many = run({ threads, gpt2: true });
    assert.equal(many.threads, threads, "the pool started every thread asked for");
    assert.deepEqual(many.hashes, one.hashes, `${threads} threads`);
  }
  assert.equal(Object.keys(one.hashes).length, 5);
});
