// The lazy trace (trace: "lazy"): a traced forward whose stage tensors stay in WASM memory under a
// handle, queried stage by stage (heatmap, slice, data) as the page draws them.
import { heldResults } from "./held-results.js";
import { deepFreeze, plainNumber, plainNumbers, plainString, readOptions, unwrap } from "./inputs.js";
import { AttentionError } from "./values.js";

/**
 * A traced forward whose stage tensors stay in WASM memory (trace: "lazy"): each stage's facts at once
 * (id, title, formula, axes, shape, summary, sliceSummaries, first), its values asked for as they are
 * drawn. Released by dispose() or when garbage-collected.
 */
export class Trace {
  #core;
  #handle;
  static is(v) {
    return v !== null && typeof v === "object" && #handle in v;
  }
  constructor(core, resident) {
    this.#core = core;
    this.#handle = resident.handle;
    heldResults(core).hold(this, resident.handle, "trace", resident.bytes);
    this.stages = deepFreeze(resident.stages);
    this.bytes = resident.bytes;
    Object.freeze(this);
  }
  /** @internal */
  get _handle() {
    if (this.#handle === 0) throw new AttentionError({ code: "disposed", slot: "trace", message: "this trace was disposed", hint: "Run again for a new trace (or keep it until you are done drawing it)." });
    return this.#handle;
  }
  /** True once dispose() ran. */
  get disposed() {
    return this.#handle === 0;
  }
  #id(stage) {
    const id = plainString(stage);
    return id === null ? `<${typeof stage}>` : id;
  }
  /** The indices before a stage's last two axes: [batch, head] of a rank-4 stage, [batch] of rank 3, none below. */
  #leading(id, batch, head) {
    const s = this.stages.find((x) => x.id === id);
    const nd = s ? s.shape.length : 2;
    const b = plainNumber(batch, 0);
    const h = plainNumber(head, 0);
    return nd >= 4 ? [b, h, ...Array(nd - 4).fill(0)] : nd === 3 ? [b] : [];
  }
  /**
   * One (batch, head) slice of `stage` max-pooled by the core to at most (height, width) cells.
   */
  heatmap(stage, options) {
    const { batch, head, width, height } = readOptions(options, "trace.heatmap");
    const id = this.#id(stage);
    const r = unwrap(this.#core.traceHeatmap(this._handle, id, this.#leading(id, batch, head), plainNumber(height, 512), plainNumber(width, 512)));
    return { stage: id, rows: r.rows, cols: r.cols, height: r.height, width: r.width, values: r.values };
  }
  /** The window of `stage` at `offsets` of `sizes` (one per axis), and each of its rows' sum over the whole last axis. */
  slice(stage, options) {
    const { offsets, sizes } = readOptions(options, "trace.slice");
    const id = this.#id(stage);
    const r = unwrap(this.#core.traceWindow(this._handle, id, plainNumbers(offsets, "offsets"), plainNumbers(sizes, "sizes")));
    return { stage: id, shape: r.window.shape, data: r.window.data, rowSums: r.rowSums };
  }
  /**
   * A copy of the whole of `stage` ({shape, data}); without a stage, every stage as trace: true gives
   * them ({id, title, formula, axes, shape, data, summary, sliceSummaries} each).
   */
  data(stage) {
    if (stage === undefined) {
      return this.stages.map((s) => {
        const { first: _first, ...facts } = s;
        return { ...facts, shape: [...s.shape], data: unwrap(this.#core.traceData(this._handle, s.id)).data };
      });
    }
    const t = unwrap(this.#core.traceData(this._handle, this.#id(stage)));
    return { shape: t.shape, data: t.data };
  }
  /** Frees the trace's WASM memory now (otherwise garbage collection does it); later queries throw `disposed`. */
  dispose() {
    if (this.#handle === 0) return;
    heldResults(this.#core).release(this, this.#handle);
    this.#handle = 0;
  }
}
