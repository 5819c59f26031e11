// Issue 17: one handle per GPT-2 file. lab.openCheckpoint reads the first 8 bytes and the header once
// and parses the header once (checkpointOpen); loadCheckpoint, checkpointInput and loadGPT2 given the
// CheckpointFile read no header and parse nothing, with the same results, bit for bit, as from the
// source. The parses are counted on the raw core: checkpointOpen, and every checkpoint function given
// header bytes rather than a handle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadAttentionLab, AttentionError } from "attention-lab";
import { GPT2_FIXTURES, gpt2File } from "../gpt2-files.mjs";
import { sameBits } from "./helpers.mjs";

const lab = await loadAttentionLab();
const spec = GPT2_FIXTURES.cases.find((c) => c.name === "tiny_f32"); // d = 8, 2 heads, 2 layers
const bytes = gpt2File(lab, spec);
const ids = spec.token_ids;
const HEADER_TAKERS = ["planCheckpoint", "loadCheckpoint", "planBlockInput", "blockInput", "gpt2Open"];

/** Wraps the raw core so every header parse is counted; returns {counts, restore}. */
function countParses() {
  const core = lab._core;
  const counts = { parses: 0, byFunction: {} };
  const saved = {};
  const count = (name) => {
    counts.parses += 1;
    counts.byFunction[name] = (counts.byFunction[name] ?? 0) + 1;
  };
  for (const name of [...HEADER_TAKERS, "checkpointOpen"]) {
    const original = core[name];
    saved[name] = original;
    core[name] = (...args) => {
      if (name === "checkpointOpen" || typeof args[0] !== "number") count(name);
      return original.apply(core, args);
    };
  }
  return { counts, restore: () => Object.assign(core, saved) };
}

/** The file as a Blob whose reads are counted: `header` counts reads of the first 8 bytes or of the header. */
function countedBlob(buf) {
  const headerEnd = 8 + Number(buf.readBigUInt64LE(0));
  const reads = { header: 0, bytes: 0 };
  class CountedBlob extends Blob {
    slice(start, end, type) {
      if (start === 0 || (start === 8 && end === headerEnd)) reads.header += 1;
      const part = super.slice(start, end, type);
      reads.bytes += part.size;
      return part;
    }
  }
  return { blob: new CountedBlob([buf]), reads };
}

/** loadCheckpoint (layer 1) + checkpointInput (layer 1) + loadGPT2 + run on one source. */
async function everything(source) {
  const { module, report } = await lab.loadCheckpoint(source, { layer: 1, num_heads: 2 });
  const input = await lab.checkpointInput(source, { tokenIds: ids, layer: 1, num_heads: 2 });
  const model = await lab.loadGPT2(source, { num_heads: 2 });
  const run = await model.run(ids);
  const out = { parameters: module.parameters(), report, input, config: model.config, run };
  module.dispose();
  model.dispose();
  return out;
}

function assertSame(a, b) {
  assert.deepEqual(a.report, b.report);
  assert.deepEqual(a.config, b.config);
  assert.equal(a.parameters.length, b.parameters.length);
  a.parameters.forEach((p, i) => {
    assert.equal(p.name, b.parameters[i].name);
    assert.deepEqual(p.shape, b.parameters[i].shape);
    assert.ok(sameBits(p.data, b.parameters[i].data), p.name);
  });
  assert.deepEqual(a.input.shape, b.input.shape);
  assert.ok(sameBits(a.input.data, b.input.data), "checkpointInput");
  assert.ok(sameBits(a.run.lastLogits, b.run.lastLogits), "lastLogits");
  assert.deepEqual(a.run.nextTokens, b.run.nextTokens);
  a.run.layers.forEach((l, i) => {
    assert.ok(sameBits(l.input.data, b.run.layers[i].input.data), `layer ${i} input`);
    assert.ok(sameBits(l.attnWeights.data, b.run.layers[i].attnWeights.data), `layer ${i} attnWeights`);
  });
}

test("open + loadCheckpoint + checkpointInput(layer 1) + loadGPT2 + run: 1 header read, 1 parse, the same bits as from the source", async () => {
  const fromSource = countedBlob(bytes);
  const sourceCount = countParses();
  let viaSource;
  try {
    viaSource = await everything(fromSource.blob);
  } finally {
    sourceCount.restore();
  }
  // From the source each call opens the file for itself (one read, one parse each); before issue 17
  // loadCheckpoint and checkpointInput parsed twice each (5 parses).
  assert.equal(sourceCount.counts.parses, 3, JSON.stringify(sourceCount.counts));
  assert.equal(fromSource.reads.header, 6, "3 x (first 8 bytes + header)");

  const fromFile = countedBlob(bytes);
  const fileCount = countParses();
  let viaFile;
  let file;
  try {
    file = await lab.openCheckpoint(fromFile.blob);
    viaFile = await everything(file);
  } finally {
    fileCount.restore();
  }
  assert.deepEqual(fileCount.counts, { parses: 1, byFunction: { checkpointOpen: 1 } });
  assert.equal(fromFile.reads.header, 2, "the first 8 bytes and the header, once");
  assert.ok(fromFile.reads.bytes < fromSource.reads.bytes, `${fromFile.reads.bytes} < ${fromSource.reads.bytes}`);
  assertSame(viaFile, viaSource);

  assert.equal(file.size, bytes.length);
  assert.equal(file.keys, 2 + 12 * spec.n_layer + 2, "wte, wpe, 12 per block, ln_f");
  assert.equal(file.dataStart, 8 + Number(bytes.readBigUInt64LE(0)));
  assert.ok(Object.isFrozen(file));
  assert.equal(await lab.openCheckpoint(file), file, "a CheckpointFile is returned as it is");
  const handles = lab.handlesInUse();
  file.dispose();
  assert.equal(lab.handlesInUse(), handles - 1, "the file's header is released");
});

