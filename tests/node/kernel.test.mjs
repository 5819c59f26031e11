// Which WebAssembly binary the library loads (issue 21.3): attention_core_fma.wasm, whose products are
// relaxed-SIMD multiply-adds, where the engine validates relaxed SIMD; attention_core.wasm elsewhere.
// Node 20 has relaxed SIMD only behind --experimental-wasm-relaxed-simd, so this process gets the
// plain binary, and a child with the flag runs the PyTorch fixtures on the fused one.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** This process's environment without NODE_TEST_CONTEXT, so that the child's test runner reports as TAP, not to us. */
function childEnv() {
  const { NODE_TEST_CONTEXT: _ctx, ...env } = process.env;
  return env;
}

test("without relaxed SIMD (Node 20's default) the library loads the plain binary", async () => {
  const lab = await loadAttentionLab();
  assert.equal(lab.kernel, "simd128");
});

test("with relaxed SIMD the default is the fused binary, and every PyTorch fixture holds on it within its tolerance", () => {
  const files = ["tests/node/children/fma-properties.mjs", "tests/node/fixtures.test.mjs", "tests/node/kv-cache.test.mjs", "tests/node/gpt2.test.mjs", "tests/node/generate.test.mjs"];
  let out;
  try {
    out = execFileSync(process.execPath, ["--experimental-wasm-relaxed-simd", "--test", "--test-concurrency=1", "--test-reporter=tap", ...files], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20, env: childEnv() });
  } catch (err) {
    const failed = String(err.stdout ?? "").split("\n").filter((l) => /^\s*not ok/.test(l)).slice(0, 10);
    assert.fail(`the fixtures failed on the relaxed-SIMD binary:\n${failed.join("\n")}`);
  }
  const count = (what) => Number(out.match(new RegExp(`^# ${what} (\\d+)$`, "m"))?.[1]);
  assert.equal(count("fail"), 0);
  assert.ok(count("pass") >= 100, `${count("pass")} tests passed`);
  assert.match(out, /^ok \d+ - the default binary here is the fused multiply-add one$/m);
  assert.match(out, /^ok \d+ - trace on or off: the same output bits/m);
});
