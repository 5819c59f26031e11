// The head split (web/lib/head-split.js, issue 21.2) on a page that is not cross-origin isolated, as a
// plain static host serves it: no threads there, so a forward's heads run across plain Workers, each
// with its own single-thread core and a copy of the module. The output has module.forward's bits; the
// copy follows the module's parameters; what cannot split runs whole on the calling thread. Under
// Trusted Types a plain Worker URL is refused with a coded error, and a TrustedScriptURL works.
import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import sirv from "sirv";
import { ROOT, launchLab } from "./helpers.mjs";

describe("head split", () => {
  let lab;
  let server;
  let url;
  before(async () => {
    lab = await launchLab();
    const files = sirv(path.join(ROOT, "web"), { dev: true });
    server = http.createServer((req, res) => {
      if (req.url === "/blank.html" || req.url === "/trusted-types.html") {
        res.setHeader("Content-Type", "text/html");
        // Trusted Types: a Worker's script URL must be a TrustedScriptURL; the page allows its own policy
        if (req.url === "/trusted-types.html") res.setHeader("Content-Security-Policy", "script-src 'self' 'wasm-unsafe-eval'; require-trusted-types-for 'script'; trusted-types host-policy");
        res.end("<!doctype html><title>head split</title>");
        return;
      }
      files(req, res, () => { res.statusCode = 404; res.end(); });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}/`;
  });
  after(async () => {
    await lab?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const open = async (name = "blank.html") => {
    const page = await lab.context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${url}${name}`);
    page.errors = errors;
    return page;
  };

  test("GPT-2-small attention on 200 tokens over 1 and 2 Workers: module.forward's bits, the Workers on the single-thread core, copies refreshed after setParameter", async () => {
    const page = await open();
    const r = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const { createHeadSplit } = await import("/lib/head-split.js");
      const lab = await loadAttentionLab();
      const m = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.1, num_heads: 12 });
      const x = { shape: [1, 200, 768], data: lab.seededTokens(200, 768, 3).data };
      const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
      const out = { isolated: globalThis.crossOriginIsolated, threads: lab.threads };
      const whole = m.forward(x, { training: false }).output;
      for (const workers of [1, 2]) {
        const split = createHeadSplit({ workers });
        const y = (await split.forward(m, x, { training: false })).output;
        out[`w${workers}`] = { workers: split.workers, shape: y.shape, same: same(y.data, whole.data) };
        if (workers === 2) {
          m.setParameter("W_key.weight", { shape: [768, 768], data: lab.seededTokens(768, 768, 9).data });
          const again = m.forward(x, { training: false }).output;
          const z = (await split.forward(m, x, { training: false })).output;
          out.afterSet = { changed: !same(again.data, whole.data), same: same(z.data, again.data) };
          // training with dropout 0.1: one stream of draws, so the whole forward on this thread (same generator state -> same bits)
          const t = await split.forward(m, x, { training: true });
          out.training = { shape: t.output.shape, finite: t.output.data.every(Number.isFinite) };
        }
        split.dispose();
      }
      try {
        await createHeadSplit({ workers: 1 }).forward(m, { shape: [1, 4, 5], data: new Float32Array(20) }, { training: false });
      } catch (e) {
        out.badInput = [e.code, e.slot];
      }
      try {
        createHeadSplit({ workers: 1.5 });
      } catch (e) {
        out.badWorkers = [e.code, e.slot];
      }
      return out;
    });
    assert.equal(r.isolated, false, "a plain static server: no COOP/COEP");
    assert.equal(r.threads, 1);
    assert.deepEqual(r.w1, { workers: 1, shape: [1, 200, 768], same: true });
    assert.deepEqual(r.w2, { workers: 2, shape: [1, 200, 768], same: true });
    assert.deepEqual(r.afterSet, { changed: true, same: true }, "the Workers' copies follow setParameter");
    assert.deepEqual(r.training, { shape: [1, 200, 768], finite: true });
    assert.deepEqual(r.badInput, ["input_width", "d_in"]);
    assert.deepEqual(r.badWorkers, ["bad_options", "workers"]);
    const workers = page.workers().map((w) => new URL(w.url()).pathname);
    assert.ok(workers.every((p) => p === "/lib/head-split-worker.js"), workers.join(", "));
    const wasm = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => p.endsWith(".wasm")));
    assert.ok(!wasm.some((p) => p.includes("_mt")), `no threaded binary: ${wasm.join(", ")}`);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test("under Trusted Types: a plain URL is refused as trusted_types saying what to pass; a TrustedScriptURL from the page's policy splits with forward's bits", async () => {
    const page = await open("trusted-types.html");
    const r = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const { createHeadSplit } = await import("/lib/head-split.js");
      const lab = await loadAttentionLab();
      const m = lab.create("MultiHeadAttention", { d_in: 8, d_out: 8, context_length: 6, dropout: 0, num_heads: 4 }, { generator: lab.manualSeed(1) });
      const x = { shape: [1, 6, 8], data: lab.seededTokens(6, 8, 3).data };
      const refusals = [undefined, "/lib/head-split-worker.js"].map((workerUrl) => {
        try {
          createHeadSplit({ workers: 1, workerUrl });
          return "started";
        } catch (e) {
          return { name: e.name, code: e.code, slot: e.slot, message: e.message, hint: e.hint };
        }
      });
      const policy = trustedTypes.createPolicy("host-policy", { createScriptURL: (u) => u });
      const split = createHeadSplit({ workers: 1, workerUrl: policy.createScriptURL("/lib/head-split-worker.js") });
      const whole = m.forward(x, { training: false }).output.data;
      const parts = (await split.forward(m, x, { training: false })).output.data;
      split.dispose();
      return { refusals, same: parts.length === whole.length && whole.every((v, i) => Object.is(v, parts[i])) };
    });
    for (const refusal of r.refusals) {
      assert.deepEqual({ ...refusal, hint: "" }, { name: "AttentionError", code: "trusted_types", slot: "workerUrl", message: "this page requires Trusted Types, and a head split's Worker cannot start from a plain URL", hint: "" });
      assert.match(refusal.hint, /^Pass createHeadSplit\(\{workerUrl\}\) a TrustedScriptURL of head-split-worker\.js made by a policy your page allows, .*or \{workers: 0\}/);
    }
    assert.equal(r.same, true, "the split over the Worker started from the TrustedScriptURL has forward's bits");
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test("what cannot split (a single-head class, the wrapper's 3 heads over 5 Workers) still gives forward's bits", async () => {
    const page = await open();
    const r = await page.evaluate(async () => {
      const { loadAttentionLab } = await import("/lib/attention-lab.js");
      const { createHeadSplit } = await import("/lib/head-split.js");
      const lab = await loadAttentionLab();
      const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
      const split = createHeadSplit({ workers: 4 });
      const ca = lab.create("CausalAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
      const wrapper = lab.create("MultiHeadAttentionWrapper", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 3 });
      const x = { shape: [2, 6, 3], data: new Float32Array(36).map((_, i) => Math.sin(i)) };
      const out = {
        shares: [ca.headShares(5, { training: false }).length, wrapper.headShares(5, { training: false }).length],
        ca: same((await split.forward(ca, x, { training: false })).output.data, ca.forward(x, { training: false }).output.data),
        wrapper: same((await split.forward(wrapper, x, { training: false })).output.data, wrapper.forward(x, { training: false }).output.data),
      };
      split.dispose();
      try {
        await split.forward(ca, x);
      } catch (e) {
        out.disposed = e.code;
      }
      return out;
    });
    assert.deepEqual(r, { shares: [1, 3], ca: true, wrapper: true, disposed: "disposed" });
    await page.close();
  });
});
