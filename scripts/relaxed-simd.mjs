// The post-link rewrite of the fused multiply-add build (issue 21.3): clang 14 (Debian's Emscripten
// 3.1.6) emits only the PROTOTYPE relaxed-SIMD opcode `f32x4.relaxed_fma` (0xfd 0xaf 0x01, computing
// a + b * c), which V8 rejects; the final relaxed-SIMD proposal's `f32x4.relaxed_madd` is 0xfd 0x85
// 0x02 (computing a * b + c, https://github.com/WebAssembly/relaxed-simd, Overview.md's opcode table).
// Both are three bytes, so the rewrite is in place: the operands stay on the stack in the order the
// source pushed them, which is why core/src/ops_kernel.cpp calls the builtin as (x, b, acc) to get
// x * b + acc after the rewrite.
//
// No maintained tool does this rewrite for this toolchain (binaryen 108 and this clang know only the
// prototype numbering), so it is done here, and only where an instruction starts: every function body
// is decoded instruction by instruction (each opcode's immediates skipped by the binary format's
// rules), never by searching for bytes. Any other prototype relaxed-SIMD opcode, or an opcode this
// decoder does not know, is an error rather than a guess.
//
//   node scripts/relaxed-simd.mjs IN.wasm OUT.wasm    rewrites, prints how many instructions it changed
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The prototype opcode clang 14 emits for __builtin_wasm_fma_f32x4, and the final one it becomes. */
export const PROTOTYPE_F32X4_FMA = 0xaf;
export const FINAL_F32X4_RELAXED_MADD = 0x105;

// SIMD (0xfd) sub-opcodes with immediates; every other final SIMD opcode up to 0xff has none.
const SIMD_MEMARG = new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 92, 93]); // v128 loads/stores, load32/64_zero
const SIMD_BYTES16 = new Set([12, 13]); // v128.const, i8x16.shuffle
const SIMD_LANE = new Set([21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34]); // extract/replace_lane
const SIMD_MEMARG_LANE = new Set([84, 85, 86, 87, 88, 89, 90, 91]); // v128.load*_lane / store*_lane
// Sub-opcodes the final SIMD proposal leaves unused, which the relaxed-SIMD prototype occupied.
const PROTOTYPE_RELAXED = new Set([0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee]);

class Reader {
  constructor(bytes, pos = 0) {
    this.b = bytes;
    this.pos = pos;
  }
  byte() {
    if (this.pos >= this.b.length) throw new Error(`unexpected end of the module at byte ${this.pos}`);
    return this.b[this.pos++];
  }
  /** An unsigned LEB128 of up to 35 bits, as a number. */
  u32() {
    let result = 0;
    let shift = 0;
    for (;;) {
      const x = this.byte();
      result += (x & 0x7f) * 2 ** shift;
      if (!(x & 0x80)) return result;
      shift += 7;
      if (shift > 35) throw new Error(`LEB128 too long at byte ${this.pos}`);
    }
  }
  /** Skips a signed LEB128 (i32/i64 constants, block types). */
  skipLeb(maxBytes = 10) {
    for (let i = 0; i < maxBytes; i++) if (!(this.byte() & 0x80)) return;
    throw new Error(`LEB128 too long at byte ${this.pos}`);
  }
  skip(n) {
    if (this.pos + n > this.b.length) throw new Error(`unexpected end of the module at byte ${this.pos}`);
    this.pos += n;
  }
  memarg() {
    this.u32();
    this.u32();
  }
  blockType() {
    const t = this.b[this.pos];
    if (t === 0x40 || t === 0x7f || t === 0x7e || t === 0x7d || t === 0x7c || t === 0x7b || t === 0x70 || t === 0x6f) this.pos++;
    else this.skipLeb(5); // a type index as s33
  }
}

