// The npm tarball in a page. `npm pack`, installed offline into an empty folder, then that
// folder served by a plain static server: a page that imports the library through an import map (the
// way a site without a bundler uses an npm package) runs GPT-2 small's attention and gets the same
// numbers as Node does from this checkout (running the same binary: Chromium's is the relaxed-SIMD one).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import sirv from "sirv";
import { loadAttentionLab } from "attention-lab";
import { inNodeWithRelaxedSimd, installPackedTarball, launchChromium } from "./helpers.mjs";

describe("the npm tarball in a page", () => {
  let dir;
  let server;
  let context;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-pack-page-"));
    const site = installPackedTarball(dir, "site");
    writeFileSync(path.join(site, "index.html"), `<!doctype html><meta charset="utf-8"><title>site</title>
<script type="importmap">{"imports": {"attention-lab": "./node_modules/attention-lab/web/lib/attention-lab.js"}}</script>
<script type="module" src="./main.js"></script><pre id="out"></pre>`);
    writeFileSync(path.join(site, "main.js"), `import { loadAttentionLab } from "attention-lab";
const lab = await loadAttentionLab();
const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
document.getElementById("out").textContent = JSON.stringify({ kernel: lab.kernel, shape: y.shape, first: Array.from(y.data.slice(0, 8)) });`);
    const files = sirv(site);
    server = http.createServer((req, res) => files(req, res, () => { res.statusCode = 404; res.end(); }));
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    context = await launchChromium(path.join(dir, "profile"));
  });
  after(async () => {
    await context?.close();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  test("imported through an import map from node_modules, it runs with the same bits as in Node", async () => {
    const page = await context.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(e.message));
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => document.getElementById("out").textContent !== "", null, { timeout: 60_000 });
    const got = JSON.parse(await page.locator("#out").textContent());
    // Chromium has relaxed SIMD, so the page loads the fused multiply-add binary: Node running the
    // same binary gives its bits; Node's default (plain) binary gives them within 1e-6
    const RUN = `const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
      const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
      const result = { kernel: lab.kernel, shape: y.shape, first: Array.from(y.data.slice(0, 8)) };`;
    assert.equal(got.kernel, "relaxed_madd");
    assert.deepEqual(got, inNodeWithRelaxedSimd(`const lab = await loadAttentionLab(); ${RUN} console.log(JSON.stringify(result));`));
    const plain = new Function("lab", `${RUN} return result;`)(await loadAttentionLab());
    assert.equal(plain.kernel, "simd128");
    assert.ok(got.first.every((v, i) => Math.abs(v - plain.first[i]) <= 1e-6), `${got.first} vs ${plain.first}`);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
