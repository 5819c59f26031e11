// A GPT-2 checkpoint for the panel, read and parsed in the page's worker when there is one: a valid
// header can hold a million keys (tens of megabytes of JSON), too much to parse on the main thread.
// What crosses back is plain data: the module as {className, config, parameters} (rebuilt here with
// lab.fromParameters) and the loader's report cut to what the panel shows. Without a Worker the same
// steps run on the main thread. No DOM here: run-worker.js imports this module too.
// The chosen file is opened once (lab.openCheckpoint: its header read and parsed once) and kept, so
// loading a layer, running the whole model and tracing a layer parse the header once.

/**
 * The loader's report as the panel shows it: the core lists at most 200 ignored keys and counts the
 * rest (`ignoredCount`), and names the highest layer (`maxLayer`).
 */
export function shortReport(r) {
  return {
    used: r.used, missing: r.missing, transposed: r.transposed, sources: r.sources, gpt2Vocab: r.gpt2Vocab, layout: r.layout, layoutName: r.layoutName, mapping: r.mapping,
    ignored: r.ignored, ignoredCount: r.ignoredCount, maxLayer: r.maxLayer,
  };
}

/**
 * Loads one layer of `file` ({layer, num_heads?, context_length?, into?}; `into` is
 * {className, config, seed}: the module to load into, made here as the page would make it).
 * Resolves to {module, report (short), bytesRead, format ("safetensors" or "torch")}; rejects with the library's AttentionError, or
 * its {code, slot, message, hint} when the worker did the work.
 */
export async function loadCheckpoint(lab, runner, file, options) {
  if (!runner.hasWorker) {
    const { module, report, bytesRead, format } = await loadHere(lab, file, options);
    return { module, report: shortReport(report), bytesRead, format };
  }
  const r = await runner.request("loadCheckpoint", { file, options });
  return { module: lab.fromParameters(r.className, r.config, r.parameters), report: r.report, bytesRead: r.bytesRead, format: r.format };
}

/** lab.checkpointInput on the file's one CheckpointFile, in the worker when there is one. */
export async function checkpointInput(lab, runner, file, options) {
  if (!runner.hasWorker) return withCheckpoint(lab, file, (checkpoint) => lab.checkpointInput(checkpoint, options));
  return (await runner.request("checkpointInput", { file, options })).tensor;
}

/**
 * A loaded layer's traced eval forward on `x` ((1, num_tokens, d), its real input): on the main thread
 * when the core's estimate of the run is small, else in the worker (GPT-2 small's layer on 1024 tokens
 * was a 4 s long task on the main thread), which rebuilds the module from its parameters. Resolves to
 * the trace (the stages, as forward gives them).
 */
export async function traceLayer(lab, runner, module, x) {
  const { bytes } = lab.estimateBytes(module.className, module.config, x.shape, { trace: true });
  if (!runner.usesWorker(bytes)) return module.forward(x, { training: false, trace: true }).trace;
  const job = { className: module.className, config: { ...module.config }, parameters: module.parameters(), x: { shape: x.shape, data: x.data } };
  return (await runner.request("traceLayer", job)).trace;
}

/** In the worker: the module rebuilt from its parameters, its traced eval forward on x, the stages transferred. */
export async function tracePlain(lab, { className, config, parameters, x }) {
  const module = lab.fromParameters(className, config, parameters);
  try {
    const { trace } = module.forward(x, { training: false, trace: true });
    return { result: { trace }, transfer: [...new Set(trace.map((s) => s.data.buffer))] };
  } finally {
    module.dispose();
  }
}

/**
 * The whole model on token ids (lab.loadGPT2 + model.run), in the worker when there is one: resolves to
 * {config, layers: [per layer {thumbnail (1, n_head, S, S), firstTokens (1, n_head, F, F)}], nextTokens}
 * (model.run's attention "thumbnails": nothing T x T crosses; GPT-2 XL on 1024 tokens would be 4.7 GiB
 * of weights, and the grid drew every one of them on each click); progress per step through
 * `onProgress`, cancelled through `signal`. Rejects with the library's AttentionError data.
 */
export async function runGPT2(lab, runner, file, { ids, numHeads, onProgress, signal }) {
  if (!runner.hasWorker) return (await gpt2Plain(lab, { file, ids, numHeads }, { signal, progress: onProgress })).result;
  return runner.request("runGPT2", { file, ids, numHeads }, { onProgress, signal });
}

/** In the worker (or here): the run as plain data, and the buffers to transfer. */
export async function gpt2Plain(lab, { file, ids, numHeads }, { signal, progress }) {
  return withCheckpoint(lab, file, async (checkpoint) => {
    const model = await lab.loadGPT2(checkpoint, numHeads ? { num_heads: numHeads } : undefined);
    try {
      const r = await model.run(ids, { signal, onProgress: progress, attention: "thumbnails" });
      const layers = r.layers.map((l) => ({ thumbnail: l.thumbnail, firstTokens: l.firstTokens }));
      return { result: { config: { ...model.config }, layers, nextTokens: r.nextTokens }, transfer: layers.flatMap((l) => [l.thumbnail.data.buffer, l.firstTokens.data.buffer]) };
    } finally {
      model.dispose();
    }
  });
}

/**
 * model.generate on the panel's file, in the worker when there is one: `options` {maxNewTokens,
 * temperature, topK, eosId, seed, cache, attention}; each step (with its attention rows when asked)
 * reaches `onToken` as soon as its token is out; the resolved steps carry no rows.
 */
