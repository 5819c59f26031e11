// Runs a traced forward pass: small ones at once on the main thread (book sizes take a few ms),
// large ones in a module Web Worker (run-worker.js) so the page stays responsive; the trace comes
// back as transferred Float32Arrays. Where a run goes follows the core's memory estimate of it (the
// Setup of the edit). The same worker also reads GPT-2 checkpoints for the checkpoint panel
// (request(), checkpoint-load.js).
import { S } from "./strings.js";

/** Runs that need more than this run in the worker. */
const WORKER_BYTES = 8 * 1048576;

export class Runner {
  constructor(lab, workerUrl) {
    this.lab = lab;
    this.workerUrl = workerUrl;
    this.worker = null;
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
   * Sends other work to the worker ({kind, ...payload}; run-worker.js answers each kind). Resolves
   * with the worker's answer, rejects with its {code, slot, message, hint}. Work in flight when the
   * worker is dropped (a cancelled or very large run) is sent again to the next worker.
   */
  request(kind, payload, { onProgress, signal } = {}) {
    const id = this.nextId++;
    const message = { id, kind, ...payload };
    return new Promise((resolve, reject) => {
      this.requests.set(id, { message, resolve, reject, onProgress });
      this.ensureWorker().postMessage(message);
      // Cancelling asks the worker to stop that work between its steps (it answers "cancelled").
      signal?.addEventListener("abort", () => this.worker?.postMessage({ cancel: id }), { once: true });
    });
  }

  ensureWorker() {
    if (this.worker) return this.worker;
    const worker = new Worker(this.workerUrl, { type: "module" });
    worker.addEventListener("message", (e) => {
      const r = this.requests.get(e.data.id);
      if (r && e.data.progress) {
        r.onProgress?.(e.data.progress);
        return;
      }
      if (r) {
        this.requests.delete(e.data.id);
        if (e.data.ok) r.resolve(e.data);
        else r.reject(e.data.error);
        return;
      }
      const p = this.pending;
      if (!p || e.data.id !== p.id) return;
      this.pending = null;
      if (e.data.ok) p.resolve({ output: e.data.output, trace: e.data.trace, warnings: e.data.warnings ?? [] });
      else p.reject(e.data.error);
    });
    worker.addEventListener("error", (e) => {
      const error = { code: "worker", slot: "", message: e.message || S.workerFailed, hint: "" };
      const waiting = [this.pending, ...this.requests.values()];
      this.pending = null;
      this.requests.clear();
      this.dropWorker();
      for (const w of waiting) w?.reject(error);
    });
    this.worker = worker;
    return worker;
  }

  dropWorker() {
    this.worker?.terminate();
    this.worker = null;
    if (this.requests.size === 0 || this.closed) return;
    const worker = this.ensureWorker();
    for (const r of this.requests.values()) worker.postMessage(r.message);
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
    for (const r of waiting) r.reject({ code: "cancelled", slot: "", message: "cancelled", hint: "" });
  }

  /** Back on the page: the worker starts again when a run or a warm-up needs it. */
  open() {
    this.closed = false;
  }
}
