// The threaded core on the page (issue 21.2): npm start's server makes the page cross-origin isolated
// (COOP/COEP), so the facade loads the threaded binary with a pool of the machine's cores (at most 4);
// the run panel says so, and the products give the same bits as Node's single-thread binary of the
// same kind (relaxed SIMD: Chromium has it, Node gets it from a flag).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { finish, inNodeWithRelaxedSimd, launchLab, openPage } from "./helpers.mjs";

const MHA = { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 };

describe("threads", () => {
  let lab;
  before(async () => { lab = await launchLab(); });
  after(async () => { await lab?.close(); });

  test("served by npm start the page is cross-origin isolated, loads the threaded fused binary and says how many threads run", async () => {
    const page = await openPage(lab);
    const seen = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const l = await loadAttentionLab();
      const reason = document.querySelector("attention-lab").shadowRoot.querySelector("[data-testid=run-reason]");
      return {
        isolated: globalThis.crossOriginIsolated, cores: navigator.hardwareConcurrency, threads: l.threads, kernel: l.kernel,
        shown: { threads: reason.dataset.threads, kernel: reason.dataset.kernel, text: reason.textContent },
        wasms: performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => /\/lib\/attention_core\w*\.(wasm|mjs|js)$/.test(p)),
      };
    });
    assert.equal(seen.isolated, true);
    const expected = Math.min(seen.cores, 4);
    assert.equal(seen.threads, expected);
    assert.equal(seen.kernel, "relaxed_madd");
    assert.deepEqual(seen.shown, { threads: String(expected), kernel: "relaxed_madd", text: `Ready: the forward pass runs in your browser (WebAssembly SIMD, fused multiply-add, ${expected > 1 ? `${expected} threads` : "one thread"}).` });
    assert.ok(seen.wasms.includes("/lib/attention_core_mt_fma.wasm") && seen.wasms.includes("/lib/attention_core_mt.mjs"), seen.wasms.join(", "));
    assert.ok(!seen.wasms.includes("/lib/attention_core_fma.wasm"), "not the single-thread binary too");
    await finish(page);
  });

  test("GPT-2-small attention on 256 tokens on the page's threads: the same bits as Node's single-thread binary of the same kind", async () => {
    const page = await openPage(lab);
    const onPage = await page.evaluate(async (config) => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const l = await loadAttentionLab();
      const m = l.create("MultiHeadAttention", config, { generator: l.manualSeed(123) });
      const y = m.forward({ shape: [1, 256, 768], data: l.seededTokens(256, 768, 5).data }, { training: false }).output.data;
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(y.buffer, y.byteOffset, y.byteLength)));
      return { threads: l.threads, length: y.length, sha256: Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("") };
    }, MHA);
    assert.ok(onPage.threads > 1 || (await page.evaluate(() => navigator.hardwareConcurrency)) === 1);
    const inNode = inNodeWithRelaxedSimd(`
      const l = await loadAttentionLab({ threads: 1 });
      const m = l.create("MultiHeadAttention", ${JSON.stringify(MHA)}, { generator: l.manualSeed(123) });
      const y = m.forward({ shape: [1, 256, 768], data: l.seededTokens(256, 768, 5).data }, { training: false }).output.data;
      const { createHash } = await import("node:crypto");
      const sha256 = createHash("sha256").update(new Uint8Array(y.buffer, y.byteOffset, y.byteLength)).digest("hex");
      console.log(JSON.stringify({ threads: l.threads, kernel: l.kernel, length: y.length, sha256 }));
    `);
    assert.deepEqual([inNode.threads, inNode.kernel], [1, "relaxed_madd"]);
    assert.deepEqual([onPage.length, inNode.length], [256 * 768, 256 * 768]);
    assert.equal(onPage.sha256, inNode.sha256, "every output value's bits (SHA-256 of the float32 bytes)");
    await finish(page);
  });
});
