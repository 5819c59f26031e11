// Loading the core (attention_core.mjs + a .wasm), once per realm (a page, a worker, a Node process),
// shared by every caller, <attention-lab> elements included. Where the files come from is the first
// call's choice (wasm-source.js); this module picks how many threads run, imports the threaded glue
// when they do, instantiates the glue on the compiled module and keeps the rule for later calls.
// attention-lab.js reads loadAttentionLab's options and hands them here (loadCore); Node's facts
// (its cores, its files) come from attention-lab.node.js as `node`.
import createAttentionCore from "./attention_core.mjs";
import { AttentionError, errorText, isAttentionError, valueText } from "./values.js";
import { binaryFiles, compileLocated, defaultSource, hasRelaxedSimd, loadError, sourceOf } from "./wasm-source.js";

/** The most threads the default picks (more barely helps these products, and each is a Worker with the whole module). */
const DEFAULT_MAX_THREADS = 4;
/** The most threads the option accepts (the core's ThreadPool::kMaxThreads). */
const MAX_THREADS = 16;

/** The load in progress or done: {kind, key, label, done, threads, lean, promise}; forgotten when it fails, so a later call can try again. */
let loaded;

/**
 * The threads a load runs on: `threads` when given (checked: a whole number from 1 to 16), else the
 * machine's cores, at most 4, in Node and in a Worker; one on a page's main thread (a Window), which
 * runs the page's small forwards sooner than a pool of Workers starts (each loads the glue and
 * instantiates the module) and cannot block on one (a Window cannot Atomics.wait): the page runs its
 * big work in a module Worker, which gets the cores. And 1 wherever threads cannot run: a page that is
 * not cross-origin isolated (no SharedArrayBuffer across Workers), a realm without Worker, or an
 * engine without SharedArrayBuffer. Node (the Node entry's `node`) always can.
 */
function threadCount(threads, node) {
  if (threads !== undefined && threads !== null && !(typeof threads === "number" && Number.isInteger(threads) && threads >= 1 && threads <= MAX_THREADS)) {
    throw loadError("bad_threads", `threads must be a whole number from 1 to ${MAX_THREADS}, got ${valueText(threads)}`, "Pass {threads: 1} for one thread, or leave threads out for as many as the machine has (at most 4).", "threads");
  }
  const isolated = node !== undefined || (globalThis.crossOriginIsolated === true && typeof Worker === "function");
  if (!isolated || typeof SharedArrayBuffer !== "function") return 1;
  if (threads !== undefined && threads !== null) return threads;
  if (node === undefined && globalThis.window !== undefined && globalThis.window === globalThis) return 1;  // a page's main thread
  const cores = node !== undefined ? node.cores : globalThis.navigator?.hardwareConcurrency;
  return Number.isInteger(cores) && cores >= 1 ? Math.min(cores, DEFAULT_MAX_THREADS) : 1;
}

/**
 * The threaded glue (attention_core_mt.mjs: {create, url}) and the URL of its pthread worker (the .cjs
 * copy in Node, where a .js is an ES module under "type": "module"; the .js in browsers, which the glue
 * starts as a module Worker), from where the located source has its files; null where they cannot be
 * had (a classic-script bundle has no URL to find them by; a browser cannot start a Worker from another
 * origin, or from a data: URL), and the load then runs on one thread.
 */
async function threadedGlue(source, node) {
  try {
    const worker = await source.locate(node !== undefined ? "attention_core_mt.worker.cjs" : "attention_core_mt.worker.js");
    const origin = globalThis.location?.origin;
    if (node === undefined && typeof origin === "string" && worker.origin !== origin) {
      const where = worker.protocol === "data:" ? "was inlined as a data: URL (a bundler's inline limit above its size, e.g. Vite's build.assetsInlineLimit), which has no origin" : `${worker.href} is on another origin than the page (${origin})`;
      console.warn(`attention-lab: the threaded core's worker ${where}, and a Worker must be on the page's own, so the core runs on one thread.`);
      return null;
    }
    // By URL, never a literal specifier: a bundler leaves it to the runtime (it would inline the glue
    // into a chunk whose worker cannot import it back); the URL is wasm-source.js's, which bundlers
    // emit the file for.
    const url = (await source.locate("attention_core_mt.mjs")).href;
    const glue = await import(/* webpackIgnore: true */ /* @vite-ignore */ url);
    return { create: glue.default, worker, url };
  } catch {
    return null;
  }
}

