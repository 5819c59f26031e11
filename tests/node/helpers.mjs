// Shared helpers for the node:test suites: the PyTorch fixtures and tensor comparisons.
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { safetensorsHeader } from "../safetensors.mjs";

const fixturePath = fileURLToPath(new URL("../fixtures/attention_fixtures.json", import.meta.url));

/** tests/fixtures/attention_fixtures.json, written by tests/fixtures/generate_fixtures.py (PyTorch). */
export const fixtures = JSON.parse(readFileSync(fixturePath, "utf8"));

const decode = (v) => (v === "-inf" ? -Infinity : v === "inf" ? Infinity : v === "nan" ? NaN : v);

/** A fixture tensor as {shape, data: Float32Array}. */
export function tensor(j) {
  return { shape: j.shape.slice(), data: Float32Array.from(j.data.map(decode)) };
}

export function namedCase(name) {
  const c = fixtures.cases.find((c) => c.name === name);
  if (!c) throw new Error(`no fixture case ${name}`);
  return c;
}

/** max |a - b|; -inf must meet -inf and NaN must meet NaN exactly (PyTorch's NaN rows, as in the
 * inverted-mask class); a NaN on one side only, or a shape mismatch, gives Infinity. */
export function maxAbsDiff(a, b) {
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) return Infinity;
  let m = 0;
  for (let i = 0; i < a.data.length; i++) {
    const x = a.data[i];
    const y = b.data[i];
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      if (x !== y && !(Number.isNaN(x) && Number.isNaN(y))) return Infinity;
      continue;
    }
    m = Math.max(m, Math.abs(x - y));
  }
  return m;
}

/** Bitwise equality of two Float32Arrays. */
export function sameBits(a, b) {
  if (a.length !== b.length) return false;
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return ua.every((v, i) => v === ub[i]);
}

/** torch.stack((x, x)): (num_tokens, d_in) -> (2, num_tokens, d_in). */
export function stackTwo(x) {
  const data = new Float32Array(x.data.length * 2);
  data.set(x.data, 0);
  data.set(x.data, x.data.length);
  return { shape: [2, ...x.shape], data };
}

export const round4 = (v) => Math.round(v * 1e4) / 1e4;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");

/**
 * Collects garbage and lets the FinalizationRegistry callbacks run (they come in later tasks), so
 * modules and generators that JS no longer holds release their WASM memory.
 */
export async function collectGarbage() {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** A small LCG: random(seed) gives pick(n), an integer in [0, n), the same sequence every run. */
export function random(seed) {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.floor((s / 4294967296) * n); // the high bits: an LCG's low bits cycle (s % n left some calls never picked)
  };
}

/** A sparse safetensors file of `tensors` ([key, dtype, shape]) in `dir`: the header, then zeros the disk does not hold. */
export function sparseFile(dir, tensors) {
  const file = path.join(dir, "model.safetensors");
  const { head, dataBytes } = safetensorsHeader(tensors);
  const fd = openSync(file, "w");
  writeSync(fd, head);
  ftruncateSync(fd, head.length + dataBytes);
  closeSync(fd);
  return file;
}