/** Decodes one instruction at r.pos; calls onSimd(subOpcode, startOfSubOpcode, endOfSubOpcode) for 0xfd ones. */
function instruction(r, onSimd) {
  const op = r.byte();
  if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x19 || op === 0x1a || op === 0x1b || op === 0xd1) return;
  if ((op >= 0x02 && op <= 0x04) || op === 0x06) return r.blockType(); // block loop if try
  if ((op >= 0x07 && op <= 0x09) || op === 0x0c || op === 0x0d || op === 0x10 || op === 0x12 || op === 0x18 || op === 0xd2) return void r.u32();
  if (op === 0x0e) { // br_table
    const n = r.u32();
    for (let i = 0; i <= n; i++) r.u32();
    return;
  }
  if (op === 0x11 || op === 0x13) { // call_indirect, return_call_indirect: type, table
    r.u32();
    r.u32();
    return;
  }
  if (op === 0x1c) return void r.skip(r.u32()); // select t*: one byte per value type
  if ((op >= 0x20 && op <= 0x26)) return void r.u32(); // local.*, global.*, table.get/set
  if (op >= 0x28 && op <= 0x3e) return r.memarg();
  if (op === 0x3f || op === 0x40) return void r.byte(); // memory.size/grow: the memory index byte
  if (op === 0x41) return r.skipLeb(5);
  if (op === 0x42) return r.skipLeb(10);
  if (op === 0x43) return r.skip(4);
  if (op === 0x44) return r.skip(8);
  if (op >= 0x45 && op <= 0xc4) return; // numeric, sign extension
  if (op === 0xd0) return void r.byte(); // ref.null t
  if (op === 0xfc) {
    const sub = r.u32();
    if (sub <= 7) return; // trunc_sat
    if (sub === 8) { r.u32(); r.byte(); return; } // memory.init data, mem
    if (sub === 9 || sub === 13 || sub === 15 || sub === 16 || sub === 17) return void r.u32();
    if (sub === 10) { r.byte(); r.byte(); return; } // memory.copy
    if (sub === 11) return void r.byte(); // memory.fill
    if (sub === 12 || sub === 14) { r.u32(); r.u32(); return; } // table.init, table.copy
    throw new Error(`unknown 0xfc opcode ${sub} at byte ${r.pos}`);
  }
  if (op === 0xfd) {
    const start = r.pos;
    const sub = r.u32();
    onSimd(sub, start, r.pos);
    if (SIMD_MEMARG.has(sub)) return r.memarg();
    if (SIMD_BYTES16.has(sub)) return r.skip(16);
    if (SIMD_LANE.has(sub)) return void r.byte();
    if (SIMD_MEMARG_LANE.has(sub)) { r.memarg(); r.byte(); return; }
    if (sub <= 0xff || (sub >= 0x100 && sub <= 0x113)) return; // the rest of SIMD128, final relaxed SIMD
    throw new Error(`unknown SIMD opcode 0x${sub.toString(16)} at byte ${start}`);
  }
  if (op === 0xfe) { // threads: atomic.fence has one byte, every other atomic a memarg
    const sub = r.u32();
    if (sub === 0x03) return void r.byte();
    return r.memarg();
  }
  throw new Error(`unknown opcode 0x${op.toString(16)} at byte ${r.pos - 1}`);
}

/**
 * Rewrites every prototype f32x4.relaxed_fma instruction of a WebAssembly module to the final
 * f32x4.relaxed_madd, in place in a copy.
 * @param {Uint8Array} input a whole .wasm module
 * @returns {{bytes: Uint8Array, rewritten: number, simd: number}} the new module, how many instructions
 *   changed and how many SIMD instructions were decoded
 * @throws {Error} on a module that is not WebAssembly 1, an unknown opcode, or another prototype
 *   relaxed-SIMD opcode (which has no same-length final form)
 */
export function rewriteRelaxedMadd(input) {
  const bytes = Uint8Array.from(input);
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d || bytes[4] !== 1) {
    throw new Error("not a WebAssembly 1 module (bad magic or version)");
  }
  const r = new Reader(bytes, 8);
  let rewritten = 0;
  let simd = 0;
  while (r.pos < bytes.length) {
    const id = r.byte();
    const size = r.u32();
    const end = r.pos + size;
    if (id !== 10) { // not the code section
      r.pos = end;
      continue;
    }
    const count = r.u32();
    for (let f = 0; f < count; f++) {
      const bodySize = r.u32();
      const bodyEnd = r.pos + bodySize;
      const groups = r.u32();
      for (let g = 0; g < groups; g++) { r.u32(); r.byte(); } // locals: count, value type
      while (r.pos < bodyEnd) {
        instruction(r, (sub, start, after) => {
          simd++;
          if (sub === PROTOTYPE_F32X4_FMA) {
            if (after - start !== 2) throw new Error(`prototype f32x4.relaxed_fma encoded in ${after - start} bytes at ${start}: cannot rewrite in place`);
            bytes[start] = 0x80 | (FINAL_F32X4_RELAXED_MADD & 0x7f); // 0x85
            bytes[start + 1] = FINAL_F32X4_RELAXED_MADD >> 7; // 0x02
            rewritten++;
          } else if (PROTOTYPE_RELAXED.has(sub)) {
            throw new Error(`prototype relaxed-SIMD opcode 0xfd 0x${sub.toString(16)} at byte ${start - 1}: only f32x4.relaxed_fma is rewritten`);
          }
        });
      }
      if (r.pos !== bodyEnd) throw new Error(`function ${f}'s body decoded past its end (${r.pos} > ${bodyEnd})`);
    }
    if (r.pos !== end) throw new Error(`the code section decoded to byte ${r.pos}, not its end ${end}`);
  }
  return { bytes, rewritten, simd };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error("usage: node scripts/relaxed-simd.mjs IN.wasm OUT.wasm");
    process.exit(2);
  }
  const { bytes, rewritten, simd } = rewriteRelaxedMadd(readFileSync(input));
  if (rewritten === 0) {
    console.error(`relaxed-simd: ${input} has no f32x4.relaxed_fma to rewrite (was it built with ATTENTION_LAB_RELAXED_FMA?)`);
    process.exit(1);
  }
  writeFileSync(output, bytes);
  console.log(`relaxed-simd: ${output}: ${rewritten} f32x4.relaxed_fma -> f32x4.relaxed_madd (of ${simd} SIMD instructions)`);
}