export async function generateGPT2(lab, runner, file, { ids, numHeads, options, onToken, signal }) {
  const onProgress = (p) => onToken?.(p);
  if (!runner.hasWorker) return (await generatePlain(lab, { file, ids, numHeads, options }, { signal, progress: onProgress })).result;
  return runner.request("generateGPT2", { file, ids, numHeads, options }, { onProgress, signal });
}

/** In the worker (or here): a generation as plain data; the generator is torch.manual_seed(seed). */
export async function generatePlain(lab, { file, ids, numHeads, options }, { signal, progress }) {
  return withCheckpoint(lab, file, (checkpoint) => generateOn(lab, checkpoint, { ids, numHeads, options }, { signal, progress }));
}

/** generatePlain's work on the open file. */
async function generateOn(lab, checkpoint, { ids, numHeads, options }, { signal, progress }) {
  const model = await lab.loadGPT2(checkpoint, numHeads ? { num_heads: numHeads } : undefined);
  const { seed, ...rest } = options;
  const generator = lab.manualSeed(seed);
  try {
    const r = await model.generate(ids, { ...rest, generator, signal, onToken: (step) => progress(step) });
    // each step went out through `progress` as its token came; the answer leaves their attention rows out
    const steps = r.steps.map(({ attention, ...step }) => step);
    return { result: { tokenIds: r.tokenIds, steps, stoppedBy: r.stoppedBy, resident: r.resident, nCtx: model.config.n_ctx, config: { ...model.config } }, transfer: [] };
  } finally {
    generator.dispose();
    model.dispose();
  }
}

/** In the worker: the load as plain data, and the buffers to transfer. */
export async function loadPlain(lab, { file, options }) {
  const { module, report, bytesRead, format } = await loadHere(lab, file, options);
  const parameters = module.parameters();
  const result = { className: module.className, config: { ...module.config }, parameters, report: shortReport(report), bytesRead, format };
  module.dispose();
  return { result, transfer: [...new Set(parameters.map((p) => p.data.buffer))] };
}

/** In the worker: lab.checkModule of a check file (compare-check.js), its report as plain data. */
export async function checkPlain(lab, { file }) {
  return { result: await lab.checkModule(file), transfer: [] };
}

/** In the worker: the layer's input as plain data. */
export async function inputPlain(lab, { file, options }) {
  const tensor = await withCheckpoint(lab, file, (checkpoint) => lab.checkpointInput(checkpoint, options));
  return { result: { tensor }, transfer: [tensor.data.buffer] };
}

/**
 * One layer of `file`. bytesRead is what loading it took: what opening it read (a safetensors header; a
 * torch.save zip's records and data.pkl), once, and the slices read during this load (another request on the same file at the same time,
 * such as a whole-model run, would be counted in too).
 */
async function loadHere(lab, file, { into, ...options }) {
  return withCheckpoint(lab, file, async (checkpoint, counted) => {
    if (into) options.into = lab.create(into.className, into.config, { generator: lab.manualSeed(into.seed) });
    const before = counted.read();
    const { module, report } = await lab.loadCheckpoint(checkpoint, options);
    const after = counted.read();
    return { module, report, bytesRead: after === null || counted.opened === null ? null : counted.opened + (after - before), format: checkpoint.format };
  });
}

/**
 * The file opened last: {key, counted, checkpoint: Promise<CheckpointFile>, uses} (one per realm: the
 * worker's, or the page's without one). `uses` counts the work on it still in flight.
 */
let kept = null;

/** A chosen file's identity: a File sent to the worker arrives as a new object each time. */
const fileKey = (file) => JSON.stringify([file.name ?? "", file.size, file.lastModified ?? 0]);

/**
 * The one CheckpointFile of `file` (by name, size and lastModified), opened through a counting Blob on
 * first use; opening another file disposes the previous one once no work uses it (a load of one file
 * and a whole-model run of the file chosen before it can be in flight together: the run must not end
 * the load's file under it). A file that fails to open is not kept, so trying again reads it again.
 */
function openedFile(lab, file) {
  const key = fileKey(file);
  if (kept?.key === key) return kept;
  const previous = kept;
  const counted = countingBlob(file);
  const entry = { key, counted, checkpoint: lab.openCheckpoint(counted.blob), uses: 0 };
  // what opening read (nothing else reads this blob before the file is open)
  entry.checkpoint.then(() => { counted.opened = counted.read(); }, () => {});
  kept = entry;
  if (previous) disposeUnused(previous);
  entry.checkpoint.catch(() => {
    if (kept === entry) kept = null;
  });
  return entry;
}

/** Disposes a file that is no longer the kept one and that no work uses. */
function disposeUnused(entry) {
  if (entry !== kept && entry.uses === 0) entry.checkpoint.then((f) => f.dispose(), () => {});
}

/** `work(checkpoint, counted)` on the file's one CheckpointFile, which stays open until the work ends. */
async function withCheckpoint(lab, file, work) {
  const entry = openedFile(lab, file);
  entry.uses += 1;
  try {
    return await work(await entry.checkpoint, entry.counted);
  } finally {
    entry.uses -= 1;
    disposeUnused(entry);
  }
}

/**
 * The file as a Blob whose slices are counted, so the page can say how little it read. The library
 * reads through Blob.slice; a Blob made of a File refers to the file's bytes (nothing is read here).
 */
function countingBlob(file) {
  let bytes = 0;
  try {
    class CountedBlob extends Blob {
      slice(start, end, type) {
        const part = file.slice(start, end, type);
        bytes += part.size;
        return part;
      }
    }
    return { blob: new CountedBlob([file]), read: () => bytes, opened: null };
  } catch {
    return { blob: file, read: () => null, opened: null };
  }
}
