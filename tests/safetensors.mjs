// Safetensors files made in the tests (Node and browser suites; no torch): u64 little-endian header
// length, the JSON header (padded with spaces to 8 bytes), then the data, every tensor's data_offsets
// back to back so the data section has no holes. Values come from a small LCG so a file is the same
// every run.

const DTYPE_BYTES = { F32: 4, F16: 2, BF16: 2 };

/**
 * The header alone (length prefix included) for `tensors` ([key, dtype, shape] in order), and the
 * size of the data section it claims: for sparse files, or to fill the data by hand.
 */
export function safetensorsHeader(tensors) {
  const header = {};
  let offset = 0;
  for (const [key, dtype, shape] of tensors) {
    const bytes = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
    header[key] = { dtype, shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.alloc(8 + Buffer.byteLength(json, "utf8"));
  head.writeBigUInt64LE(BigInt(head.length - 8), 0);
  head.write(json, 8, "utf8");
  return { head, dataBytes: offset };
}

/** A block's 12 tensors after "h.{L}.", with their shapes for width d (GPT-2's Conv1D weights are (in, out)). */
export function gpt2BlockShapes(d) {
  return [["ln_1.weight", [d]], ["ln_1.bias", [d]], ["attn.c_attn.weight", [d, 3 * d]], ["attn.c_attn.bias", [3 * d]], ["attn.c_proj.weight", [d, d]], ["attn.c_proj.bias", [d]],
    ["ln_2.weight", [d]], ["ln_2.bias", [d]], ["mlp.c_fc.weight", [d, 4 * d]], ["mlp.c_fc.bias", [4 * d]], ["mlp.c_proj.weight", [4 * d, d]], ["mlp.c_proj.bias", [d]]];
}

/** A whole GPT-2's [key, "F32", shape] in Hugging Face's order (GPT-2 small by default), for safetensorsHeader. */
export function gpt2Tensors({ d = 768, layers = 12, vocab = 50257, nCtx = 1024, block = gpt2BlockShapes } = {}) {
  const tensors = [["wte.weight", "F32", [vocab, d]], ["wpe.weight", "F32", [nCtx, d]]];
  for (let L = 0; L < layers; L++) for (const [key, shape] of block(d)) tensors.push([`h.${L}.${key}`, "F32", shape]);
  tensors.push(["ln_f.weight", "F32", [d]], ["ln_f.bias", "F32", [d]]);
  return tensors;
}

/**
 * A whole GPT-2's [key, "F32", shape] in the book's GPTModel layout (ch04: nn.Linear weights (out, in),
 * qkv_bias=True as after load_weights_into_gpt, the att.mask buffer, an untied out_head), GPT-2 medium
 * by default: what `torch.save(model.state_dict(), "gpt2-medium355M-sft.pth")` holds in chapter 7.
 */
export function bookGpt2Tensors({ d = 1024, layers = 24, vocab = 50257, nCtx = 1024 } = {}) {
  const tensors = [["tok_emb.weight", "F32", [vocab, d]], ["pos_emb.weight", "F32", [nCtx, d]]];
  for (let L = 0; L < layers; L++) {
    const b = `trf_blocks.${L}.`;
    for (const w of ["W_query", "W_key", "W_value", "out_proj"]) tensors.push([`${b}att.${w}.weight`, "F32", [d, d]], [`${b}att.${w}.bias`, "F32", [d]]);
    tensors.push([`${b}att.mask`, "F32", [nCtx, nCtx]]);
    tensors.push([`${b}ff.layers.0.weight`, "F32", [4 * d, d]], [`${b}ff.layers.0.bias`, "F32", [4 * d]], [`${b}ff.layers.2.weight`, "F32", [d, 4 * d]], [`${b}ff.layers.2.bias`, "F32", [d]]);
    for (const n of ["norm1", "norm2"]) tensors.push([`${b}${n}.scale`, "F32", [d]], [`${b}${n}.shift`, "F32", [d]]);
  }
  tensors.push(["final_norm.scale", "F32", [d]], ["final_norm.shift", "F32", [d]], ["out_head.weight", "F32", [vocab, d]]);
  return tensors;
}

/** The keys layer 0 of a GPT-2 file of width d needs (with a 16-token wte and a 32-row wpe). */
export function layer0Shapes(d) {
  return {
    "h.0.attn.c_attn.bias": [3 * d], "h.0.attn.c_attn.weight": [d, 3 * d], "h.0.attn.c_proj.bias": [d],
    "h.0.attn.c_proj.weight": [d, d], "h.0.ln_1.bias": [d], "h.0.ln_1.weight": [d], "wpe.weight": [32, d], "wte.weight": [16, d],
  };
}

/**
 * A safetensors file of `shapes` ({key: shape}, in order) plus `extraKeys` one-element F32 tensors
 * named by `extraName(i)`. The header is written with one join over an array of entries, so a
 * million keys take a second, not minutes.
 */
export function safetensors(shapes, { extraKeys = 0, extraName = (i) => `extra.${i}` } = {}) {
  const entries = ['"__metadata__":{"format":"pt"}'];
  let offset = 0;
  for (const [key, shape] of Object.entries(shapes)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    entries.push(`${JSON.stringify(key)}:${JSON.stringify({ dtype: "F32", shape, data_offsets: [offset, offset + bytes] })}`);
    offset += bytes;
  }
  for (let i = 0; i < extraKeys; i++) {
    entries.push(`${JSON.stringify(extraName(i))}:{"dtype":"F32","shape":[1],"data_offsets":[${offset},${offset + 4}]}`);
    offset += 4;
  }
  let json = `{${entries.join(",")}}`;
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const headerBytes = Buffer.byteLength(json, "utf8");
  const buf = Buffer.alloc(8 + headerBytes + offset);
  buf.writeBigUInt64LE(BigInt(headerBytes), 0);
  buf.write(json, 8, "utf8");
  let x = 12345;
  for (let i = 8 + headerBytes; i < buf.length; i += 4) {
    x = (x * 1103515245 + 12345) % 2147483648;
    buf.writeFloatLE((x / 2147483648 - 0.5) * 0.1, i);
  }
  return buf;
}

/** Layer 0 of width d with every key an attention layer needs, plus `extra` ({key: shape}). */
export function layer0Checkpoint(d, extra = {}) {
  return safetensors({ ...layer0Shapes(d), ...extra });
}

/**
 * A whole safetensors file for `tensors` ([key, dtype, shape] in order; F32, F16, BF16 or F64) with
 * `metadata` in its header: each tensor's values from the small LCG in [-0.05, 0.05) (1 + that for
 * LayerNorm weights), then `fill(key, values)` may change them (a Float64Array) before they are written.
 * F16 and BF16 are the top bits of the float32 (truncated: the tests need no rounding).
 */
export function safetensorsFile(tensors, { fill = () => {}, metadata = { format: "pt" } } = {}) {
  const size = { F32: 4, F16: 2, BF16: 2, F64: 8 };
  const header = metadata ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const [key, dtype, shape] of tensors) {
    const bytes = shape.reduce((a, b) => a * b, 1) * size[dtype];
    header[key] = { dtype, shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const headerBytes = Buffer.byteLength(json, "utf8");
  const buf = Buffer.alloc(8 + headerBytes + offset);
  buf.writeBigUInt64LE(BigInt(headerBytes), 0);
  buf.write(json, 8, "utf8");
  let x = 12345;
  let at = 8 + headerBytes;
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (const [key, dtype, shape] of tensors) {
    const values = new Float64Array(shape.reduce((a, b) => a * b, 1));
    const norm = /ln_\d\.weight$|ln_f\.weight$/.test(key);
    for (let i = 0; i < values.length; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      values[i] = (x / 2147483648 - 0.5) * 0.1 + (norm ? 1 : 0);
    }
    fill(key, values);
    for (const v of values) {
      if (dtype === "F32") buf.writeFloatLE(v, at);
      else if (dtype === "F64") buf.writeDoubleLE(v, at);
      else {
        f32[0] = v;
        const bits = u32[0];
        buf.writeUInt16LE(dtype === "BF16" ? bits >>> 16 : ((bits >>> 16) & 0x8000) | Math.max(0, ((bits >>> 23) & 0xff) - 112) << 10 | ((bits >>> 13) & 0x3ff), at);
      }
      at += size[dtype];
    }
  }
  return buf;
}
