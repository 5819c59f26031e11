// torch.save files through the facade (tests/fixtures/torch_save, written by generate_torch_save.py with
// torch 1.13): every call that takes a checkpoint takes them, told apart by their bytes, not their name;
// Hugging Face's pytorch_model.bin gives the same last-token logits as model.safetensors of the same
// weights (and PyTorch's within 1e-5); every refused file rejects with its code; a 1.7 GB sparse .pth
// (the book's GPTModel at GPT-2 medium's shapes) opens without being read whole and runs within the
// memory estimate (the browser test loads a Hugging Face-layout one in the page).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, openAsBlob, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadAttentionLab } from "attention-lab";
import { bookGpt2Tensors } from "../safetensors.mjs";
import { pickleZip, sparseTorchSave } from "../torch-save.mjs";

const lab = await loadAttentionLab();
const dir = new URL("../fixtures/torch_save/", import.meta.url);
const expected = JSON.parse(readFileSync(new URL("expected.json", dir), "utf8"));
const bytes = (name) => new Uint8Array(readFileSync(new URL(name, dir)));
const child = fileURLToPath(new URL("./children/gpt2-peak.mjs", import.meta.url));

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail("expected a rejection");
}

async function lastLogits(source) {
  const model = await lab.loadGPT2(source, { num_heads: expected.spec.n_head });
  try {
    return (await model.run(expected.token_ids)).lastLogits;
  } finally {
    model.dispose();
  }
}

const maxDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

test("pytorch_model.bin gives model.safetensors' last-token logits bit for bit, and PyTorch's within 1e-5", async () => {
  const fromBin = await lastLogits(bytes("pytorch_model.bin"));
  const fromSafetensors = await lastLogits(bytes("model.safetensors"));
  assert.equal(fromBin.length, expected.spec.vocab_size);
  assert.deepEqual(Array.from(fromBin), Array.from(fromSafetensors));
  assert.ok(maxDiff(fromBin, expected.files["pytorch_model.bin"].logits) <= 1e-5);
});

test("float16, bfloat16, a tied lm_head under transformer., saved non-contiguous views and the legacy format give PyTorch's logits within 1e-5", async () => {
  for (const name of ["pytorch_model_f16.bin", "pytorch_model_bf16.bin", "lm_head_tied.bin", "noncontiguous.bin", "legacy.pth"]) {
    const logits = await lastLogits(bytes(name));
    const d = maxDiff(logits, expected.files[name].logits);
    assert.ok(d <= 1e-5, `${name}: ${d}`);
  }
  // the same weights in another layout of the file: the same bits
  assert.deepEqual(Array.from(await lastLogits(bytes("noncontiguous.bin"))), Array.from(await lastLogits(bytes("pytorch_model.bin"))));
  // torch < 1.6's format (Hugging Face's 2019 GPT-2 pytorch_model.bin): model.safetensors' logits bit for bit
  assert.deepEqual(Array.from(await lastLogits(bytes("legacy.pth"))), Array.from(await lastLogits(bytes("model.safetensors"))));
  const legacy = await lab.openCheckpoint(bytes("legacy.pth"));
  assert.equal(legacy.format, "torch");
  assert.equal(legacy.keys, expected.files["legacy.pth"].keys);
  legacy.dispose();
});

test("openCheckpoint, loadCheckpoint and checkpointInput take a .pth as they take a .safetensors file, told apart by bytes (a Blob named .safetensors too)", async () => {
  const file = await lab.openCheckpoint(new File([bytes("pytorch_model.bin")], "model.safetensors")); // the name says nothing
  assert.equal(file.format, "torch");
  assert.equal(file.dataStart, 0);
  assert.equal((await lab.openCheckpoint(new File([bytes("model.safetensors")], "pytorch_model.bin"))).format, "safetensors");
  assert.equal(file.keys, expected.files["pytorch_model.bin"].keys);
  const fromBin = await lab.loadCheckpoint(file, { layer: 1, num_heads: 2 });
  const fromSafetensors = await lab.loadCheckpoint(bytes("model.safetensors"), { layer: 1, num_heads: 2 });
  assert.deepEqual(fromBin.report.used, fromSafetensors.report.used);
  const a = fromBin.module.parameters(), b = fromSafetensors.module.parameters();
  assert.equal(a.length, b.length);
  a.forEach((p, i) => assert.deepEqual(Array.from(p.data), Array.from(b[i].data), p.name));
  const ids = expected.token_ids.slice(0, 3);
  const x = await lab.checkpointInput(file, { tokenIds: ids, layer: 1, num_heads: 2 });
  const y = await lab.checkpointInput(bytes("model.safetensors"), { tokenIds: ids, layer: 1, num_heads: 2 });
  assert.deepEqual(Array.from(x.data), Array.from(y.data));
  file.dispose();
});