/** A Node worker thread that must not keep the process alive (browsers' Workers have no unref). */
function unrefWorker(worker) {
  if (typeof worker?.unref === "function") worker.unref();
}

/**
 * The compiled binary and the glue to run it: {wasmModule, label, file, glue, threads}. One binary for a
 * wasmUrl or wasmBinary; for a located source the one the plan picks (wasm-source.js's binaryFiles),
 * threaded when its glue can be imported (which loads while the binary compiles), else on one thread.
 */
async function compileForPlan(source, plan, node) {
  if (source.locate === undefined) return { wasmModule: await source.compile(), label: source.label, file: "attention_core.wasm", glue: null, threads: 1 };
  let threads = plan.threads;
  let glue = null;
  let compiling = null;
  if (threads > 1) {
    compiling = compileLocated(source, binaryFiles({ threaded: true, fma: plan.fma }), node);
    compiling.catch(() => {});  // awaited below, unless the glue is missing and a single-thread binary replaces it
    glue = await threadedGlue(source, node);
    if (glue === null) {
      threads = 1;
      compiling = null;
    }
  }
  compiling ??= compileLocated(source, binaryFiles({ threaded: false, lean: plan.lean, fma: plan.fma }), node);
  const { module, label, file, note } = await compiling;
  if (note) console.warn(note);
  return { wasmModule: module, label, file, glue, threads };
}

/**
 * The Emscripten glue instantiated on the compiled module (the glue itself fetches nothing); with
 * threads > 1 the threaded glue, its pool of threads - 1 workers loaded before it resolves, and the
 * core's ThreadPool started on them (core.setThreads). In Node the workers are unref'd, so that a
 * process whose work is done exits while the lab lives.
 */
async function createCore(source, plan, node) {
  const { wasmModule, label, file, threads, glue: threaded } = await compileForPlan(source, plan, node);
  const glue = threaded ?? { create: createAttentionCore, worker: null };
  let fail;
  const failed = new Promise((_, reject) => {
    fail = reject;
  });
  const started = glue.create({
    // the pool's size, and the glue's URL, which each pthread worker imports (a bundler renames it)
    ...(glue.worker ? { pthreadPoolSize: threads - 1, mainScriptUrlOrBlob: glue.url } : {}),
    // never used to fetch (instantiateWasm below instantiates the module it is given); set so the glue
    // does not build a URL from import.meta.url, which a classic-script bundle leaves empty; the
    // threaded glue asks it for its worker file
    locateFile: (file) => (glue.worker && /\.worker\.js$/.test(file) ? glue.worker : file),
    instantiateWasm(imports, receive) {
      // named by where it came from: what a wasmUrl served is refused under wasmUrl, not wasmBinary
      const misfit = (err) => fail(loadError("wasm_binary", `the WebAssembly module from ${label} does not fit attention_core.mjs (${errorText(err)})`, `${source.kind === "binary" ? "Pass" : "Serve"} this package's own ${file}: a .wasm from another build (or another version) has other imports and exports.`, source.slot));
      WebAssembly.instantiate(wasmModule, imports).then((instance) => {
        try {
          receive(instance, wasmModule);  // throws when the exports are not the glue's (no memory, say)
        } catch (err) {
          misfit(err);
        }
      }, misfit);
      return {};  // the exports arrive through receive
    },
  });
  const core = await Promise.race([started, failed]);
  if (glue.worker) {
    const set = core.setThreads(threads);
    if (!set.ok) throw new AttentionError(set.error);
    const pool = core.PThread;
    for (const w of [...(pool?.unusedWorkers ?? []), ...(pool?.runningWorkers ?? [])]) unrefWorker(w);
  }
  return core;
}

