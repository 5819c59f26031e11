// A forward split by heads across plain Web Workers: what a page that is not cross-origin isolated
// (no SharedArrayBuffer, so no threads) does with its other cores (issue 21.2). Each Worker holds its
// own single-thread core and a copy of the module's parameters (copied again when module.revision
// changes); a forward sends x to every Worker with its share of the heads (module.headShares: the
// core's rule, whole key/value groups), computes the last share on the calling thread, and joins them
// with module.projectHeads. The output has the bits of module.forward, at any number of Workers.
// Where the heads cannot split (a single-head class, dropout acting in training, no Worker, a module of
// a lean lab, whose binary has no head split) it is module.forward on the calling thread.
import { AttentionError } from "./attention-lab.js";
import { unknownOption } from "./options.js";
import { isTrustedTypesRefusal } from "./values.js";

/** The most Workers the default starts (each holds a whole core and a copy of the parameters). */
const DEFAULT_MAX_WORKERS = 3;

/**
 * Whether this context can start Web Workers (Node has none: the Worker the threaded core's glue may
 * define there is worker_threads', an EventEmitter, and Node runs threads anyway).
 */
function hasWebWorker() {
  return typeof Worker === "function" && typeof Worker.prototype?.addEventListener === "function";
}

/** Workers beside the calling thread by default: the cores less one, 1 to 3; 0 where there is no Web Worker. */
function defaultWorkers() {
  if (!hasWebWorker()) return 0;
  const cores = Number(globalThis.navigator?.hardwareConcurrency) || 2;
  return Math.max(1, Math.min(DEFAULT_MAX_WORKERS, cores - 1));
}

/**
 * An options argument of `where` (createHeadSplit, split.forward) as a plain object: {} for none;
 * AttentionError "bad_options" when it is not an object, "unknown_option" (with the nearest name) for
 * a name it has no option of.
 */
function readOptions(options, where) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") throw new AttentionError({ code: "bad_options", slot: where, message: `the options of ${where} must be an object, got ${typeof options}`, hint: "Pass an object such as {workers: 1}, or nothing." });
  const plain = { ...options };
  const unknown = unknownOption(where, Object.keys(plain));
  if (unknown !== null) throw new AttentionError(unknown);
  return plain;
}

/** x as plain {shape, data} (read once here: the Workers and the core get the same values). */
function plainTensor(x) {
  if (x === null || typeof x !== "object") return x;
  const shape = Array.isArray(x.shape) ? x.shape.map(Number) : x.shape;
  const data = x.data instanceof Float32Array ? x.data.slice() : ArrayBuffer.isView(x.data) || Array.isArray(x.data) ? Float32Array.from(x.data) : x.data;
  return { shape, data };
}

/** One Worker (`start()` makes it): its pending requests and the module revisions it holds a copy of. */
class ShareWorker {
  constructor(start) {
    this.worker = start();
    this.pending = new Map();
    this.nextId = 1;
    this.copies = new WeakMap();  // module -> {key, revision}
    // a module garbage-collected here frees its copy there
    this.released = new FinalizationRegistry((key) => this.worker.postMessage({ release: key }));
    this.worker.addEventListener("message", (e) => {
      const p = this.pending.get(e.data.id);
      if (!p) return;
      this.pending.delete(e.data.id);
      if (e.data.ok) p.resolve(e.data.value);
      else p.reject(new AttentionError(e.data.error));
    });
    this.worker.addEventListener("error", (e) => {
      e.preventDefault?.();
      const error = new AttentionError({ code: "worker_failed", slot: "workers", message: `a head-split Worker failed: ${e.message || "it did not load"}`, hint: "Check that the page may start module Workers from the library's folder (CSP worker-src), or use {workers: 0}." });
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    });
  }

  ask(message, transfer = []) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, ...message }, transfer);
    });
  }

  /** Makes sure this Worker holds `module`'s current parameters (`read` copies them out once per forward). */
  async hold(module, read) {
    const revision = module.revision;
    let copy = this.copies.get(module);
    if (copy && copy.revision === revision) return copy.key;
    const key = copy?.key ?? `m${this.nextId}`;
    if (!copy) this.released.register(module, key);
    copy = { key, revision, ready: this.ask({ hold: { key, className: module.className, config: { ...module.config }, parameters: read() } }) };
    this.copies.set(module, copy);
    try {
      await copy.ready;
    } catch (err) {
      this.copies.delete(module);
      throw err;
    }
    return key;
  }
}

export class HeadSplit {
  #workers;
  #closed = false;

