// The C++ core as a CMake package. `cmake --install` of the native build, then a separate
// project (tests/cmake-consumer) finds it with find_package(attention_lab 0.1 CONFIG), links
// attention_lab::core, makes MultiHeadAttention(768, 768, 1024, 0.0, 12) after torch.manual_seed(123)
// and runs a forward: its numbers are the library's (WASM) within 1e-5, and the package's version is
// package.json's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const BUILD = path.join(ROOT, "build", "native");

test("cmake --install exports attention_lab::core; a consumer project builds and runs GPT-2 small's attention", { skip: !existsSync(BUILD) && "no native build (npm test builds it)" }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-cmake-"));
  try {
    const prefix = path.join(dir, "prefix");
    const run = (cmd, args) => execFileSync(cmd, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    run("cmake", ["--install", BUILD, "--prefix", prefix]);
    const version = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).version;
    const versionFile = readFileSync(path.join(prefix, "lib", "cmake", "attention_lab", "attention_lab-config-version.cmake"), "utf8");
    assert.match(versionFile, new RegExp(`set\\(PACKAGE_VERSION "${version.replace(/\./g, "\\.")}"\\)`));
    assert.ok(existsSync(path.join(prefix, "include", "attention_lab", "modules.hpp")));
    const build = path.join(dir, "consumer");
    run("cmake", ["-S", path.join(ROOT, "tests", "cmake-consumer"), "-B", build, `-DCMAKE_PREFIX_PATH=${prefix}`, "-DCMAKE_BUILD_TYPE=Release"]);
    run("cmake", ["--build", build]);
    const out = JSON.parse(run(path.join(build, "consumer"), []));
    assert.deepEqual(out.shape, [1, 6, 768]);
    const lab = await loadAttentionLab();
    const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
    const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output.data;
    out.first.forEach((v, i) => assert.ok(Math.abs(v - y[i]) <= 1e-5, `output[${i}]: native ${v}, WASM ${y[i]}`));
    // a version the package does not have is refused by find_package
    assert.throws(() => run("cmake", ["-S", path.join(ROOT, "tests", "cmake-consumer"), "-B", path.join(dir, "wrong"), `-DCMAKE_PREFIX_PATH=${prefix}`, "-DATTENTION_LAB_WANT=9.0"]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
