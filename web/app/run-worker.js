// A module Web Worker that runs large forward passes off the main thread with the same facade:
// torch.manual_seed(seed), the constructor, then forward with tracing, as one lab.run (one call into
// the core). The trace is lazy: it stays here, in this worker's WASM memory, and only its stages'
// facts go back, with the answers of the page's first draw of them (firstDraw, at the density the run
// message gives); the page then asks for what else it draws ({id, queries}: another head's heatmap, a
// table window, a whole stage for an export), answered with transferred Float32Arrays. The next run releases it. Messages with a `kind` are the
// checkpoint panel's and the check mode's file work (checkpoint-load.js), answered as {id, ok, ...result} or
// {id, ok: false, error}.
import { loadAttentionLab } from "../lib/attention-lab.js";
import { checkPlain, generatePlain, gpt2Plain, inputPlain, loadPlain, tracePlain } from "./checkpoint-load.js";
import { askTrace } from "./stage-source.js";

const ready = loadAttentionLab();
// The page's views, for the list of what its first draw of a run asks (firstDraw): answered with the
// run, in its message. Without them (a failed import) the page asks in a second message.
const views = import("./tensor-view.js").catch(() => null);
// Which binary runs here and on how many threads (a Worker gets the cores on an isolated page): the run
// panel says so for the runs it sends here.
ready.then((lab) => self.postMessage({ info: { threads: lab.threads, kernel: lab.kernel } }), () => {});

const WORK = { loadCheckpoint: loadPlain, checkpointInput: inputPlain, traceLayer: tracePlain, runGPT2: gpt2Plain, generateGPT2: generatePlain, checkModule: checkPlain };
/** Work that can be cancelled, by request id. */
const controllers = new Map();
/** The last run's lazy trace (released by the next run), and that run's request id. */
let trace = null;
let traceRun = 0;
/** Runs received and still waiting for the library: a warm-up then only delays them. */
let runsWaiting = 0;

/** The buffers of trace answers (Float32Arrays, or {data} objects), each once: what a message transfers. */
const buffersOf = (answers) => [...new Set(answers.map((a) => (a instanceof Float32Array ? a.buffer : a.data.buffer)))];

/** An error as plain data (an AttentionError's code, slot, message and hint). */
const plainError = (err) => ({ code: err?.code ?? "error", slot: err?.slot ?? "", message: err?.message ?? String(err), hint: err?.hint ?? "" });

/** The page's first draw of `lazy` at screen density `density`: {queries, answers}, or null without the views. */
function firstAnswers(view, lazy, density) {
  if (!view) return null;
  try {
    const queries = view.firstDraw(lazy.stages, density);
    return { queries, answers: queries.map((q) => askTrace(lazy, q)) };
  } catch {
    return null;  // the page asks them itself
  }
}

self.addEventListener("message", async (e) => {
  if (e.data.cancel) {
    controllers.get(e.data.cancel)?.abort();
    return;
  }
  if (e.data.queries) {
    const { id, run, queries } = e.data;
    try {
      if (!trace || run !== traceRun) throw { code: "disposed", slot: "trace", message: "this trace was released", hint: "" };
      const answers = queries.map((q) => askTrace(trace, q));
      self.postMessage({ id, ok: true, answers }, buffersOf(answers));
    } catch (err) {
      self.postMessage({ id, ok: false, error: plainError(err) });
    }
    return;
  }
  if (e.data.kind) {
    const { id, kind, ...payload } = e.data;
    const controller = new AbortController();
    controllers.set(id, controller);
    try {
      const progress = (p) => self.postMessage({ id, progress: p });
      const { result, transfer } = await WORK[kind](await ready, payload, { signal: controller.signal, progress });
      self.postMessage({ id, ok: true, ...result }, transfer);
    } catch (err) {
      self.postMessage({ id, ok: false, error: plainError(err) });
    } finally {
      controllers.delete(id);
    }
    return;
  }
  if (e.data.warm) {
    // Load the library, then run one small run of the kind to come as a run comes (lazy trace, its
    // first draw answered): the browser compiles WebAssembly in a quick first tier and optimizes the
    // code that runs hot, so the reader's first big run starts on optimized code. Nothing to answer.
    // Skipped when a run is already waiting (Run clicked while the library loads): it would start that
    // run ~0.1 s later, not faster.
    const lab = await ready;
    if (runsWaiting > 0) return;
    const { className, config, inputShape, density } = e.data;
    try {
      const width = Number(config.d_in);
      const small = lab.run(className, { ...config, context_length: 64 }, { shape: [1, 64, width], data: lab.seededTokens(64, width, 1).data }, { training: false, trace: "lazy" });
      if (density !== undefined) firstAnswers(await views, small.trace, density);
      small.trace.dispose();
    } catch {
      // a setup the warm-up cannot shrink this way (another class): the library is loaded all the same
    }
    // Then the heap the run will take, grown and paged in now (~0.1 s for GPT-2 small on 1024 tokens, on two threads)
    // rather than during the run. A run that arrives meanwhile waits for it, as it would have paid it.
    if (runsWaiting > 0 || !inputShape) return;
    let reserved = 0;
    try {
      reserved = lab.reserveMemory(className, config, inputShape, { trace: "lazy" }).bytes;
    } catch {
      // over the budget or the heap's limit: the run will say so itself
    }
    self.postMessage({ reserved });
    return;
  }
  const { id, className, config, x, seed, training, density } = e.data;
  runsWaiting += 1;
  try {
    const lab = await ready.finally(() => { runsWaiting -= 1; });
    trace?.dispose();
    trace = null;
    // The heap this run takes, grown and paged in by every thread of the pool first (~0.1 s for GPT-2
    // small on 1024 tokens on a new worker, where the run alone pages it in on one thread; ~2 ms once
    // the heap is there). A run over the budget is refused by lab.run itself, with its slot.
    try {
      lab.reserveMemory(className, config, x.shape, { trace: "lazy" });
    } catch {
      // the run says why
    }
    const r = lab.run(className, config, x, { seed, training, trace: "lazy" });  // one call into the core
    trace = r.trace;
    traceRun = id;
    const first = density === undefined ? null : firstAnswers(await views, r.trace, density);
    self.postMessage({ id, ok: true, output: r.output, trace: r.trace.stages, warnings: r.warnings, first }, [r.output.data.buffer, ...(first ? buffersOf(first.answers) : [])]);
  } catch (err) {
    self.postMessage({ id, ok: false, error: plainError(err) });
  }
});