/**
 * A later call's answer while a load is in progress or done: its promise when the call names the
 * same source (or none) and asks nothing it cannot give; else the rejection wasm_loaded.
 */
function sameLoad(source, threads, askedThreads, askedCheckpoints) {
  const state = loaded.done ? "loaded" : "loading";
  const again = (slot, message, hint) => Promise.reject(loadError("wasm_loaded", `the core is already ${state} ${message}`, `${hint} later calls may pass nothing and share that lab.`, slot));
  if (source !== null && (source.kind !== loaded.kind || source.key !== loaded.key)) {
    return again(source.slot, `from ${loaded.label}; it is loaded once, so it cannot also be loaded from ${source.label}`, "Pass wasmPaths, wasmUrl or wasmBinary on the first call of loadAttentionLab (before any <attention-lab> element connects);");
  }
  if (source === null || source.kind === "paths") {
    if (askedThreads !== undefined && askedThreads !== null && loaded.threads !== threads) {
      return again("threads", `on ${loaded.threads} thread${loaded.threads === 1 ? "" : "s"}; it is loaded once, so it cannot also run on ${threads}`, "Pass threads on the first call of loadAttentionLab (before any <attention-lab> element connects);");
    }
    if (askedCheckpoints === true && loaded.lean) {
      return again("checkpoints", "without the checkpoint readers ({checkpoints: false}); it is loaded once, so it cannot also load them", "Leave {checkpoints: false} out of the first call of loadAttentionLab (before any <attention-lab lean> element connects);");
    }
  }
  return loaded.promise;
}

/**
 * Loads the core once (see loadAttentionLab in the .d.ts for the options and the rule for a second
 * call) and resolves to makeLab(core). `options`: loadAttentionLab's, read by attention-lab.js, with
 * the Node entry's `node`. Never throws: bad options and failed loads reject with AttentionError.
 */
export function loadCore({ wasmUrl, wasmBinary, wasmPaths, threads: askedThreads, checkpoints, node }, makeLab) {
  let source;
  let threads;
  try {
    threads = threadCount(askedThreads, node);
    if (checkpoints !== undefined && checkpoints !== null && typeof checkpoints !== "boolean") {
      throw loadError("wasm_options", `checkpoints must be true or false, got ${valueText(checkpoints)}`, "Pass {checkpoints: false} to load the lean binary (no checkpoint readers), or leave it out.", "checkpoints");
    }
    source = sourceOf({ wasmUrl, wasmBinary, wasmPaths }, node);
  } catch (err) {
    return Promise.reject(err);
  }
  if (loaded !== undefined) return sameLoad(source, threads, askedThreads, checkpoints);
  source ??= defaultSource(node);
  // a located load (wasmPaths, the default) picks its binary; a wasmUrl or wasmBinary is one single-thread binary
  const located = source.locate !== undefined;
  const plan = { threads: located ? threads : 1, lean: located && checkpoints === false && threads === 1, fma: located && hasRelaxedSimd() };
  const entry = { kind: source.kind, key: source.key, label: source.label, done: false, threads: plan.threads, lean: plan.lean };
  entry.promise = createCore(source, plan, node).then(
    (core) => {
      entry.done = true;
      const lab = makeLab(core);
      entry.lean = !lab.hasCheckpoints;  // what loaded (a lean load may have fallen back to the full binary)
      return lab;
    },
    (err) => {
      if (loaded === entry) loaded = undefined;
      throw isAttentionError(err) ? err : loadError("internal", `the WebAssembly core could not start (${errorText(err)})`, "Please report this with the browser or Node version.");
    },
  );
  loaded = entry;
  return entry.promise;
}
