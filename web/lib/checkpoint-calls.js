// The lab's calls that read a checkpoint file, after the lab has read their arguments (lab.js): loading
// one layer's attention, opening a file, GPT-2's whole model, a layer's input, a check file. lab.js
// imports this module on the first of them, so a page that reads no file never loads it, nor what it
// imports (file-reads.js, gpt2-model.js): dist/ ships them as one chunk of their own.
import { checkSignal, openFile, readRanges, withFile } from "./file-reads.js";
import { GPT2Model } from "./gpt2-model.js";
import { unwrap } from "./inputs.js";

export { openFile };

/**
 * lab.loadCheckpoint's reads and load: the core's plan for the layer's tensors, their bytes, then the
 * load (into `into`'s handle, or a new module's result when it is null). `plain`: the read options.
 */
export function loadLayer(core, source, plain, into) {
  return withFile(core, source, async (file) => {
    const reader = file._reader;
    const plan = unwrap(core.planCheckpoint(file._handle, plain));
    const buffers = {};
    for (const { name, begin, end } of plan.needed) buffers[name] = await reader.read(begin, end);
    // all or nothing: `into` changes only after every check passed
    return unwrap(core.loadCheckpoint(file._handle, plain, buffers, into != null ? into._handle : 0));
  });
}

/** lab.loadGPT2's model of `source`; `numHeads` its num_heads option as the core reads it (numberOption). */
export function openModel(core, source, numHeads) {
  // the model shares the file's parsed header (it outlives the file's dispose)
  return withFile(core, source, (file) => new GPT2Model(core, unwrap(core.gpt2Open(file._handle, numHeads)), file._reader, file.format));
}

/** lab.checkpointInput's result for the read token ids `ids` at layer `where` (numberOption); `numHeads` as openModel's. */
export function layerInput(core, source, ids, where, numHeads, signal) {
  checkSignal(signal);
  return withFile(core, source, async (file) => {
    const reader = file._reader;
    const reads = unwrap(core.planBlockInput(file._handle, ids, where));
    if (where.value > 0) {
      // Layer L's real input needs blocks 0 .. L-1: the whole model's path (reads them one at a time).
      const model = new GPT2Model(core, unwrap(core.gpt2Open(file._handle, numHeads)), reader, file.format);
      try {
        return await model.attentionInput(ids, where.value, { signal });
      } finally {
        model.dispose();
      }
    }
    return unwrap(core.blockInput(file._handle, ids, where, await readRanges(reader, reads, signal)));
  });
}

/** checkModule of a check file: its keys, call and memory estimate checked from its header, then only its tensors read. */
export function checkFile(core, source) {
  return withFile(core, source, async (opened) => unwrap(core.checkFile(opened._handle, await readRanges(opened._reader, unwrap(core.checkFileReads(opened._handle))))));
}
