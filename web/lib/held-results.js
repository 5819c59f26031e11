// What the library's results hold in WebAssembly memory, one ledger per core: lazy traces, modules and
// KV caches (generators, checkpoint files and GPT-2 models are released the same way but hold a few KB
// between calls, so they are not counted). The garbage collector sees only their small JS objects, not the heap
// behind them, so it may leave dropped results uncollected for a long time, and a FinalizationRegistry's
// callbacks run only in a later task: never inside a loop of synchronous runs. Hence, in order:
//   1. dispose() releases a result at once;
//   2. the registry releases a collected one, in a later task;
//   3. a call that finds the heap full first releases every result the collector has already found
//      unreachable (its WeakRef no longer derefs: no need to wait for the registry) and tries again once;
//   4. if the heap is still full and results are alive, the call throws "results_not_released",
//      naming them and how to release them, instead of blaming its own size (too_large).
// The ledger holds each result by a WeakRef only: it never keeps one alive.

/** Codes a core call gives when its allocation failed (the heap could not grow), or over the budget (too_large). */
const HEAP_CODES = new Set(["too_large", "out_of_memory"]);

/** What each kind is called in a message, and the call that releases it. */
const KINDS = {
  trace: { one: "lazy trace", many: "lazy traces", release: "trace.dispose()" },
  module: { one: "module", many: "modules", release: "module.dispose()" },
  cache: { one: "KV cache", many: "KV caches", release: "cache.dispose()" },
};

/** Releases a collected result's handle, unless dispose() or a sweep did already. */
const registry = new FinalizationRegistry((entry) => entry.ledger.forget(entry));

/** Whole MiB with thousands separators ("3,844"). */
function mib(bytes) {
  return String(Math.round(bytes / 1048576)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

class HeldResults {
  #core;
  /** handle -> {ledger, handle, kind, bytes, ref (WeakRef of the result), released} */
  #live = new Map();
  constructor(core) {
    this.#core = core;
  }

  /**
   * Registers `owner` (the JS object of a result under `handle`): released when collected. `kind`: one of
   * KINDS (counted in the ledger) or null (a generator, a checkpoint file: only released). `bytes`: what it
   * holds, a number or a function of the owner (a KV cache grows).
   */
  hold(owner, handle, kind = null, bytes = 0) {
    const entry = { ledger: this, handle, kind, bytes, ref: kind ? new WeakRef(owner) : null, released: false };
    if (kind) this.#live.set(handle, entry);
    registry.register(owner, entry, owner);
  }

  /** dispose(): releases `owner`'s handle now (a second call does nothing). */
  release(owner, handle) {
    registry.unregister(owner);
    this.forget(this.#live.get(handle) ?? { handle, released: false });
  }

  /** @internal releases an entry's handle once and drops it from the ledger. */
  forget(entry) {
    this.#live.delete(entry.handle);
    if (entry.released) return;
    entry.released = true;
    this.#core.release(entry.handle);
  }

  /** Releases every result the collector found unreachable but the registry has not released yet; how many. */
  sweep() {
    let n = 0;
    for (const entry of [...this.#live.values()]) {
      if (entry.ref.deref() !== undefined) continue;
      this.forget(entry);
      n += 1;
    }
    return n;
  }

  /** The results alive now: {count, bytes, kinds: [{kind, count, bytes}]}, the kinds holding the most first. */
  summary() {
    const kinds = new Map();
    for (const entry of this.#live.values()) {
      const owner = entry.ref.deref();
      if (owner === undefined) continue;
      const k = kinds.get(entry.kind) ?? { kind: entry.kind, count: 0, bytes: 0 };
      k.count += 1;
      k.bytes += typeof entry.bytes === "function" ? entry.bytes(owner) : entry.bytes;
      kinds.set(entry.kind, k);
    }
    const list = [...kinds.values()].sort((a, b) => b.bytes - a.bytes);
    return { count: list.reduce((s, k) => s + k.count, 0), bytes: list.reduce((s, k) => s + k.bytes, 0), kinds: list };
  }

  /**
   * Runs `call` (a raw core call: {ok, error, value}). When it fails for lack of heap, releases the
   * results already collected and calls once more; when it still fails, results are alive and `need()`
   * ({bytes, budget}: the call's own estimate) is within the budget, the failure is theirs: the result is
   * then a "results_not_released" error naming them. `what`: the call, as a message names it ("this run").
   */
  attempt(call, need, what) {
    let r = call();
    if (r.ok || !HEAP_CODES.has(r.error.code) || this.#live.size === 0) return r;
    if (this.sweep() > 0) {
      r = call();
      if (r.ok || !HEAP_CODES.has(r.error.code)) return r;
    }
    const held = this.summary();
    let estimate = null;
    try {
      estimate = need();
    } catch {
      // a call whose own estimate fails is refused for its own reason
    }
    if (held.count === 0 || !estimate || !(estimate.bytes <= estimate.budget)) return r;
    return { ok: false, error: notReleased(held, estimate, what) };
  }
}

/** The "results_not_released" error of a call that needs `estimate.bytes` while `held` fill the heap. */
function notReleased(held, estimate, what) {
  const list = held.kinds.map((k) => `${k.count} ${k.count === 1 ? KINDS[k.kind].one : KINDS[k.kind].many}: ${mib(k.bytes)} MiB`).join("; ");
  const calls = held.kinds.map((k) => KINDS[k.kind].release).join(", ");
  return {
    code: "results_not_released",
    slot: held.kinds[0].kind,
    message: `${what} needs about ${mib(estimate.bytes)} MiB, and the WebAssembly heap is full: ${held.count} ${held.count === 1 ? "result" : "results"} not released hold ${mib(held.bytes)} MiB of it (${list})`,
    hint: `Call dispose() on the results you are done with (${calls}), or drop them: a dropped result is freed once the garbage collector finds it, which can be long after its memory is needed (a loop of runs should dispose each one). ${what[0].toUpperCase()}${what.slice(1)} alone is within the ${mib(estimate.budget)} MiB budget.`,
  };
}

const ledgers = new WeakMap();

/** The ledger of `core`'s results (one per core). */
export function heldResults(core) {
  let ledger = ledgers.get(core);
  if (!ledger) ledgers.set(core, (ledger = new HeldResults(core)));
  return ledger;
}
