// The threaded core on the page (issue 21.2): npm start's server makes the page cross-origin isolated
// (COOP/COEP). The page's own small forwards run on one thread (a Window's default: the single-thread
// fused binary, no pthread workers), its run worker loads the threaded binary with a pool of the
// machine's cores (at most 4); the run panel says which runs a setup, and the worker's products give
// the same bits as Node's single-thread binary of the same kind (relaxed SIMD: Chromium has it, Node
// gets it from a flag).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, inNodeWithRelaxedSimd, launchLab, openPage } from "./helpers.mjs";

const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };
const BIG = "?class=MultiHeadAttention&d_in=768&d_out=768&context_length=1024&dropout=0.0&num_heads=12&num_tokens=1024";

/** The run panel's status line: its text and what it says runs (data-kernel, data-threads, data-where). */
const readyLine = (page) => page.evaluate(() => {
  const reason = document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=run-reason]");
  return { text: reason.textContent, kernel: reason.dataset.kernel, threads: reason.dataset.threads, where: reason.dataset.where };
});

describe("threads", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("served by npm start the page is cross-origin isolated; its main thread loads the single-thread fused lean binary, no threaded glue, and says one thread", async () => {
    const page = await openPage(lab);
    const seen = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const l = await loadAttentionLab();
      return {
        isolated: globalThis.crossOriginIsolated, threads: l.threads, kernel: l.kernel, hasCheckpoints: l.hasCheckpoints,
        files: performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => /\/lib\/attention_core\w*\.(wasm|mjs|js)$/.test(p)),
      };
    });
    assert.equal(seen.isolated, true);
    assert.deepEqual([seen.threads, seen.kernel, seen.hasCheckpoints], [1, "relaxed_madd", false]);
    assert.deepEqual(seen.files.sort(), ["/lib/attention_core.mjs", "/lib/attention_core_lean_fma.wasm"], "the single-thread glue and the fused lean binary only");
    assert.equal(page.workers().length, 0, "no Worker at all for the default (small) setup");
    assert.deepEqual(await readyLine(page), { text: "Ready: the forward pass runs in your browser (WebAssembly SIMD, fused multiply-add, one thread).", kernel: "relaxed_madd", threads: "1", where: "page" });
    await finish(page);
  });

  test("a large setup runs in the run worker, on the threaded fused binary with the machine's cores (at most 4), and the run panel says so", async () => {
    const page = await openPage(lab, BIG);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const expected = Math.min(cores, 4);
    await page.waitForFunction(() => document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=run-reason]").dataset.threads !== "", null, { timeout: 60_000 });
    assert.deepEqual(await readyLine(page), {
      text: `Ready: the forward pass runs in your browser (WebAssembly SIMD, fused multiply-add, ${expected > 1 ? `${expected} threads` : "one thread"}, in a worker).`,
      kernel: "relaxed_madd", threads: String(expected), where: "worker",
    });
    const workers = page.workers().map((w) => new URL(w.url()).pathname);
    assert.equal(workers.filter((p) => p === "/app/run-worker.js").length, 1, workers.join(", "));
    assert.equal(workers.filter((p) => p === "/lib/attention_core_mt.worker.js").length, expected - 1, `its pool: threads - 1 pthread workers (${workers.join(", ")})`);
    await finish(page);
  });

  test("GPT-2-small attention on 256 tokens in the page's run worker, on its threads: the same bits as Node's single-thread binary of the same kind", async () => {
    const page = await openPage(lab);
    const inWorker = await page.evaluate(async (config) => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const l = await loadAttentionLab();
      const x = { shape: [1, 256, 768], data: l.seededTokens(256, 768, 5).data };
      const w = new Worker("/app/run-worker.js", { type: "module" });
      const answer = (pick) => new Promise((resolve) => w.addEventListener("message", function on(e) {
        if (pick(e.data)) { w.removeEventListener("message", on); resolve(e.data); }
      }));
      const info = (await answer((d) => d.info)).info;
      const done = answer((d) => d.id === 1);
      w.postMessage({ id: 1, className: "MultiHeadAttention", config, x, seed: 123, training: false });
      const r = await done;
      w.terminate();
      if (!r.ok) throw new Error(r.error.message);
      const y = r.output.data;
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(y.buffer, y.byteOffset, y.byteLength)));
      return { ...info, cores: navigator.hardwareConcurrency, shape: r.output.shape, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("") };
    }, MHA);
    assert.deepEqual([inWorker.threads, inWorker.kernel], [Math.min(inWorker.cores, 4), "relaxed_madd"]);
    const inNode = inNodeWithRelaxedSimd(`
      const l = await loadAttentionLab({ threads: 1 });
      const x = { shape: [1, 256, 768], data: l.seededTokens(256, 768, 5).data };
      const y = l.run("MultiHeadAttention", ${JSON.stringify(MHA)}, x, { seed: 123, training: false }).output.data;
      const { createHash } = await import("node:crypto");
      const sha256 = createHash("sha256").update(new Uint8Array(y.buffer, y.byteOffset, y.byteLength)).digest("hex");
      console.log(JSON.stringify({ threads: l.threads, kernel: l.kernel, length: y.length, sha256 }));
    `);
    assert.deepEqual([inNode.threads, inNode.kernel, inNode.length], [1, "relaxed_madd", 256 * 768]);
    assert.deepEqual(inWorker.shape, [1, 256, 768]);
    assert.equal(inWorker.sha256, inNode.sha256, "every output value's bits (SHA-256 of the float32 bytes)");
    await finish(page);
  });
});