test("a GPT2Model made from a CheckpointFile shares its header and outlives the file's dispose", async () => {
  const handles = lab.handlesInUse();
  const file = await lab.openCheckpoint(bytes);
  const model = await lab.loadGPT2(file, { num_heads: 2 });
  file.dispose();
  file.dispose(); // twice is fine
  const { parses, restore } = (() => {
    const c = countParses();
    return { parses: c.counts, restore: c.restore };
  })();
  let r;
  try {
    r = await model.run(ids);
  } finally {
    restore();
  }
  assert.equal(parses.parses, 0);
  assert.equal(r.layers.length, spec.n_layer);
  model.dispose();
  assert.equal(lab.handlesInUse(), handles);
});

test("use after dispose is AttentionError disposed, before anything is read; the raw core says the same", async () => {
  const counted = countedBlob(bytes);
  const file = await lab.openCheckpoint(counted.blob);
  const handle = file._handle;
  file.dispose();
  const readsBefore = counted.reads.bytes;
  const disposed = (err) => err instanceof AttentionError && err.code === "disposed" && err.slot === "checkpoint" && /openCheckpoint/.test(err.hint);
  await assert.rejects(lab.loadCheckpoint(file, { num_heads: 2 }), disposed);
  await assert.rejects(lab.checkpointInput(file, { tokenIds: ids }), disposed);
  await assert.rejects(lab.checkpointInput(file, { tokenIds: ids, layer: 1, num_heads: 2 }), disposed);
  await assert.rejects(lab.loadGPT2(file, { num_heads: 2 }), disposed);
  assert.equal(counted.reads.bytes, readsBefore, "nothing read after dispose");
  const core = lab._core;
  const none = { given: false, number: false, boolean: false, value: 0 };
  const options = { layer: none, num_heads: none, context_length: none, intoClass: "", intoConfig: {} };
  const raw = {
    planCheckpoint: core.planCheckpoint(handle, options),
    loadCheckpoint: core.loadCheckpoint(handle, options, {}, 0),
    planBlockInput: core.planBlockInput(handle, ids, none),
    blockInput: core.blockInput(handle, ids, none, {}),
    gpt2Open: core.gpt2Open(handle, none),
  };
  for (const name of HEADER_TAKERS) assert.equal(raw[name].error?.code, "disposed", name);
  // The library keeps working.
  const again = await lab.openCheckpoint(bytes);
  assert.equal((await lab.checkpointInput(again, { tokenIds: ids })).shape.join(), `1,${ids.length},8`);
  again.dispose();
});

test("the raw core: a checkpointOpen handle serves the plans until released (twice is fine); open errors are the header's codes", async () => {
  const core = lab._core;
  const header = bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0)));
  const opened = core.checkpointOpen(header, bytes.length);
  assert.equal(opened.ok, true);
  const keys = Object.keys(JSON.parse(new TextDecoder().decode(header))).filter((k) => k !== "__metadata__");
  assert.equal(opened.value.keys, keys.length);
  assert.equal(opened.value.dataStart, 8 + header.length);
  const layer1 = { given: true, number: true, boolean: false, value: 1 };
  const plan = core.planCheckpoint(opened.value.handle, { layer: layer1, num_heads: { given: true, number: true, boolean: false, value: 2 }, context_length: { given: false, number: false, boolean: false, value: 0 }, intoClass: "", intoConfig: {} });
  assert.equal(plan.ok, true);
  assert.deepEqual(plan.value.needed.map((r) => r.name), ["h.1.attn.c_attn.weight", "h.1.attn.c_attn.bias", "h.1.attn.c_proj.weight", "h.1.attn.c_proj.bias"]);
  for (const r of plan.value.needed) assert.ok(r.begin >= opened.value.dataStart && r.end <= bytes.length && r.begin < r.end, `${r.name}: absolute offsets inside the file`);
  assert.deepEqual(plan.value.config, { d_in: spec.n_embd, d_out: spec.n_embd, context_length: spec.n_ctx, dropout: 0, num_heads: 2, qkv_bias: true });
  const reads = core.planBlockInput(opened.value.handle, ids, { given: true, number: true, boolean: false, value: 0 });
  assert.equal(reads.ok, true);
  assert.equal(reads.value.filter((r) => r.name.startsWith("wte.weight[")).length, new Set(ids).size);
  core.release(opened.value.handle);
  core.release(opened.value.handle); // twice is fine
  assert.equal(core.planBlockInput(opened.value.handle, ids, { given: true, number: true, boolean: false, value: 0 }).error.code, "disposed");
  assert.equal(core.checkpointOpen(new TextEncoder().encode("not json"), bytes.length).error.code, "checkpoint_bad_header");
  await assert.rejects(lab.openCheckpoint("file.safetensors"), (e) => e.code === "checkpoint_source");
  await assert.rejects(lab.openCheckpoint(bytes.subarray(0, 20)), (e) => e.code === "checkpoint_truncated");
});
