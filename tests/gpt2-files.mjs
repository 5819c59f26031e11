// The synthetic GPT-2 files of tests/fixtures/generate_gpt2.py, rebuilt byte for byte from their seeds
// with the library's own torch.manual_seed generator (the fixture's SHA-256 proves it): GPT-2's layout
// (wte, wpe, h.{i}.ln_1 ... mlp.c_proj, ln_f), every value (torch.rand(shape) - 0.5) * scale (+ 1 for
// LayerNorm scales), stored as F32, F16 or BF16 (round to nearest even, as torch's .to(dtype)).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export const GPT2_FIXTURES = JSON.parse(readFileSync(new URL("./fixtures/gpt2/expected.json", import.meta.url), "utf8"));

/** [key, shape, scale, offset] in file order, as generate_gpt2.py's file_keys. */
export function fileKeys(d, nLayer, nCtx, vocab) {
  const keys = [["wte.weight", [vocab, d], 0.25, 0], ["wpe.weight", [nCtx, d], 0.25, 0]];
  const w = 2 ** Math.round(Math.log2(0.125 * Math.sqrt(768 / d)));
  for (let b = 0; b < nLayer; b++) {
    const p = `h.${b}.`;
    keys.push(
      [`${p}ln_1.weight`, [d], 0.25, 1], [`${p}ln_1.bias`, [d], 0.0625, 0],
      [`${p}attn.c_attn.weight`, [d, 3 * d], w, 0], [`${p}attn.c_attn.bias`, [3 * d], 0.0625, 0],
      [`${p}attn.c_proj.weight`, [d, d], w, 0], [`${p}attn.c_proj.bias`, [d], 0.0625, 0],
      [`${p}ln_2.weight`, [d], 0.25, 1], [`${p}ln_2.bias`, [d], 0.0625, 0],
      [`${p}mlp.c_fc.weight`, [d, 4 * d], w, 0], [`${p}mlp.c_fc.bias`, [4 * d], 0.0625, 0],
      [`${p}mlp.c_proj.weight`, [4 * d, d], w / 2, 0], [`${p}mlp.c_proj.bias`, [d], 0.0625, 0],
    );
  }
  keys.push(["ln_f.weight", [d], 0.25, 1], ["ln_f.bias", [d], 0.0625, 0]);
  return keys;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 -> IEEE half bits, round to nearest even (what torch's .to(torch.float16) does). */
export function f16Bits(v) {
  f32[0] = v;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
  return sign | half;
}

/** float32 -> bfloat16 bits, round to nearest even (finite values). */
export function bf16Bits(v) {
  f32[0] = v;
  const x = u32[0];
  return ((x + 0x7fff + ((x >>> 16) & 1)) / 65536) & 0xffff;
}

/**
 * The file of a fixture case ({seed, n_embd, n_layer, n_ctx, vocab_size, dtype}) as a Buffer, made
 * with `lab`'s generator (lab.manualSeed(seed).rand is torch.rand, bit for bit).
 */
export function gpt2File(lab, spec) {
  const keys = fileKeys(spec.n_embd, spec.n_layer, spec.n_ctx, spec.vocab_size);
  const size = spec.dtype === "F32" ? 4 : 2;
  const header = { __metadata__: { format: "pt" } };
  let offset = 0;
  for (const [key, shape] of keys) {
    const bytes = shape.reduce((a, b) => a * b, 1) * size;
    header[key] = { dtype: spec.dtype, shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const headerBytes = Buffer.byteLength(json, "utf8");
  const buf = Buffer.alloc(8 + headerBytes + offset);
  buf.writeBigUInt64LE(BigInt(headerBytes), 0);
  buf.write(json, 8, "utf8");
  const gen = lab.manualSeed(spec.seed);
  let at = 8 + headerBytes;
  for (const [, shape, scale, base] of keys) {
    const r = gen.rand(shape).data;
    for (let i = 0; i < r.length; i++) {
      let v = Math.fround(Math.fround(r[i] - 0.5) * scale);
      if (base) v = Math.fround(v + base);
      if (size === 4) buf.writeFloatLE(v, at);
      else buf.writeUInt16LE(spec.dtype === "F16" ? f16Bits(v) : bf16Bits(v), at);
      at += size;
    }
  }
  gen.dispose();
  return buf;
}

export function sha256(buf) {
  return createHash("sha256").update(buf).digest("hex");
}
