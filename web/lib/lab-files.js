// The lab's calls that read a file (lab.loadCheckpoint, openCheckpoint, loadGPT2, checkpointInput and
// checkModule of a check file): each reads its arguments at once, as every call of the facade does, and
// refuses a lean lab; then it imports the code that reads files (checkpoint-calls.js and what it
// imports) on first use, so a page that reads no file never loads it (dist/ ships it as a chunk of
// its own). lab.js's methods of the same names call these.
import { CheckpointFile, sourceOf } from "./checkpoint-file.js";
import { AttentionModule } from "./handles.js";
import { numberOption, readOptions, readTokenIds } from "./inputs.js";
import { AttentionError } from "./values.js";

let calls = null;

/**
 * checkpoint-calls.js, imported by the first call that reads a file and kept (one import per realm); a
 * failed import (a network error) is tried again by the next call.
 */
function checkpointCalls() {
  calls ??= import("./checkpoint-calls.js").catch((err) => {
    calls = null;
    throw err;
  });
  return calls;
}

/** Rejects a checkpoint method on a lean lab ("no_checkpoints"), naming the method and the way out. */
function needCheckpoints(lab, method) {
  if (lab.hasCheckpoints) return;
  throw new AttentionError({
    code: "no_checkpoints", slot: method,
    message: `lab.${method} needs the checkpoint readers, and this lab was loaded without them (loadAttentionLab({checkpoints: false}) loads the lean binary)`,
    hint: "Load the lab without {checkpoints: false} (the first call of loadAttentionLab decides), or read the file where a full lab runs (the teaching page reads files in its Worker).",
  });
}

/**
 * lab.loadCheckpoint: one GPT-2 layer's attention from a .safetensors file into MultiHeadAttention(d,
 * d, n_ctx, 0.0, n_head, qkv_bias=True), reading only the header and the four tensors it needs.
 */
export async function loadCheckpoint(lab, source, options) {
  needCheckpoints(lab, "loadCheckpoint");
  const { layer = 0, num_heads, context_length, into } = readOptions(options, "lab.loadCheckpoint");
  const opened = sourceOf(source);
  const plain = { layer: numberOption(layer), num_heads: numberOption(num_heads), context_length: numberOption(context_length), intoClass: "", intoConfig: {} };
  if (into != null) {
    if (!AttentionModule.is(into)) {
      throw new AttentionError({ code: "checkpoint_config_mismatch", slot: "", message: "`into` must be a module made by lab.create", hint: "" });
    }
    plain.intoClass = into.className;
    plain.intoConfig = into.config;
  }
  const r = await (await checkpointCalls()).loadLayer(lab._core, opened, plain, into);
  if (into != null) return { module: into, report: r.report };
  return { module: new AttentionModule(lab, r, lab.manualSeed(123)), report: r.report };
}

/**
 * lab.openCheckpoint: a .safetensors or torch.save (.pth, pytorch_model.bin) file (an ArrayBuffer, a
 * typed array, a Blob or a File) opened once, told apart by its bytes: its header (or the zip's records
 * and data.pkl) read and parsed in WASM. Resolves to a CheckpointFile ({size, keys, dataStart,
 * dispose()}) that loadCheckpoint, checkpointInput and loadGPT2 take in place of the source, with no
 * further header read or parse. A CheckpointFile given here is returned as it is.
 */
export async function openCheckpoint(lab, source) {
  needCheckpoints(lab, "openCheckpoint");
  const opened = sourceOf(source);
  return CheckpointFile.is(opened) ? opened : (await checkpointCalls()).openFile(lab._core, opened);
}

/**
 * lab.loadGPT2: a GPT-2 .safetensors or torch.save file (an ArrayBuffer, a typed array, a Blob or a
 * File) opened for the whole model, reading only its header now. `options.num_heads` for widths that are
 * not GPT-2's (else the header's __metadata__ n_head, or GPT-2's own head counts). Resolves to a model
 * with `config` ({n_embd, n_head, n_layer, n_ctx, vocab_size, dtype, size}) and `run(tokenIds, options)`.
 */
export async function loadGPT2(lab, source, options) {
  needCheckpoints(lab, "loadGPT2");
  const { num_heads } = readOptions(options, "lab.loadGPT2");
  const opened = sourceOf(source);
  return (await checkpointCalls()).openModel(lab._core, opened, numberOption(num_heads));
}

/**
 * lab.checkpointInput: what GPT-2 layer `layer`'s attention really sees for `tokenIds`, as (1,
 * num_tokens, d): ln_1 of the residual stream entering block `layer`. Layer 0 reads one wte row per
 * distinct id, T wpe rows and ln_1 (a file with only that layer's keys works); a later layer runs blocks
 * 0 .. layer-1 first, one at a time, so the file must hold the whole model (options: num_heads for
 * widths not GPT-2's, signal).
 */
export async function checkpointInput(lab, source, options) {
  needCheckpoints(lab, "checkpointInput");
  const { tokenIds, layer = 0, num_heads, signal } = readOptions(options, "lab.checkpointInput");
  const opened = sourceOf(source);
  const ids = readTokenIds(tokenIds);
  const where = numberOption(layer);  // one rule with loadCheckpoint's layer
  return (await checkpointCalls()).layerInput(lab._core, opened, ids, where, numberOption(num_heads), signal);
}

/** lab.checkModule of a check file: its keys, call and memory estimate checked from its header, then only its tensors read. */
export async function checkFile(lab, file) {
  needCheckpoints(lab, "checkModule");
  const source = sourceOf(file);
  return (await checkpointCalls()).checkFile(lab._core, source);
}
