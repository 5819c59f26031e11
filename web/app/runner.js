// Runs a traced forward pass: small ones at once on the main thread (book sizes take a few ms; their
// whole trace, a few KB, is copied out), large ones in a module Web Worker (run-worker.js) so the page
// stays responsive. A large run's trace is lazy (trace: "lazy"): its stages stay in WASM memory where
// the run was made, and the page asks it for what it draws (stage-source.js). From the worker, the
// first draw's answers come back with the run (the page lists them: firstDraw) and any other view
// (another head, an export) is a message; where no worker can run (no Worker, no workerUrl) a large
// run is lazy on the main thread, each view a call into the core. The trace is released with the next run. Where a
// run goes follows the core's memory estimate of it (the Setup of the edit). The same worker also reads GPT-2 checkpoints for the checkpoint panel
// (request(), checkpoint-load.js) in a second instance of it: cancelling a traced run ends the runs'
// worker (its one synchronous call cannot be interrupted otherwise), and must not end a whole-model run
// or a generation in flight with it. What the runs' worker holds is on the page's ledger (page-memory.js):
// a warm-up reserves a run's heap only while the widget is in view, within the page's bound.
import { S } from "./strings.js";
import { pageMemory } from "./page-memory.js";
import { askTrace } from "./stage-source.js";
import { screenDensity } from "./slice-view.js";
import { startWorker, workerRefusal } from "./worker-url.js";

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
    /** The last run's lazy trace on this thread (released by the next run), or null. */
    this.trace = null;
    /** The worker that holds the last big run's trace (the runs' worker, or one retired after a very large run). */
    this.traceWorker = null;
    /** Trace queries in flight, by id: {resolve, reject}. */
    this.queries = new Map();
    /** What the runs' worker runs on once it has loaded ({threads, kernel}: its lab's), else null. */
    this.workerInfo = null;
    /** Called when workerInfo arrives (the app renders again). */
    this.onWorkerInfo = () => {};
    /** Whether the widget is in view (LabApp sets it): only then does a warm-up start the worker. */
    this.visible = true;
    /** Bytes the runs' worker has reserved ahead of a run (its answer to a warm-up), 0 until then. */
    this.reserved = 0;
    /**
     * Why the page refuses the widget's Worker (AttentionError "trusted_types", worker-url.js), else null:
     * then every run and file works on this thread, as where there is no Worker.
     */
    this.blocked = this.workerUrl && typeof Worker === "function" ? workerRefusal() : null;
    /** Called when a Worker is refused at its start (the element tells the host page: load-error). */
    this.onBlocked = () => {};
  }

  /** True when the runs' worker holds nothing the reader sees (no trace, no run) and the widget is out of view: the page may end it. */
  get idle() {
    return this.worker !== null && !this.visible && this.pending === null && this.traceWorker === null && this.queries.size === 0;
  }

  /** True when this page can run work in a module Worker. */
  get hasWorker() {
    return Boolean(this.workerUrl) && typeof Worker === "function" && this.blocked === null;
  }

  usesWorker(bytes) {
    return this.hasWorker && bytes > WORKER_BYTES;
  }

  get busy() {
    return this.pending !== null;
  }

  /**
   * {className, config, x, seed, training} -> {output, trace, warnings}, by one lab.run (one call into
   * the core) here or in the worker; AttentionError-like objects on failure. The trace's stages are
   * lazy ({id, title, formula, axes, shape, summary, sliceSummaries, first, ask}: stage-source.js
   * reads them), released by the next run. `bytes`: the Setup's memory estimate of this run
   * (app.derived.memory), which picks where it runs; `firstDraw(stages)`: the queries of the page's first
   * draw of a trace, answered with a run in the worker.
   */
  async run(job, { bytes, firstDraw = () => [] }) {
    if (!this.usesWorker(bytes) && bytes <= WORKER_BYTES) {
      // A small run: its whole trace is a few KB, copied out at once (one call into the core).
      const r = this.lab.run(job.className, job.config, job.x, { seed: job.seed, training: job.training, trace: true });
      this.release();
      return { output: r.output, trace: r.trace, warnings: r.warnings };
    }
    if (!this.usesWorker(bytes)) {
      // A large run where no worker can run it: lazy on this thread, each view one call into the core.
      const r = this.lab.run(job.className, job.config, job.x, { seed: job.seed, training: job.training, trace: "lazy" });
      this.release();
      this.trace = r.trace;
      // (a card of this run still up after the next run released the trace reads nothing more)
      const ask = (q) => {
        if (r.trace.disposed) return Promise.reject({ code: "disposed", slot: "trace", message: "this trace was released", hint: "" });
        return askTrace(r.trace, q);
      };
      return { output: r.output, trace: r.trace.stages.map((s) => ({ ...s, ask })), warnings: r.warnings };
    }
    // The worker replaces its trace with the run's; the last run's cards stay up (stale) until the new
    // ones are drawn, and what they ask meanwhile is refused (they draw nothing more).
    this.release();
    // Off the page (a timer's run after the widget was removed): no worker starts that nothing would end.
    if (this.closed) throw cancelled();
    const worker = this.ensureWorker();
    if (!worker) return this.run(job, { bytes, firstDraw }); // the page refused the Worker: this thread runs it
    const taken = this.workerBytes(job.className, job.config, job.x.shape);
    if (taken) pageMemory.took(this, taken.bytes, taken.budget);  // the run reserves its heap in the worker first
    const id = this.nextId++;
    const facts = await new Promise((resolve, reject) => {
      this.pending = { id, resolve, reject };
      // `density`: the worker lists the first draw's queries (tensor-view.js's firstDraw) at this screen's density
      worker.postMessage({ id, ...job, x: { shape: job.x.shape, data: job.x.data }, density: screenDensity() });
    });
    this.traceWorker = worker;
    this.traceRun = id;
    // The first draw's answers, in the run's own message (else in one round trip): the page draws them
    // at once from the cache.
    const ask = this.askWorker(worker);
    const answers = new Map();
    const first = facts.first?.queries ?? firstDraw(facts.trace);
    const given = facts.first?.answers ?? (first.length ? await this.query(worker, first) : []);
    first.forEach((q, i) => answers.set(queryKey(q), given[i]));
    const stages = facts.trace.map((s) => ({ ...s, ask: (q) => (answers.has(queryKey(q)) ? answers.get(queryKey(q)) : ask(q)) }));
    // The worker keeps the trace until the next run, which releases it first and reuses the heap it
    // grew (a fresh worker would grow its heap again: ~0.3 s for GPT-2 small on 1024 tokens).
    return { output: facts.output, trace: stages, warnings: facts.warnings };
  }

  /** A trace query to the worker that holds the trace: a Promise of its answer. */
  askWorker(worker) {
    return (q) => this.query(worker, [q]).then((a) => a[0]);
  }

  /** Queries of the trace in `worker`, answered together: a Promise of their answers, in order. */
  query(worker, queries) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (worker !== this.traceWorker) {
        reject({ code: "disposed", slot: "trace", message: "this trace was released", hint: "" });
        return;
      }
      this.queries.set(id, { resolve, reject });
      worker.postMessage({ id, run: this.traceRun, queries });
    });
  }

  /**
   * Releases the last run's trace: on this thread, disposed; in a worker, the next run there replaces it,
   * and a worker retired after a very large run ends (its heap with it).
   */
  release() {
    this.trace?.dispose();
    this.trace = null;
    if (this.traceWorker && this.traceWorker !== this.worker) this.traceWorker.terminate();
    this.traceWorker = null;
    for (const q of this.queries.values()) q.reject({ code: "disposed", slot: "trace", message: "this trace was released", hint: "" });
    this.queries.clear();
  }

  /**
   * Starts the worker ahead of a run that will need it, once the widget is in view: it loads the library
   * and warms up on a small forward of `setup` ({className, config, inputShape}, a valid config), if
   * given, then takes the heap the run of inputShape will need (lab.reserveMemory) if the page's ledger
   * has room for it within the core's budget; else it reserves nothing (the run grows the heap itself).
   */
  warm(setup = null) {
    if (this.closed || this.worker || !this.visible || !this.hasWorker) return;
    const worker = this.ensureWorker();
    if (!worker) return;
    const { inputShape, ...rest } = setup ?? {};
    const need = inputShape ? this.workerBytes(rest.className, rest.config, inputShape) : null;
    const reserve = need !== null && pageMemory.reserve(this, need.bytes, need.budget);
    worker.postMessage({ warm: true, ...rest, ...(reserve ? { inputShape } : {}), density: screenDensity() });
  }

  /**
   * What a run in the worker takes from its heap, as its reservation does (the lazy run's estimate),
   * and the core's budget: {bytes, budget}; null for a setup the core cannot estimate (the run says why).
   */
  workerBytes(className, config, shape) {
    try {
      return this.lab.estimateBytes(className, config, shape, { trace: "lazy" });
    } catch {
      return null;
    }
  }

  /**
   * Sends other work to the file worker ({kind, ...payload}; run-worker.js answers each kind).
   * Resolves with the worker's answer, rejects with its {code, slot, message, hint}.
   */
  request(kind, payload, { onProgress, signal } = {}) {
    if (this.closed) return Promise.reject(cancelled());
    const id = this.nextId++;
    const message = { id, kind, ...payload };
    return new Promise((resolve, reject) => {
      const worker = this.ensureFileWorker();
      if (!worker) {
        reject(this.blocked);
        return;
      }
      this.requests.set(id, { message, resolve, reject, onProgress });
      worker.postMessage(message);
      // Cancelling asks the worker to stop that work between its steps (it answers "cancelled").
      signal?.addEventListener("abort", () => this.fileWorker?.postMessage({ cancel: id }), { once: true });
    });
  }

  /** The runs' worker. */
  ensureWorker() {
    if (this.worker) return this.worker;
    this.worker = this.spawn((data) => {
      if (data.info) {
        this.workerInfo = data.info;
        this.onWorkerInfo(data.info);
        return;
      }
      if (data.reserved !== undefined) {
        this.reserved = data.reserved;
        return;
      }
      const q = this.queries.get(data.id);
      if (q) {
        this.queries.delete(data.id);
        if (data.ok) q.resolve(data.answers);
        else q.reject(data.error);
        return;
      }
      const p = this.pending;
      if (!p || data.id !== p.id) return;
      this.pending = null;
      if (data.ok) p.resolve({ output: data.output, trace: data.trace, warnings: data.warnings ?? [], first: data.first ?? null });
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
      if (data.info) return;
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

  /**
   * A module worker of run-worker.js: `onData(message data)`, `onError(AttentionError-like)` when it fails;
   * null when the page's Trusted Types refuse it (then `blocked` says why, and onBlocked hears it once).
   */
  spawn(onData, onError) {
    let worker;
    try {
      worker = startWorker(this.workerUrl);
    } catch (err) {
      if (err?.code !== "trusted_types") throw err;
      this.blocked = err;
      this.onBlocked(err);
      return null;
    }
    worker.addEventListener("message", (e) => onData(e.data));
    worker.addEventListener("error", (e) => onError({ code: "worker", slot: "", message: e.message || S.workerFailed, hint: "" }));
    return worker;
  }

  /** Ends the runs' worker (a cancelled run, the widget closed), and a trace it held; the file worker goes on. */
  dropWorker() {
    if (this.traceWorker && this.traceWorker === this.worker) this.release();
    this.worker?.terminate();
    this.worker = null;
    this.reserved = 0;
    pageMemory.ended(this);
  }

  cancel() {
    const p = this.pending;
    if (!p) return;
    this.pending = null;
    this.dropWorker();
    p.reject(cancelled());
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
    this.release();
    this.dropWorker();
    this.fileWorker?.terminate();
    this.fileWorker = null;
    for (const r of waiting) r.reject(cancelled());
  }

  /** Back on the page: the worker starts again when a run or a warm-up needs it. */
  open() {
    this.closed = false;
  }
}

/** The AttentionError-like object of work stopped by a cancel or by the widget leaving the page. */
function cancelled() {
  return { code: "cancelled", slot: "", message: "cancelled", hint: "" };
}

/** A trace query's cache key: the same query, the same key. */
function queryKey(q) {
  return JSON.stringify([q.stage, q.kind, q.offsets, q.sizes, q.batch, q.head, q.height, q.width]);
}
