// The npm package holds what a user imports and nothing else. `npm pack` gives the library
// (the facade, its .d.ts, the built WebAssembly core), the README, the changelog and the license;
// installed from the tarball into an empty folder (no network: it has no dependencies), it imports
// and runs GPT-2 small's attention with the same bits as this checkout.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

test("npm pack ships the library alone; installed into an empty folder it imports and runs", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-pack-"));
  try {
    const npm = (args, cwd) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], ROOT));
    assert.deepEqual(packed.files.map((f) => f.path).sort(), [
      "CHANGELOG.md", "LICENSE", "README.md", "package.json",
      "web/lib/attention-lab.d.ts", "web/lib/attention-lab.js", "web/lib/attention_core.mjs", "web/lib/attention_core.wasm",
    ]);
    assert.ok(packed.size < 400_000, `${packed.size} bytes packed`);
    // the version it carries is package.json's, and the changelog has a section for it
    const version = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
    assert.equal(packed.version, version);
    assert.match(readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8"), new RegExp(`^## ${version.replace(/\./g, "\\.")} `, "m"));
    const app = path.join(dir, "app");
    execFileSync("mkdir", ["-p", app]);
    writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    npm(["install", "--offline", path.join(dir, packed.filename)], app);
    writeFileSync(path.join(app, "main.mjs"), `
      import { loadAttentionLab, AttentionError } from "attention-lab";
      const lab = await loadAttentionLab();
      const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
      const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
      let code = "";
      try { lab.create("MultiHeadAttention", { d_in: 3, d_out: 3, context_length: 6, dropout: 0, num_heads: 2 }); } catch (e) { code = e instanceof AttentionError ? e.code : "?"; }
      console.log(JSON.stringify({ shape: y.shape, first: Array.from(y.data.slice(0, 8)), code, classes: lab.classes.length }));
    `);
    const out = JSON.parse(execFileSync(process.execPath, ["main.mjs"], { cwd: app, encoding: "utf8" }));
    const lab = await loadAttentionLab();
    const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
    const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output;
    assert.deepEqual(out, { shape: [1, 6, 768], first: Array.from(y.data.slice(0, 8)), code: "heads_divisibility", classes: lab.classes.length });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
