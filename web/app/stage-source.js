// Where the page reads a stage's values: from the values themselves (an eager trace, a stage the page
// makes), from a lazy trace on this thread (each query one synchronous call into the core), or from a
// lazy trace kept in the run worker (each query a message; the first draw's answers come with the
// run). The core computes what a lazy source gives (heatmaps max-pooled to the pixels they fill, a
// table's window and its row sums); the eager source gives the same values computed here.
// A reader returns its answer, or for the worker a Promise of it: when(v, f) takes either.

/** f(v) now when v is a value, or once it resolves when v is a Promise (the worker's answers). */
export function when(v, f) {
  return v instanceof Promise ? v.then(f) : f(v);
}

/**
 * when(v, f) for what the page draws: a value that cannot be read any more (a trace released by a
 * newer run while its cards were still up) draws nothing rather than raising.
 */
export function draw(v, f) {
  if (!(v instanceof Promise)) return f(v);
  return v.then(f).catch(() => undefined);
}

/** The rows and columns of a stage's slices (its last two axes; a rank-1 stage is one row). */
function sliceDims(shape) {
  const nd = shape.length;
  return [nd >= 2 ? shape[nd - 2] : 1, nd >= 1 ? shape[nd - 1] : 1];
}

/** {batch, head} of the slice at flat `offset` (a multiple of rows x cols). */
function indicesOf(shape, offset) {
  const [rows, cols] = sliceDims(shape);
  const i = rows * cols > 0 ? offset / (rows * cols) : 0;
  if (shape.length >= 4) return { batch: Math.floor(i / shape[1]), head: i % shape[1] };
  return { batch: shape.length === 3 ? i : 0, head: 0 };
}

/** The window query of a table: offsets and sizes per axis for `shownRows` x `shownCols` of the slice at `offset`. */
function windowOf(shape, offset, shownRows, shownCols) {
  const { batch, head } = indicesOf(shape, offset);
  const nd = shape.length;
  if (nd === 0) return { offsets: [], sizes: [] };
  if (nd === 1) return { offsets: [0], sizes: [shownCols] };
  const lead = nd >= 4 ? [batch, head, ...Array(nd - 4).fill(0)] : nd === 3 ? [batch] : [];
  return { offsets: [...lead, 0, 0], sizes: [...lead.map(() => 1), shownRows, shownCols] };
}

/** Max-pools the (rows, cols) slice at `offset` of `data` to (height, width): the core's rule (max_pool), here for eager stages. */
export function maxPool(data, offset, rows, cols, height, width) {
  const out = new Float32Array(height * width);
  for (let y = 0; y < height; y++) {
    const r0 = Math.floor((y * rows) / height);
    const r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / height));
    for (let x = 0; x < width; x++) {
      const c0 = Math.floor((x * cols) / width);
      const c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / width));
      let best = -Infinity;
      for (let r = r0; r < r1; r++) {
        const base = offset + r * cols;
        for (let c = c0; c < c1; c++) {
          const v = data[base + c];
          if (v > best) best = v;
        }
      }
      out[y * width + x] = best;
    }
  }
  return out;
}

/**
 * The readers of one stage. `table(offset, rows, cols, shownRows, shownCols)` -> {values, rowSums}
 * (the shown window row-major, and each shown row's sum over all `cols`); `pool(offset, rows, cols,
 * height, width)` -> the slice max-pooled; `cells(offset, rows, cols)` -> the whole slice; `data()` ->
 * the whole stage; `first` -> the value at index 0.
 */
function eagerSource(stage) {
  const data = stage.data;
  return {
    first: data[0],
    table(offset, rows, cols, shownRows, shownCols) {
      const values = new Float32Array(shownRows * shownCols);
      const rowSums = [];
      for (let r = 0; r < shownRows; r++) {
        const base = offset + r * cols;
        for (let c = 0; c < shownCols; c++) values[r * shownCols + c] = data[base + c];
        let sum = 0;
        for (let c = 0; c < cols; c++) sum += data[base + c];
        rowSums.push(sum);
      }
      return { values, rowSums };
    },
    pool: (offset, rows, cols, height, width) => maxPool(data, offset, rows, cols, height, width),
    cells: (offset, rows, cols) => data.subarray(offset, offset + rows * cols),
    data: () => data,
  };
}

/** Answers cached by query, so a panel shown twice (a tab, a hover) asks once. */
function cached(ask) {
  const memo = new Map();
  return (key, query) => {
    if (!memo.has(key)) {
      const v = ask(query);
      memo.set(key, v);
      if (v instanceof Promise) v.then((x) => memo.set(key, x), () => memo.delete(key));
    }
    return memo.get(key);
  };
}

/**
 * The readers of a lazy stage through `ask(query)`, where query is {stage, kind, ...}: "window"
 * {offsets, sizes} -> {data, rowSums}, "heatmap" {batch, head, height, width} -> Float32Array, "data" ->
 * Float32Array. `ask` answers at once (a LazyTrace on this thread) or with a Promise (the worker).
 */
function querySource(stage, ask) {
  const memo = cached(ask);
  const windowAt = (offset, shownRows, shownCols) => {
    const q = windowQuery(stage, offset, shownRows, shownCols);
    return memo(`window:${q.offsets}:${q.sizes}`, q);
  };
  return {
    first: stage.first,
    table: (offset, rows, cols, shownRows, shownCols) => when(windowAt(offset, shownRows, shownCols), (r) => ({ values: r.data, rowSums: r.rowSums })),
    pool(offset, rows, cols, height, width) {
      const q = heatmapQuery(stage, offset, height, width);
      return memo(`heatmap:${q.batch}:${q.head}:${height}:${width}`, q);
    },
    cells: (offset, rows, cols) => when(windowAt(offset, rows, cols), (r) => r.data),
    data: () => memo("data", { stage: stage.id, kind: "data" }),
  };
}

/** The query of a table's window: `shownRows` x `shownCols` of the slice at flat `offset`. */
export function windowQuery(stage, offset, shownRows, shownCols) {
  return { stage: stage.id, kind: "window", ...windowOf(stage.shape, offset, shownRows, shownCols) };
}

/** The query of a heatmap: the slice at flat `offset` max-pooled to (height, width). */
export function heatmapQuery(stage, offset, height, width) {
  return { stage: stage.id, kind: "heatmap", ...indicesOf(stage.shape, offset), height, width };
}

/** A LazyTrace's query answered on this thread. */
export function askTrace(trace, q) {
  if (q.kind === "window") return trace.slice(q.stage, { offsets: q.offsets, sizes: q.sizes });
  if (q.kind === "heatmap") return trace.heatmap(q.stage, { batch: q.batch, head: q.head, height: q.height, width: q.width }).values;
  return trace.data(q.stage).data;
}

const sources = new WeakMap();

/** The readers of `stage`: its own (a lazy stage carries `ask`), else over its data. */
export function sourceOf(stage) {
  let s = sources.get(stage);
  if (!s) {
    s = stage.ask ? querySource(stage, stage.ask) : eagerSource(stage);
    sources.set(stage, s);
  }
  return s;
}

/** How many values the stage holds (from its shape: a lazy stage has no data). */
export function numel(stage) {
  return stage.shape.reduce((a, b) => a * b, 1);
}

/** The stage with its data, for an export: at once, or a Promise of it. */
export function withData(stage) {
  return when(sourceOf(stage).data(), (data) => ({ ...stage, data }));
}