  /** @param {number} workers Workers beside the calling thread. @param {() => Worker} start makes one of them */
  constructor(workers, start) {
    this.#workers = Array.from({ length: workers }, () => new ShareWorker(start));
  }

  /** Workers beside the calling thread (0: every forward runs whole, on the calling thread). */
  get workers() {
    return this.#workers.length;
  }

  /**
   * module.forward(x, {training}) split by heads: {output, warnings?} with forward's bits. `x`
   * (b, num_tokens, d_in) row-major; untraced, no cache. Errors: forward's (AttentionError), worker_failed
   * (a Worker could not start), disposed (after dispose()).
   */
  async forward(module, x, options) {
    if (this.#closed) throw new AttentionError({ code: "disposed", slot: "workers", message: "this head split was disposed", hint: "Make a new one with createHeadSplit()." });
    const { training = true } = readOptions(options, "split.forward");
    let shares;
    try {
      shares = module.headShares(this.#workers.length + 1, { training });
    } catch (err) {
      if (err?.code !== "no_head_split") throw err;
      shares = [];  // a lean lab (the page's main-thread binary): the whole forward here
    }
    if (shares.length <= 1) return module.forward(x, { training });
    const input = plainTensor(x);
    let parameters = null;
    const read = () => (parameters ??= module.parameters());
    const helpers = this.#workers.slice(0, shares.length - 1);
    const keys = await Promise.all(helpers.map((w) => w.hold(module, read)));
    const asked = helpers.map((w, i) => w.ask({ share: shares[i], key: keys[i], x: input, training }));
    let own;
    try {
      own = module.forwardShare(input, shares[shares.length - 1], { training });
    } catch (err) {
      await Promise.allSettled(asked);
      throw err;
    }
    const parts = await Promise.all(asked);
    return module.projectHeads(input, [...parts, own], { training });
  }

  /** Ends the Workers (pending forwards reject with disposed). */
  dispose() {
    if (this.#closed) return;
    this.#closed = true;
    const error = new AttentionError({ code: "disposed", slot: "workers", message: "this head split was disposed", hint: "" });
    for (const w of this.#workers) {
      w.worker.terminate();
      for (const p of w.pending.values()) p.reject(error);
      w.pending.clear();
    }
  }
}

/**
 * A head split over `workers` plain Workers beside the calling thread (default: the cores less one, at
 * most 3; 0 where there is no Worker). `workerUrl`: head-split-worker.js (default: beside this file).
 * Errors: bad_options (workers not a whole number from 0 to 15), unknown_option (a name it has not).
 */
export function createHeadSplit(options) {
  const { workers, workerUrl } = readOptions(options, "createHeadSplit");
  const count = workers ?? defaultWorkers();
  if (!(Number.isInteger(count) && count >= 0 && count <= 15)) {
    throw new AttentionError({ code: "bad_options", slot: "workers", message: `workers must be a whole number from 0 to 15, got ${String(workers)}`, hint: "Leave it out for the cores less one, or pass e.g. {workers: 1}." });
  }
  if (count > 0 && !hasWebWorker()) {
    throw new AttentionError({ code: "bad_options", slot: "workers", message: "this context has no Worker, so the heads cannot split across Workers", hint: "Pass {workers: 0}, or leave workers out." });
  }
  if (workerUrl !== undefined && workerUrl !== null) return new HeadSplit(count, trusted(() => new Worker(workerUrl, { type: "module" })));
  // The default as the literal pattern bundlers follow (webpack 5, Vite): they bundle the Worker with
  // the library and its .wasm, and give its URL.
  return new HeadSplit(count, trusted(() => new Worker(new URL("./head-split-worker.js", import.meta.url), { type: "module" })));
}

/**
 * `start` with a page's Trusted Types refusal (require-trusted-types-for 'script': a Worker's script
 * URL must be a TrustedScriptURL, which a plain URL is not) as AttentionError "trusted_types" saying
 * what to pass. The library makes no policy of its own: one that passed any URL would undo the page's.
 */
function trusted(start) {
  return () => {
    try {
      return start();
    } catch (err) {
      if (!isTrustedTypesRefusal(err)) throw err;
      throw new AttentionError({ code: "trusted_types", slot: "workerUrl", message: "this page requires Trusted Types, and a head split's Worker cannot start from a plain URL", hint: "Pass createHeadSplit({workerUrl}) a TrustedScriptURL of head-split-worker.js made by a policy your page allows, e.g. trustedTypes.createPolicy(\"my-app\", {createScriptURL: (url) => url}).createScriptURL(url); or {workers: 0} to run every forward on the calling thread." });
    }
  };
}
