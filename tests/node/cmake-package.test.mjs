// The C++ core as a CMake package. `cmake --install` of the native build, then a separate
// project (tests/cmake-consumer) finds it with find_package(attention_lab 0.1 CONFIG), links
// attention_lab::core, makes MultiHeadAttention(768, 768, 1024, 0.0, 12) after torch.manual_seed(123)
// and runs a forward: its numbers are the library's (WASM) within 1e-5, and the package's version is
// package.json's. The README's C++ example (examples/cpp: mha.cpp and its CMakeLists.txt, the book's
// MultiHeadAttention(3, 2, 6, 0.0, 2) through the typed path) builds the same way; its printout is
// PyTorch's and the JS library's. The installed package is the public API alone: attention_lab::core exported (no
// helper target), no find_dependency (no installed header includes Eigen, nlohmann or Highway), no
// private members in modules.hpp, the LICENSE under share/doc/attention_lab.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
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
    // Eigen and nlohmann_json made unfindable: the package must not need them
    run("cmake", ["-S", path.join(ROOT, "tests", "cmake-consumer"), "-B", build, `-DCMAKE_PREFIX_PATH=${prefix}`, "-DCMAKE_BUILD_TYPE=Release",
      "-DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=TRUE", "-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=TRUE"]);
    run("cmake", ["--build", build]);
    const out = JSON.parse(run(path.join(build, "consumer"), []));
    assert.deepEqual(out.shape, [1, 6, 768]);
    const lab = await loadAttentionLab();
    const mha = lab.create("MultiHeadAttention", { d_in: 768, d_out: 768, context_length: 1024, dropout: 0.0, num_heads: 12 }, { generator: lab.manualSeed(123) });
    const y = mha.forward({ shape: [1, 6, 768], data: lab.seededTokens(6, 768, 7).data }, { training: false }).output.data;
    out.first.forEach((v, i) => assert.ok(Math.abs(v - y[i]) <= 1e-5, `output[${i}]: native ${v}, WASM ${y[i]}`));
    // the README's example (examples/cpp, a project of its own, warnings as errors): the book's printout
    // (PyTorch's fixture to 4 decimals) and the JS library's numbers
    const example = path.join(dir, "example");
    run("cmake", ["-S", path.join(ROOT, "examples", "cpp"), "-B", example, `-DCMAKE_PREFIX_PATH=${prefix}`, "-DCMAKE_BUILD_TYPE=Release",
      "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror", "-DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=TRUE", "-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=TRUE"]);
    run("cmake", ["--build", example]);
    const printed = run(path.join(example, "mha"), []);
    const tensorText = printed.slice(0, printed.indexOf("\ncontext_vecs.shape"));
    assert.match(tensorText, /^tensor\(\[\[\[0\.3190, 0\.4858\],\n {9}\[0\.2943, 0\.3897\],/);
    assert.match(tensorText, /\[0\.2575, 0\.4028\]\],\n\n {8}\[\[0\.3190, 0\.4858\],/);
    const values = tensorText.match(/-?\d+\.\d{4}/g).map(Number);
    assert.equal(values.length, 24);
    const fixture = JSON.parse(readFileSync(path.join(ROOT, "tests", "fixtures", "attention_fixtures.json"), "utf8")).cases.find((c) => c.name === "book_mha_seed123");
    assert.deepEqual(fixture.config, { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2, qkv_bias: false });
    assert.deepEqual(fixture.output.shape, [2, 6, 2]);
    const book = lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 }, { generator: lab.manualSeed(123) });
    const tokens = lab.bookTokens().data;
    const js = book.forward({ shape: [2, 6, 3], data: [...tokens, ...tokens] }).output.data;
    values.forEach((v, i) => {
      // printed to 4 decimals: within half a unit of the 4th decimal (plus float32 rounding) of each
      assert.ok(Math.abs(v - fixture.output.data[i]) <= 0.5e-4 + 1e-7, `context_vecs[${i}]: printed ${v}, PyTorch ${fixture.output.data[i]}`);
      assert.ok(Math.abs(v - js[i]) <= 0.5e-4 + 1e-7, `context_vecs[${i}]: printed ${v}, JS ${js[i]}`);
    });
    assert.match(printed, /\ncontext_vecs\.shape: \(2, 6, 2\)\ncontext_vecs\[0, 5, 1\] = 0\.4028\n/);
    assert.match(printed, /\nheads_divisibility \(d_out\): d_out = 3 is not divisible by num_heads = 2/);
    // a version the package does not have is refused by find_package
    assert.throws(() => run("cmake", ["-S", path.join(ROOT, "tests", "cmake-consumer"), "-B", path.join(dir, "wrong"), `-DCMAKE_PREFIX_PATH=${prefix}`, "-DATTENTION_LAB_WANT=9.0"]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the installed package is the public API alone: one exported target, no find_dependency, no private headers' includes, the LICENSE", { skip: !existsSync(BUILD) && "no native build (npm test builds it)" }, () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "attention-lab-install-"));
  try {
    execFileSync("cmake", ["--install", BUILD, "--prefix", dir], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    assert.equal(readFileSync(path.join(dir, "share", "doc", "attention_lab", "LICENSE"), "utf8"), readFileSync(path.join(ROOT, "LICENSE"), "utf8"));
    const cmakeDir = path.join(dir, "lib", "cmake", "attention_lab");
    const config = readFileSync(path.join(cmakeDir, "attention_lab-config.cmake"), "utf8");
    assert.doesNotMatch(config.replace(/^#.*$/gm, ""), /find_dependency|find_package/, "the config finds no dependency");
    const targets = readdirSync(cmakeDir).filter((f) => f.startsWith("attention_lab_targets")).map((f) => readFileSync(path.join(cmakeDir, f), "utf8")).join("\n");
    assert.deepEqual([...new Set(targets.match(/add_library\((\S+)/g))], ["add_library(attention_lab::core"], "only attention_lab::core is exported");
    assert.doesNotMatch(targets, /hwy|Eigen|nlohmann/);
    const include = path.join(dir, "include", "attention_lab");
    const headers = readdirSync(include).filter((f) => f.endsWith(".hpp"));
    assert.ok(headers.includes("typed.hpp") && headers.includes("typed_classes.hpp"));
    const numbers = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen";
    for (const h of headers) {
      const text = readFileSync(path.join(include, h), "utf8");
      assert.doesNotMatch(text, /#include\s*<(Eigen|nlohmann|hwy)\//, `${h} includes a private dependency`);
      // the class list grows: a header says "the recipe list" (class_specs()), never how many classes there are
      assert.doesNotMatch(text, new RegExp(`\\b(${numbers})\\b( [\\w-]+){0,2} (classes|attention modules)\\b|\\b(${numbers}) of (the book|its)|chapter \\d's (${numbers})\\b`, "i"), `${h} counts the classes`);
    }
    // AttentionModule's private part is one pointer to what core/src/module_impl.hpp defines
    const modules = readFileSync(path.join(include, "modules.hpp"), "utf8");
    const klass = modules.slice(modules.indexOf("class AttentionModule {"), modules.indexOf("\n};", modules.indexOf("class AttentionModule {")));
    const privatePart = klass.slice(klass.indexOf(" private:") + " private:".length).split("\n").map((l) => l.replace(/\/\/.*$/, "").trim()).filter(Boolean);
    assert.deepEqual(privatePart, ["struct Impl;", "std::unique_ptr<Impl> impl_;"]);
    assert.doesNotMatch(modules, /PackedMatrix|attention_lab\/ops\.hpp/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
