// What the run workers of every <attention-lab> on a page hold, in one ledger (one instance of this
// module per document): the WebAssembly heap each worker reserved ahead of a run (its warm-up, once the
// widget is in view) or took for a run. A worker's heap never shrinks: it holds the most it ever took
// until it ends. Reservations ahead of a run are bounded for the whole page by the core's one memory
// budget: over it, the workers of widgets out of view that hold nothing the reader sees (no trace, no
// run in flight) end first, oldest first; if that is not room enough, the warm-up reserves nothing and
// the run grows the heap itself when it comes. A run the reader starts is never refused here.
//
// A runner (runner.js) is what the ledger knows of a widget: `idle` (its worker holds nothing the reader
// sees, and the widget is out of view) and `dropWorker()` (ends its worker, which calls ended()).

export class PageMemory {
  /** runner -> bytes its worker holds; in order of their last claim, oldest first. */
  #held = new Map();

  /** Bytes the page's run workers hold, all together. */
  get total() {
    let sum = 0;
    for (const bytes of this.#held.values()) sum += bytes;
    return sum;
  }

  /** Bytes `runner`'s worker holds (0 without one). */
  heldBy(runner) {
    return this.#held.get(runner) ?? 0;
  }

  /** How many runners' workers hold heap now. */
  get workers() {
    return this.#held.size;
  }

  /**
   * A warm-up of `runner` would reserve `bytes`: whether it may within `budget` (the core's). Ends idle
   * workers out of view, oldest first, until the page's total with this claim fits; records the claim
   * when it does.
   */
  reserve(runner, bytes, budget) {
    this.#makeRoom(runner, bytes, budget);
    if (this.#after(runner, bytes) > budget) return false;
    this.#claim(runner, bytes);
    return true;
  }

  /** A run of `bytes` in `runner`'s worker (the reader asked: never refused): room is made as for reserve, then it is recorded. */
  took(runner, bytes, budget) {
    this.#makeRoom(runner, bytes, budget);
    this.#claim(runner, bytes);
  }

  /** `runner`'s worker ended (its heap with it). */
  ended(runner) {
    this.#held.delete(runner);
  }

  /** The page's total once `runner` holds `bytes` (its worker keeps the larger of what it holds and that). */
  #after(runner, bytes) {
    return this.total - this.heldBy(runner) + Math.max(this.heldBy(runner), bytes);
  }

  #claim(runner, bytes) {
    const held = Math.max(this.heldBy(runner), bytes);
    this.#held.delete(runner);  // to the end: the latest claim
    this.#held.set(runner, held);
  }

  #makeRoom(runner, bytes, budget) {
    for (const other of [...this.#held.keys()]) {
      if (this.#after(runner, bytes) <= budget) return;
      if (other === runner || !other.idle) continue;
      other.dropWorker();
      this.#held.delete(other);
    }
  }
}

/** The page's one ledger. */
export const pageMemory = new PageMemory();
