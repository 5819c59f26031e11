// scripts/relaxed-simd.mjs: the in-place rewrite of clang 14's prototype f32x4.relaxed_fma (0xfd 0xaf
// 0x01, a + b * c) to the final f32x4.relaxed_madd (0xfd 0x85 0x02, a * b + c) (issue 21.3).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { FINAL_F32X4_RELAXED_MADD, PROTOTYPE_F32X4_FMA, rewriteRelaxedMadd } from "../../scripts/relaxed-simd.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const leb = (n) => { const out = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n); return out; };
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
const str = (s) => [...leb(s.length), ...Buffer.from(s)];

/**
 * A module exporting memory and f(): v128 at 48 = relaxed(v128 at 0, v128 at 16, v128 at 32), with
 * decoys that hold the bytes fd af 01 as immediates (a v128.const, an i32.const's LEB128, a memarg
 * offset), which must stay as they are. `op` is the SIMD sub-opcode of the relaxed instruction.
 */
function moduleWith(op = [0xaf, 0x01]) {
  const load = (offset) => [0x41, 0x00, 0xfd, 0x00, 0x04, ...leb(offset)];
  const body = [
    0x00, // no locals
    0x41, 0x00, ...load(0), ...load(16), ...load(32), 0xfd, ...op, 0xfd, 0x0b, 0x04, 0x30, // store at 48
    0xfd, 0x0c, 0xfd, 0xaf, 0x01, 0xfd, 0xaf, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, // v128.const decoy; drop
    0x41, 0xfd, 0xaf, 0x01, 0x1a, // i32.const whose LEB128 is fd af 01; drop
    0x41, 0x00, 0x28, 0x02, 0xfd, 0xaf, 0x01, 0x1a, // i32.load offset=LEB(fd af 01); drop
    0x0b,
  ];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x01, 0x60, 0x00, 0x00]),
    ...section(3, [0x01, 0x00]),
    ...section(5, [0x01, 0x00, 0x01]),
    ...section(7, [0x02, ...str("f"), 0x00, 0x00, ...str("memory"), 0x02, 0x00]),
    ...section(10, [0x01, ...leb(body.length), ...body]),
  ]);
}

/** Runs a module's f() in a Node with relaxed SIMD enabled; its four floats at 48, or the compile error. */
function runRelaxed(bytes) {
  const src = `const b = Buffer.from("${Buffer.from(bytes).toString("base64")}", "base64");
    try { const { instance } = await WebAssembly.instantiate(b); const m = new Float32Array(instance.exports.memory.buffer);
      m.set([1, 2, 3, 4], 0); m.set([10, 20, 30, 40], 4); m.set([100, 200, 300, 400], 8); instance.exports.f();
      console.log(JSON.stringify({ valid: WebAssembly.validate(b), out: Array.from(m.subarray(12, 16)) })); }
    catch (e) { console.log(JSON.stringify({ valid: WebAssembly.validate(b), error: String(e.message) })); }`;
  return JSON.parse(execFileSync(process.execPath, ["--experimental-wasm-relaxed-simd", "--input-type=module", "-e", src], { encoding: "utf8" }));
}

test("the opcode numbers are the relaxed-SIMD proposal's: prototype 0xaf, final 0x105 (LEB128 85 02)", () => {
  assert.equal(PROTOTYPE_F32X4_FMA, 0xaf);
  assert.equal(FINAL_F32X4_RELAXED_MADD, 0x105);
  assert.deepEqual(leb(FINAL_F32X4_RELAXED_MADD), [0x85, 0x02]);
});

test("one instruction rewritten in place, the decoys' immediates untouched, and V8 then computes a * b + c", () => {
  const before = moduleWith();
  const { bytes, rewritten } = rewriteRelaxedMadd(before);
  assert.equal(rewritten, 1);
  assert.equal(bytes.length, before.length);
  const changed = [...bytes].flatMap((b, i) => (b === before[i] ? [] : [i]));
  assert.equal(changed.length, 2);
  assert.deepEqual([bytes[changed[0] - 1], bytes[changed[0]], bytes[changed[1]]], [0xfd, 0x85, 0x02]);
  // the decoys still hold fd af 01 (three times), the rewritten instruction does not
  const hex = Buffer.from(bytes).toString("hex");
  assert.equal(hex.split("fdaf01").length - 1, 4); // v128.const holds it twice, the i32.const and the offset once each
  assert.equal(runRelaxed(before).valid, false); // V8 rejects the prototype opcode
  assert.deepEqual(runRelaxed(bytes), { valid: true, out: [110, 240, 390, 560] }); // 1*10 + 100, ...
  assert.equal(rewriteRelaxedMadd(bytes).rewritten, 0); // nothing left to rewrite
});

test("other prototype relaxed-SIMD opcodes, unknown opcodes and non-modules are refused, not guessed", () => {
  assert.throws(() => rewriteRelaxedMadd(moduleWith([0xb0, 0x01])), /prototype relaxed-SIMD opcode 0xfd 0xb0 .*only f32x4\.relaxed_fma is rewritten/);
  const bad = moduleWith();
  bad[bad.length - 1] = 0xff; // the body's end becomes an unknown opcode
  assert.throws(() => rewriteRelaxedMadd(bad), /unknown opcode 0xff/);
  assert.throws(() => rewriteRelaxedMadd(Uint8Array.from([1, 2, 3])), /not a WebAssembly 1 module/);
});

test("the built attention_core_fma.wasm has no prototype opcode left and validates where relaxed SIMD is on", () => {
  const fma = readFileSync(path.join(ROOT, "web/lib/attention_core_fma.wasm"));
  const { rewritten, simd } = rewriteRelaxedMadd(fma);
  assert.equal(rewritten, 0);
  assert.ok(simd > 1000, `${simd} SIMD instructions decoded`);
  const hasMadd = Buffer.from(fma).toString("hex").includes("fd8502");
  assert.ok(hasMadd);
  const ok = execFileSync(process.execPath, ["--experimental-wasm-relaxed-simd", "-e", `process.stdout.write(String(WebAssembly.validate(require("fs").readFileSync(${JSON.stringify(path.join(ROOT, "web/lib/attention_core_fma.wasm"))}))))`], { encoding: "utf8" });
  assert.equal(ok, "true");
});
