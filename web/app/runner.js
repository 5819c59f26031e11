// Runs a traced forward pass: small ones at once on the main thread (book sizes take a few ms),
// large ones in a module Web Worker (run-worker.js) so the page stays responsive; the trace comes
// back as transferred Float32Arrays. Where a run goes follows the core's memory estimate of it (the
// Setup of the edit). The same worker also reads GPT-2 checkpoints for the checkpoint panel
// (request(), checkpoint-load.js) in a second instance of it: cancelling a traced run ends the runs'
// worker (its one synchronous call cannot be interrupted otherwise), and must not end a whole-model run
// or a generation in flight with it.
import { S } from "./strings.js";

/** Runs that need more than this run in the worker. */
const WORKER_BYTES = 8 * 1048576;

export class Runner {
  constructor(lab, workerUrl) {
    this.lab = lab;
    this.workerUrl = workerUrl;
    this.worker = null;
    /** The worker of request() (the checkpoint panel's file work): never dropped by a cancelled run. */
    this.fileWorker = null;
    this.pending = null;
    /** Other work in the worker, by id: {message, resolve, reject}. */
    this.requests = new Map();
    this.nextId = 1;
    this.closed = false;
  }

  /** True when this page can run work in a module Worker. */
  get hasWorker() {
    return Boolean(this.workerUrl) && typeof Worker === "function";
  }

  usesWorker(bytes) {
    return this.hasWorker && bytes > WORKER_BYTES;
  }

  get busy() {
    return this.pending !== null;
  }

  /**
   * {className, config, x, seed, training} -> {output, trace, warnings}, by one lab.run (one call into
   * the core) here or in the worker; AttentionError-like objects on failure. `bytes`: the Setup's
   * memory estimate of this run (app.derived.memory), which picks where it runs; `fullConfig`: the
   * Setup's config (defaults filled in), for the worker's warm-up after a big run.
   */
  async run(job, { bytes, fullConfig }) {
    if (!this.usesWorker(bytes)) {
      const r = this.lab.run(job.className, job.config, job.x, { seed: job.seed, training: job.training, trace: true });
      return { output: r.output, trace: r.trace, warnings: r.warnings };
    }
    const worker = this.ensureWorker();
    const id = this.nextId++;
    const result = await new Promise((resolve, reject) => {
      this.pending = { id, resolve, reject };
      worker.postMessage({ id, ...job, x: { shape: job.x.shape, data: job.x.data } });
    });
    // A big run leaves a big WASM heap behind in the worker: let it go, and start a fresh one for the
    // next run (the reader usually runs again).
    if (bytes > 256 * 1048576) {
      this.dropWorker();
      this.warm({ className: job.className, config: fullConfig });
    }
    return result;
  }

  /**
   * Starts the worker ahead of a run that will need it: it loads the library and warms up on a small
   * forward of `setup` ({className, config}, a valid config), if given.
   */
  warm(setup = null) {
    if (this.closed || this.worker || !this.workerUrl || typeof Worker !== "function") return;
    this.ensureWorker().postMessage({ warm: true, ...(setup ?? {}) });
  }

  /**
   * Sends other work to the file worker ({kind, ...payload}; run-worker.js answers each kind).
   * Resolves with the worker's answer, rejects with its {code, slot, message, hint}.
   */
  request(kind, payload, { onProgress, signal } = {}) {
    const id = this.nextId++;
    const message = { id, kind, ...payload };
    return new Promise((resolve, reject) => {
      this.requests.set(id, { message, resolve, reject, onProgress });
      this.ensureFileWorker().postMessage(message);
      // Cancelling asks the worker to stop that work between its steps (it answers "cancelled").
      signal?.addEventListener("abort", () => this.fileWorker?.postMessage({ cancel: id }), { once: true });
    });
  }

  /** The runs' worker. */
  ensureWorker() {
    if (this.worker) return this.worker;
    this.worker = this.spawn((data) => {
      const p = this.pending;
      if (!p || data.id !== p.id) return;
      this.pending = null;
      if (data.ok) p.resolve({ output: data.output, trace: data.trace, warnings: data.warnings ?? [] });
      else p.reject(data.error);
    }, (error) => {
      const p = this.pending;
      this.pending = null;
      this.dropWorker();
      p?.reject(error);
    });
    return this.worker;
  }

  /** The file work's worker. */
  ensureFileWorker() {
    if (this.fileWorker) return this.fileWorker;
    this.fileWorker = this.spawn((data) => {
      const r = this.requests.get(data.id);
      if (!r) return;
      if (data.progress) {
        r.onProgress?.(data.progress);
        return;
      }
      this.requests.delete(data.id);
      if (data.ok) r.resolve(data);
      else r.reject(data.error);
    }, (error) => {
      const waiting = [...this.requests.values()];
      this.requests.clear();
      this.fileWorker?.terminate();
      this.fileWorker = null;
      for (const w of waiting) w.reject(error);
    });
    return this.fileWorker;
  }

  /** A module worker of run-worker.js: `onData(message data)`, `onError(AttentionError-like)` when it fails. */
  spawn(onData, onError) {
    const worker = new Worker(this.workerUrl, { type: "module" });
    worker.addEventListener("message", (e) => onData(e.data));
    worker.addEventListener("error", (e) => onError({ code: "worker", slot: "", message: e.message || S.workerFailed, hint: "" }));
    return worker;
  }

  /** Ends the runs' worker (a cancelled or very large run); the file worker goes on. */
  dropWorker() {
    this.worker?.terminate();
    this.worker = null;
  }

  cancel() {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    this.dropWorker();
    p.reject({ code: "cancelled", slot: "", message: "cancelled", hint: "" });
  }

  /**
   * The widget left the page: the run in flight is cancelled and the worker ends (its WebAssembly
   * heap with it); nothing warms a new one until open().
   */
  close() {
    this.closed = true;
    const waiting = [...this.requests.values()];
    this.requests.clear();
    this.cancel();
    this.dropWorker();
    this.fileWorker?.terminate();
    this.fileWorker = null;
    for (const r of waiting) r.reject({ code: "cancelled", slot: "", message: "cancelled", hint: "" });
  }

  /** Back on the page: the worker starts again when a run or a warm-up needs it. */
  open() {
    this.closed = false;
  }
}