test("every refused file rejects openCheckpoint and loadGPT2 with its code, naming the global, entry or class", async () => {
  assert.equal(Object.keys(expected.refused).length, 10);
  for (const [name, want] of Object.entries(expected.refused)) {
    for (const call of [(s) => lab.openCheckpoint(s), (s) => lab.loadGPT2(s)]) {
      const e = await rejection(call(bytes(name)));
      assert.equal(e.code, want.code, `${name}: ${e.code} ${e.message}`);
      if (want.names) assert.ok(e.message.includes(want.names), `${name}: ${e.message}`);
      assert.ok(e.hint.length > 0, name);
    }
  }
  const module = await rejection(lab.openCheckpoint(bytes("whole_module.pth")));
  assert.match(module.hint, /torch\.save\(model\.state_dict\(\), "model\.pth"\)/);
  const legacy = await rejection(lab.openCheckpoint(bytes("legacy_big_endian.pth")));
  assert.match(legacy.message, /big-endian/);
  assert.match(legacy.hint, /torch\.save\(torch\.load\("model\.pth"\), "model\.pth"\)/);
});

test("a pickled million-entry dict is refused (checkpoint_limit) within a second, the WASM heap bounded", async () => {
  // {0: None, 1: None, ...}: EMPTY_DICT MARK (BININT i NONE) x 1e6 SETITEMS STOP
  const body = Buffer.alloc(1e6 * 6);
  for (let i = 0; i < 1e6; i++) {
    body.write("J", i * 6, "latin1");
    body.writeInt32LE(i, i * 6 + 1);
    body.write("N", i * 6 + 5, "latin1");
  }
  const file = pickleZip(Buffer.concat([Buffer.from("\x80\x02}(", "latin1"), body, Buffer.from("u.", "latin1")]));
  const before = lab.heapPeak();
  const started = Date.now();
  const e = await rejection(lab.openCheckpoint(file));
  assert.equal(e.code, "checkpoint_limit");
  assert.match(e.message, /at most 500000 values/);
  assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
  assert.ok(lab.heapPeak() - before < 128 * 1048576, `WASM heap grew by ${lab.heapPeak() - before} bytes`);
});

test("a nested state dict (model_state_dict) opens with its keys joined with '.'", async () => {
  const file = await lab.openCheckpoint(bytes("nested.pth"));
  assert.equal(file.keys, expected.files["nested.pth"].keys); // the tensors only: "epoch" and "note" are skipped
  file.dispose();
});

test("a 1.7 GB sparse gpt2-medium355M-sft.pth in the book's layout (GPT-2 medium's shapes, the mask buffers, an untied out_head) opens without being read whole and runs within the memory estimate", async (t) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "attention-lab-pth-"));
  try {
    const file = path.join(tmp, "gpt2-medium355M-sft.pth");
    const size = sparseTorchSave(file, bookGpt2Tensors({ d: 1024, layers: 24 }));
    assert.ok(size > 1.4e9, `${size} bytes`);
    const before = lab.heapPeak();
    const started = Date.now();
    const opened = await lab.openCheckpoint(await openAsBlob(file));
    assert.equal(opened.keys, 2 + 24 * 17 + 3);
    assert.ok(lab.heapPeak() - before < 8 * 1048576, `WASM heap grew by ${lab.heapPeak() - before} bytes`);
    t.diagnostic(`opened in ${Date.now() - started} ms`);
    opened.dispose();
    const m = JSON.parse(execFileSync(process.execPath, ["--max-old-space-size=2048", child, JSON.stringify({ path: file, numTokens: 4, numHeads: 16 })], { encoding: "utf8" }));
    t.diagnostic(`4 tokens: peak ${(m.peak / 1048576).toFixed(1)} MiB, estimate ${(m.estimate / 1048576).toFixed(1)} MiB`);
    assert.equal(m.size, "medium");
    assert.equal(m.layers, 24);
    assert.ok(m.peak + m.resultBytes <= m.estimate, `peak ${m.peak} + ${m.resultBytes} > estimate ${m.estimate}`);
    assert.deepEqual(m.nextTokens.map((x) => x.id), [0, 1, 2, 3, 4]); // zero weights: a tie, broken by the lowest id
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
